"""Phones that differ, end to end through `agent-host run` and `agent-host baseline blind-replay`
(issue 34): a run of two scripted builds over `--vary none,full`, one of them only following
recorded indices, shows the robustness section in report.md and report.html, and the
index-follower loses success there while the reference solutions do not; a blind replay in the
run is reported beside the trivial policies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_host.cli import main
from agent_host.config.manifest import load_manifest
from agent_host.runs import blind_replay as br

TASKS = "wifi-on,bluetooth-on,dark-theme-on,alarm-set"
ROOT = Path(__file__).resolve().parents[2]


def _hosts(tmp: Path, recorded: Path | None = None) -> Path:
    (tmp / "oracle.yaml").write_text(f"suite: [{ROOT / 'tasks'}]\n")
    builds = [f"  - {{id: oracle, weight_path: scripted, server: policy, script: {tmp / 'oracle.yaml'}, role: reference}}"]
    if recorded is not None:
        builds.append(f"  - {{id: indices, weight_path: scripted, server: policy, script: {recorded}}}")
    hosts = tmp / "hosts.yaml"
    hosts.write_text("id: scripted\ndescription: d\nhardware_class: x86-avx2\nbuilds:\n" + "\n".join(builds) + "\n")
    return hosts


def _results(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())


@pytest.mark.slow
def test_an_index_follower_loses_success_on_varied_phones_and_the_report_says_so(virtual_phone, tmp_path, capsys):
    serial = virtual_phone.serial
    ref = tmp_path / "ref"
    assert main(["run", "--builds", "oracle", "--host-profile", str(_hosts(tmp_path)), "--tasks", TASKS,
                 "--phones", serial, "--vary", "none", "--out", str(ref), "--quiet"]) == 0
    recording = br.record(ref, load_manifest(ref / "manifest.json"), None)
    assert not recording.missing and len(recording.calls) == 6      # every instance's solution succeeded
    br.write_policy(tmp_path / "rec", recording)
    two = tmp_path / "two"
    hosts = _hosts(tmp_path, tmp_path / "rec" / br.POLICY)
    assert main(["run", "--builds", "oracle,indices", "--host-profile", str(hosts), "--tasks", TASKS,
                 "--phones", serial, "--vary", "none,full", "--out", str(two), "--quiet"]) == 0
    rob = _results(two)["robustness"]
    rows = {r["build"]: r for r in rob["rows"]}
    assert rob["conditions"] == ["none", "full"] and rob["primary"] == "none"
    assert rows["oracle"]["plain"] == rows["oracle"]["varied"] == 1.0     # solutions read the screen
    assert rows["indices"]["plain"] == 1.0 > rows["indices"]["varied"]   # recorded indices do not
    assert rows["indices"]["diff"] < 0
    for page in ("report.md", "report.html"):
        text = (two / page).read_text()
        assert "Robustness: phones that differ" in text and "indices" in text
    # the headline is the first condition's alone: the index follower is perfect there
    assert {b["build"]: b["rates"]["success"]["mean"] for b in _results(two)["builds"]}["indices"] == 1.0

    capsys.readouterr()
    assert main(["baseline", "blind-replay", str(ref), "--phones", serial, "--vary", "full", "--quiet",
                 "--json"]) == 0
    blind = json.loads(capsys.readouterr().out)
    assert blind["replayed"] == 6 and blind["success"] < 6
    head = blind["headline"]                      # as the headline counts: tasks are the unit
    assert head["n_tasks"] == 4 and 0 <= head["low"] <= head["mean"] <= head["high"] <= 1
    assert main(["report", str(ref)]) == 0
    rob = _results(ref)["robustness"]
    assert rob["blind"]["episodes"] == 6 and rob["blind"]["mean"] == head["mean"]
    assert "--vary none,full" in rob["note"]       # a run of the unvaried phone alone: add a varied one
    assert "Blind replay of recorded calls" in (ref / "report.md").read_text()
    # played again, it resumes: nothing new is run
    capsys.readouterr()
    assert main(["baseline", "blind-replay", str(ref), "--phones", serial, "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["replayed"] == 6
    # one phone per instance is one draw of the variation: --repeats plays each on several
    assert main(["baseline", "blind-replay", str(ref), "--phones", serial, "--repeats", "2", "--quiet", "--json",
                 "--out", str(tmp_path / "blind2")]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["replayed"] == 12 and sum(k.endswith(" r1") for k in rep["outcomes"]) == 6
    assert rep["headline"]["n_tasks"] == 4
    assert main(["baseline", "blind-replay", str(ref), "--repeats", "0"]) == 2
    assert "--repeats must be between 1 and 100" in capsys.readouterr().err


def test_blind_replay_refuses_a_directory_that_is_no_run(tmp_path, capsys):
    assert main(["baseline", "blind-replay", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_vary_flag_errors_are_one_line(tmp_path, capsys):
    for bad, says in (("loud", "--vary 'loud'"), ("none,none", "given twice"), ("dark+", "--vary 'dark+'")):
        assert main(["run", "--builds", "x", "--vary", bad, "--phones", "p", "--out", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and says in err[0], err
    assert not (tmp_path / "r").exists()


def test_the_plan_says_which_variations_a_real_phone_takes(capsys):
    assert main(["run", "--plan", "--tasks", "wifi-on,dark-theme-on,contact-number-lookup", "--phone-profile",
                 "pixel-android14", "--vary", "none,full"]) == 0
    out = capsys.readouterr().out
    assert "--vary none: every episode on the phone as its setup leaves it" in out
    full = next(line for line in out.splitlines() if line.startswith("--vary full"))
    assert "not applied (virtual phone only): launcher, interruption" in full
    assert "dark on 3 of 4 instances" in full           # dark-theme-on's two instances keep their theme
    assert "distractors on 2 of 4 instances" in full    # the contact lookups' contacts
    assert main(["run", "--plan", "--tasks", "wifi-on", "--vary", "full"]) == 0
    assert "not applied" not in capsys.readouterr().out  # the virtual phone takes every kind
    assert main(["run", "--plan", "--tasks", "wifi-on,android-version", "--vary", "light,full"]) == 0
    out = capsys.readouterr().out
    assert "--vary full leaves out 1 instance(s) whose vary.full is false" in out and "leaves out" not in out.split("--vary full")[0]


@pytest.mark.slow
def test_values_overlays_reach_the_scripted_suite_through_the_header_and_change_the_answer(virtual_phone, tmp_path):
    """Under `--vary values` a question task plays another data set: the phone, the check and
    the oracle's answer all follow the overlay the episode's seed picked (the oracle learns it
    from the values header, which requests.json keeps); a blind replay of the unvaried answer
    fails there."""
    from agent_host.serving.endpoint import VALUES_HEADER
    out = tmp_path / "run"
    assert main(["run", "--builds", "oracle", "--host-profile", str(_hosts(tmp_path)),
                 "--tasks", "sms-bank-code,markor-wifi-password", "--phones", virtual_phone.serial,
                 "--vary", "none,values", "--out", str(out), "--quiet"]) == 0
    recs = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(recs) == 10 and all(r["outcome"] == "success" for r in recs)
    answers = {}
    for r in recs:
        requests = json.loads((out / "episodes" / r["episode_id"] / "requests.json").read_text())
        if r["vary"] == "values":
            assert r["variation"]["values"] in (1, 2, 3)
            assert requests["headers"][VALUES_HEADER] == str(r["variation"]["values"])
        else:
            assert VALUES_HEADER not in requests["headers"]
        answers.setdefault(r["task"], {})[r["vary"]] = r["answer"]
    for task, by in answers.items():
        assert by["none"] != by["values"], task                    # another phone, another answer
    recording = br.record(out, load_manifest(out / "manifest.json"), None)
    assert len(recording.calls) == 5
