"""runs/requirements.py: a task instance runs only on phones that meet its `requires:`; with
no phone able to serve it, it is skipped (said in the manifest, the summary and the report,
in no rate's denominator)."""

from __future__ import annotations

import json
import queue
from pathlib import Path

import pytest

from agent_host.config.builds import Build
from agent_host.config.phones import load_phone_profile
from agent_host.config.requirements import TASK_REQUIREMENTS, PhoneFacts
from agent_host.config.tasks import load_tasks
from agent_host.runs.plan import plan
from agent_host.runs.requirements import schedule, take
from agent_host.runs.run import start_run
from agent_host.runs.store import read_records

ROOT = Path(__file__).resolve().parents[2]
ALL = {r: True for r in TASK_REQUIREMENTS}


def facts(serial: str, **off: bool) -> PhoneFacts:
    return PhoneFacts(serial, met={**ALL, **{k: v for k, v in off.items()}})


def test_an_instance_goes_only_to_phones_that_meet_its_requirements():
    tasks = load_tasks(["sms-send-number", "dark-theme-on", "calendar-where"], variants=("base",))
    planned = plan(["b"], tasks, repeats=2, seed=0)
    sched = schedule(planned, {"a": facts("a", sim_sms=False), "b": facts("b", calendar_account=False)})
    assert sched.planned == planned and sched.skipped == []
    sms = next(p for p in planned if p.task.task_id == "sms-send-number")
    cal = next(p for p in planned if p.task.task_id == "calendar-where")
    dark = next(p for p in planned if p.task.task_id == "dark-theme-on")
    assert (sched.serves("a", sms), sched.serves("b", sms)) == (False, True)
    assert (sched.serves("a", cal), sched.serves("b", cal)) == (True, False)
    assert sched.serves("a", dark) and sched.serves("b", dark)
    assert sched.not_on["a"] == sorted({p.task_key for p in planned if p.task.task_id == "sms-send-number"})


def test_with_no_phone_able_to_serve_it_an_instance_is_skipped_once():
    tasks = load_tasks(["sms-send-number", "dark-theme-on", "call-number"], variants=("base",))
    planned = plan(["x", "y"], tasks, repeats=3, seed=0)
    sched = schedule(planned, {"a": facts("a", sim_sms=False, sim_call=False)})
    assert {p.task.task_id for p in sched.planned} == {"dark-theme-on"}
    assert len(sched.planned) == 2 * 3
    keys = {t.key for t in tasks if t.task_id != "dark-theme-on"}
    assert {s["key"] for s in sched.skipped} == keys and len(sched.skipped) == len(keys)   # once per instance
    assert {tuple(s["missing"]) for s in sched.skipped} == {("sim_sms",), ("sim_call",)}
    assert sched.not_on == {}    # nothing the phone lacks was left for it: it was skipped outright


def test_an_instance_whose_app_no_phone_has_is_skipped():
    """The apps a task opens are derived (its app, steps, solution), resolved through the phone
    profile: a phone without the package is not given the task, and with no such phone it is
    skipped, naming the package."""
    tasks = load_tasks(["markor-append-line", "dark-theme-on"], variants=("base",))
    planned = plan(["b"], tasks, repeats=1, seed=0)
    profile = load_phone_profile("virtual")
    apps = {**profile.apps, "markor": "org.example.markor"}       # this phone's Markor, not installed
    installed = frozenset(profile.apps.values())
    phone = PhoneFacts("a", met=dict(ALL), packages=installed)
    sched = schedule(planned, {"a": phone}, apps=apps)
    assert [p.task.task_id for p in sched.planned] == ["dark-theme-on"]
    assert sched.skipped == [{"key": "markor-append-line", "task_id": "markor-append-line", "variant": "base",
                              "requires": ["app:org.example.markor"],
                              "missing": ["app:org.example.markor"]}]
    assert sched.lines() == ["skipped 1 task instance(s) of 1 task(s), no phone has app:org.example.markor: "
                             "markor-append-line"]
    # the Pixel's package, installed: served
    assert schedule(planned, {"a": phone}).planned == planned


def test_take_leaves_what_this_phone_cannot_serve_for_the_others():
    q: queue.Queue = queue.Queue()
    for item in ["sms1", "plain", "sms2"]:
        q.put(item)
    assert take(q, lambda e: not e.startswith("sms")) == "plain"
    assert take(q, lambda e: not e.startswith("sms")) is None
    assert list(q.queue) == ["sms1", "sms2"]


def oracle(tmp: Path) -> Build:
    script = tmp / "oracle.yaml"
    script.write_text(f"suite: [{ROOT / 'tasks'}]\n")
    return Build(id="oracle", weight_path="scripted", server="policy", script=str(script))


@pytest.mark.slow
def test_a_phone_without_sim_and_calendar_skips_exactly_those_tasks(tmp_path, virtual_phone_factory):
    from agent_host.report.results import analyse
    from agent_host.report.load import load_run

    bare = virtual_phone_factory(sim=False, calendar_account=False)
    ids = ["dark-theme-on", "sms-send-number", "call-number", "calendar-where", "wifi-on"]
    tasks = load_tasks(ids, variants=("base",))
    result = start_run(builds=[oracle(tmp_path)], tasks=tasks, repeats=1, seed=1, phones=[bare.serial],
                       profile=load_phone_profile("virtual"), out=tmp_path / "run")
    records = read_records(result.run_dir / "episodes.jsonl")
    assert {r.task_id for r in records} == {"dark-theme-on", "wifi-on"}          # usb_adb: met
    assert all(r.outcome == "success" for r in records)
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    skipped = {s["task_id"]: s["missing"] for s in manifest["skipped"]}
    assert skipped == {"sms-send-number": ["sim_sms"], "call-number": ["sim_call"],
                       "calendar-where": ["calendar_account"]}
    assert manifest["episodes_planned"] == len(records)
    assert any("no phone has calendar_account" in line for line in result.skipped)
    results = analyse(load_run(result.run_dir)).as_dict()
    assert {row["task"] for row in results["per_task"]} == {"dark-theme-on", "wifi-on"}   # no 0% rows
    assert sum("not run:" in w and "sim_sms" in w for w in results["warnings"]) == 1


@pytest.mark.slow
def test_contacts_tasks_are_skipped_not_failed_on_a_phone_whose_account_syncs_contacts(tmp_path,
                                                                                      virtual_phone_factory):
    synced = virtual_phone_factory(contact_sync=True)
    tasks = load_tasks(["contact-number-lookup", "dark-theme-on"], variants=("base",))
    result = start_run(builds=[oracle(tmp_path)], tasks=tasks, repeats=1, seed=1, phones=[synced.serial],
                       profile=load_phone_profile("virtual"), out=tmp_path / "run")
    records = read_records(result.run_dir / "episodes.jsonl")
    assert [(r.task_id, r.outcome) for r in records] == [("dark-theme-on", "success")]
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert {s["task_id"]: s["missing"] for s in manifest["skipped"]} == {"contact-number-lookup": ["no_contact_sync"]}
    facts = manifest["phone_requirements"][synced.serial]
    assert facts["met"]["no_contact_sync"] is False and "vphone.user@gmail.com" in facts["seen"]["no_contact_sync"]


@pytest.mark.slow
def test_a_profile_whose_markor_package_is_not_installed_skips_the_markor_tasks(tmp_path, virtual_phone_factory):
    profile_file = tmp_path / "elsewhere.yaml"
    profile_file.write_text((ROOT / "device_profiles/phones/virtual.yaml").read_text().replace(
        "id: virtual", "id: elsewhere") + "apps: {markor: org.example.markor}\n")
    phone = virtual_phone_factory()
    tasks = load_tasks(["markor-append-line", "markor-to-contacts", "dark-theme-on"], variants=("base",))
    result = start_run(builds=[oracle(tmp_path)], tasks=tasks, repeats=1, seed=1, phones=[phone.serial],
                       profile=load_phone_profile(profile_file), out=tmp_path / "run")
    records = read_records(result.run_dir / "episodes.jsonl")
    assert [(r.task_id, r.outcome) for r in records] == [("dark-theme-on", "success")]
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    skipped = {s["task_id"]: s["missing"] for s in manifest["skipped"]}
    assert skipped == {"markor-append-line": ["app:org.example.markor"],
                       "markor-to-contacts": ["app:org.example.markor"]}
    seen = manifest["phone_requirements"][phone.serial]["seen"]["apps_installed"]
    assert seen == "not installed: markor (org.example.markor)"


@pytest.mark.slow
def test_a_task_goes_to_the_phone_that_has_what_it_needs(tmp_path, virtual_phone_factory):
    bare, full = virtual_phone_factory(sim=False), virtual_phone_factory()
    tasks = load_tasks(["sms-send-number[0]", "dark-theme-on"], variants=("base",))
    result = start_run(builds=[oracle(tmp_path)], tasks=tasks, repeats=3, seed=1, phones=[bare.serial, full.serial],
                       profile=load_phone_profile("virtual"), out=tmp_path / "run")
    records = read_records(result.run_dir / "episodes.jsonl")
    assert len(records) == 6 and all(r.outcome == "success" for r in records)
    assert {r.phone for r in records if r.task_id == "sms-send-number"} == {full.serial}
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["skipped"] == [] and list(manifest["not_scheduled"]) == [bare.serial]


def test_a_vision_builds_episodes_are_skipped_on_phones_whose_screenshots_are_black():
    """A build that sees the screen needs `screenshot_visible`: on a phone whose screenshots are
    black its episodes are skipped (for that build alone), the text build's still run there."""
    from agent_host.config.requirements import SCREENSHOTS

    tasks = load_tasks(["dark-theme-on", "sms-send-number"], variants=("base",))
    planned = plan(["text", "seer"], tasks, repeats=1, seed=0)
    black = {"a": facts("a", **{SCREENSHOTS: False})}
    sched = schedule(planned, black, seeing=frozenset({"seer"}))
    assert {p.build for p in sched.planned} == {"text"} and len(sched.planned) == len(tasks)
    assert {(s.get("build"), s["task_id"], tuple(s["missing"])) for s in sched.skipped} == \
        {("seer", "dark-theme-on", (SCREENSHOTS,)), ("seer", "sms-send-number", (SCREENSHOTS,))}
    assert len(sched.skipped) == len(tasks) and sched.not_on == {}
    assert sched.tasks(tasks) == tasks      # kept for `text`
    # a task no phone can serve at all is skipped for every build, as before
    sched = schedule(planned, {"a": facts("a", sim_sms=False, **{SCREENSHOTS: False})}, seeing=frozenset({"seer"}))
    assert {s["task_id"] for s in sched.skipped if "build" not in s} == {"sms-send-number"}
    # with screenshots, a phone serves both
    sched = schedule(planned, {"a": facts("a", **{SCREENSHOTS: True})}, seeing=frozenset({"seer"}))
    assert sched.planned == planned and sched.skipped == []
    seer = next(p for p in planned if p.build == "seer")
    assert sched.serves("a", seer)


def test_the_virtual_phones_screenshots_are_read_only_when_asked(virtual_phone):
    from agent_host.config.requirements import SCREENSHOTS
    from agent_host.phone.device import Phone
    from agent_host.phone.requirements import read_phone_facts

    phone = Phone.connect(virtual_phone.serial)
    assert SCREENSHOTS not in read_phone_facts(phone).met
    facts_ = read_phone_facts(phone, screenshots=True)
    assert facts_.met[SCREENSHOTS] is True and "brightest pixel" in facts_.seen[SCREENSHOTS]
