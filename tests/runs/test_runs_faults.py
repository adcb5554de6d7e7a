"""Runs under failure, on the virtual phone and the scripted policy: a phone that dies leaves
the pool, a phone that drops is waited for and used again, a server that dies is restarted,
waits are bounded, a full disk stops the run cleanly, one process per run directory. Error
episodes are retried and never counted against the model; each test checks that nothing is
lost, nothing duplicated, and every episode is labelled for what happened."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_host.config.builds import Build
from agent_host.config.phones import load_phone_profile
from agent_host.config.tasks import load_tasks
from agent_host.runs.execute import RecordingFailed
from agent_host.runs.run import resume_run, start_run
from agent_host.runs.store import read_records

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def oracle(tmp: Path) -> Build:
    script = tmp / "oracle.yaml"
    script.write_text(f"suite: [{ROOT / 'tasks'}]\n")
    return Build(id="oracle", weight_path="scripted", server="policy", script=str(script))


def test_a_dead_phone_leaves_the_pool_and_the_run_goes_on(tmp_path, virtual_phone_factory):
    a, b = virtual_phone_factory(), virtual_phone_factory()
    tasks = load_tasks(["dark-theme-on", "wifi-on"], variants=("base",))
    killed = []

    def hook(progress, rec):
        # after the first finished episode on phone b, b goes away for good
        if rec is not None and rec.phone == b.serial and not killed:
            killed.append(rec.episode_id)
            b.stop()

    result = start_run(builds=[oracle(tmp_path)], tasks=tasks, repeats=3, seed=1,
                       phones=[a.serial, b.serial], profile=load_phone_profile("virtual"),
                       out=tmp_path / "run", hook=hook)
    records = read_records(result.run_dir / "episodes.jsonl")
    done = {r.episode_id: r for r in records if r.outcome != "error"}
    assert killed, "phone b never finished an episode"
    assert len(done) == 6 and all(r.outcome == "success" for r in done.values())
    # whatever b had in hand when it died was retried on a and not counted as a failure
    assert {r.phone for r in done.values()} == {a.serial, b.serial}
    assert sum(r.phone == b.serial for r in done.values()) == 1
    errors = [r for r in records if r.outcome == "error"]
    assert all(r.phone == b.serial for r in errors)
    assert result.progress["oracle"].done == 6


def test_a_dead_server_is_restarted(tmp_path, virtual_phone_factory):
    phone = virtual_phone_factory()
    tasks = load_tasks(["dark-theme-on"], variants=("base",))
    from agent_host.serving import server as serving
    seen_pids: list[int] = []
    killed: list[int] = []

    original = serving.start

    def start(build, **kw):
        srv = original(build, **kw)
        seen_pids.append(srv.pid)
        return srv

    serving.start = start
    try:
        def hook(progress, rec):
            if rec is not None and rec.outcome == "success" and not killed:
                killed.append(seen_pids[0])
                os.kill(seen_pids[0], signal.SIGKILL)
        result = start_run(builds=[oracle(tmp_path)], tasks=tasks, repeats=3, seed=1,
                           phones=[phone.serial], profile=load_phone_profile("virtual"),
                           out=tmp_path / "run", hook=hook)
    finally:
        serving.start = original
    assert len(seen_pids) == 1 and killed, "one server start, then killed once"
    records = read_records(result.run_dir / "episodes.jsonl")
    done = [r for r in records if r.outcome != "error"]
    assert len(done) == 3 and all(r.outcome == "success" for r in done)
    errors = [r for r in records if r.outcome == "error"]
    assert len(errors) == 1 and errors[0].attempt == 1
    assert (result.run_dir / "servers").exists()


def test_a_harness_exception_costs_an_attempt_not_the_episode(tmp_path, virtual_phone_factory, monkeypatch):
    """Before: an exception escaping run_episode killed the worker thread and the episode it
    held was silently never run."""
    import agent_host.agent.episode as episode

    phone = virtual_phone_factory()
    real = episode.run_episode
    calls = []

    def flaky(*args, **kw):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return real(*args, **kw)

    monkeypatch.setattr(episode, "run_episode", flaky)
    result = start_run(builds=[oracle(tmp_path)], tasks=load_tasks(["dark-theme-on"], variants=("base",)),
                       repeats=2, seed=1, phones=[phone.serial], profile=load_phone_profile("virtual"),
                       out=tmp_path / "run")
    records = read_records(result.run_dir / "episodes.jsonl")
    assert [r.outcome for r in records].count("error") == 1
    assert records[0].error == "harness: RuntimeError: boom"
    assert sorted(r.episode_id for r in records if r.outcome == "success") == \
        ["oracle__dark-theme-on__base__r0", "oracle__dark-theme-on__base__r1"]


# -- issue 11's fault suite: each asserts nothing lost, nothing duplicated, every episode
# -- labelled for what happened ----------------------------------------------------------

TWO_TASKS = ["dark-theme-on", "wifi-on"]


def assert_complete(run_dir: Path, planned: int) -> list:
    """Every planned episode has exactly one finished record, all successes (the oracle), and
    every error record is a retried attempt of one of them."""
    records = read_records(run_dir / "episodes.jsonl")
    done = [r.episode_id for r in records if r.outcome != "error"]
    assert len(done) == len(set(done)) == planned, (len(done), len(set(done)), planned)
    assert all(r.outcome == "success" for r in records if r.outcome != "error")
    attempts: dict[str, list[int]] = {}
    for r in records:
        attempts.setdefault(r.episode_id, []).append(r.attempt)
    assert all(a == list(range(1, len(a) + 1)) for a in attempts.values()), attempts
    return records


def test_a_4s_drop_on_a_one_phone_run_is_waited_for(tmp_path, virtual_phone_factory):
    """Before: a 4 s adb drop on a one-phone run ended the run."""
    phone = virtual_phone_factory()
    dropped = []

    def hook(progress, rec):
        if rec is not None and rec.outcome == "success" and not dropped:
            dropped.append(time.monotonic())
            phone.set_faults("drop_for=4,drop_at=0.5")   # mid-way through the next episode

    result = start_run(builds=[oracle(tmp_path)], tasks=load_tasks(TWO_TASKS, variants=("base",)), repeats=2,
                       seed=1, phones=[phone.serial], profile=load_phone_profile("virtual"),
                       out=tmp_path / "run", hook=hook)
    records = assert_complete(result.run_dir, 4)
    errors = [r for r in records if r.outcome == "error"]
    assert 1 <= len(errors) <= 2 and all(r.error.startswith(("phone:", "setup:")) for r in errors), errors
    assert result.progress["oracle"].away == {}


def test_a_drop_on_one_of_two_phones_and_the_phone_gets_work_again(tmp_path, virtual_phone_factory):
    """Before: after one short drop the second phone got none of the remaining episodes."""
    a, b = virtual_phone_factory(), virtual_phone_factory()
    dropped: list[int] = []

    def hook(progress, rec):
        if rec is not None and rec.phone == b.serial and not dropped:
            dropped.append(1)
            b.set_faults("drop_for=2,drop_at=0.3")

    # 20 episodes: enough left after b's drop and return (once a scripted episode no longer
    # waited out its `wait:` steps, phone a alone finished 8 before b was back: 2 of 3 runs failed)
    result = start_run(builds=[oracle(tmp_path)], tasks=load_tasks(TWO_TASKS, variants=("base",)), repeats=10,
                       seed=1, phones=[a.serial, b.serial], profile=load_phone_profile("virtual"),
                       out=tmp_path / "run", hook=hook)
    records = assert_complete(result.run_dir, 20)
    first_b_error = next(i for i, r in enumerate(records) if r.outcome == "error" and r.phone == b.serial)
    later_on_b = [r for r in records[first_b_error:] if r.phone == b.serial and r.outcome == "success"]
    assert later_on_b, "phone b never got work again after its drop"
    assert all(r.phone == b.serial for r in records if r.outcome == "error")


def test_a_phone_that_stays_away_is_named(tmp_path, virtual_phone_factory):
    from io import StringIO

    from rich.console import Console

    from agent_host.runs.progress import tallies
    from agent_host.cli.summary import print_summary

    a, b = virtual_phone_factory(), virtual_phone_factory()
    seen: list[str] = []

    def hook(progress, rec):
        if rec is not None and rec.phone == b.serial and rec.outcome == "success" and b.running:
            b.stop()
        seen.append(tallies(progress))

    result = start_run(builds=[oracle(tmp_path)], tasks=load_tasks(TWO_TASKS, variants=("base",)), repeats=3,
                       seed=1, phones=[a.serial, b.serial], profile=load_phone_profile("virtual"),
                       out=tmp_path / "run", hook=hook, limits={"phone_wait": 1.0})
    assert_complete(result.run_dir, 6)
    assert any(f"away {b.serial}" in line for line in seen), seen
    out = StringIO()
    print_summary(result, Console(file=out, width=200))
    assert f"phone {b.serial} is away" in out.getvalue()


def test_a_hanging_server_with_a_short_limit(tmp_path, virtual_phone):
    """Before: a server that never answered held a step for 1202 s (600 s x 2), ~1 h an episode."""
    build = oracle(tmp_path).model_copy(update={"args": ["--delay-ms", "60000"]})
    t0 = time.monotonic()
    result = start_run(builds=[build], tasks=load_tasks(["wifi-on"], variants=("base",)), repeats=2, seed=1,
                       phones=[virtual_phone.serial], profile=load_phone_profile("virtual"),
                       out=tmp_path / "run", max_attempts=2, limits={"request_timeout": 1.0})
    took = time.monotonic() - t0
    records = read_records(result.run_dir / "episodes.jsonl")
    assert sorted((r.episode_id, r.attempt) for r in records) == [
        ("oracle__wifi-on__base__r0", 1), ("oracle__wifi-on__base__r0", 2),
        ("oracle__wifi-on__base__r1", 1), ("oracle__wifi-on__base__r1", 2)]
    assert all(r.outcome == "error" and r.error.startswith("limit: model request timed out")
               and "--request-timeout" in r.error for r in records)
    assert result.progress["oracle"].done == 2
    assert took < 60, took


def test_a_newline_typed_in_a_run(tmp_path, virtual_phone):
    task = load_tasks(["contact-add"], variants=("base",))[0]
    items = [dict(i) for i in task.solution]
    items[2] = {"type_text": {"text_contains": "First name", "text": "Ada\nLovelace", "submit": False}}
    import yaml
    script = tmp_path / "newline.yaml"
    script.write_text(yaml.safe_dump(items, allow_unicode=True))
    build = Build(id="typist", weight_path="scripted", server="policy", script=str(script))
    result = start_run(builds=[build], tasks=[task], repeats=1, seed=1, phones=[virtual_phone.serial],
                       profile=load_phone_profile("virtual"), out=tmp_path / "run")
    records = read_records(result.run_dir / "episodes.jsonl")
    assert len(records) == 1 and records[0].outcome != "error", records[0].error
    assert len(list((result.run_dir / "episodes" / records[0].episode_id).glob("step-*.png"))) == len(items) + 1


def test_an_injected_enospc_stops_the_run_and_resume_completes_it(tmp_path, virtual_phone, monkeypatch):
    """Before: on a full disk worker threads died silently, 11 of 12 episodes were dropped
    and the summary said nothing was wrong."""
    from agent_host.runs.store import RunStore

    real = RunStore.append
    calls = []

    def append(self, rec):
        calls.append(rec.episode_id)
        if len(calls) >= 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, rec)

    monkeypatch.setattr(RunStore, "append", append)
    tasks = load_tasks(TWO_TASKS, variants=("base",))
    kw = dict(profile=load_phone_profile("virtual"))
    with pytest.raises(RecordingFailed) as e:
        start_run(builds=[oracle(tmp_path)], tasks=tasks, repeats=2, seed=1, phones=[virtual_phone.serial],
                  out=tmp_path / "run", **kw)
    msg = str(e.value)
    assert "No space left on device" in msg and "2 episode(s) recorded" in msg
    assert f"agent-host run --resume {tmp_path / 'run'}" in msg and "\n" not in msg
    assert len(read_records(tmp_path / "run" / "episodes.jsonl")) == 2
    monkeypatch.setattr(RunStore, "append", real)
    resume_run(tmp_path / "run")
    assert_complete(tmp_path / "run", 4)


def _unshare_works() -> bool:
    try:
        return subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt || exit 1"],
                              capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def host_profile(tmp_path: Path) -> None:
    hosts = tmp_path / "device_profiles" / "hosts"
    hosts.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "oracle.yaml"
    script.write_text(f"suite: [{ROOT / 'tasks'}]\n")
    (hosts / "t.yaml").write_text(
        "id: t\ndescription: test host\nhardware_class: x86-avx2\ndetect: never\n"
        f"builds:\n  - {{id: oracle, weight_path: scripted, server: policy, script: '{script}'}}\n")


def cli(tmp_path: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "agent_host", "run", *args, "--no-report", "--quiet"]


def cli_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.skipif(not _unshare_works(), reason="needs a private mount namespace to mount a small tmpfs")
def test_a_real_full_disk_stops_the_run_cleanly_and_resume_completes_it(tmp_path, virtual_phone):
    host_profile(tmp_path)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    keep = tmp_path / "kept"
    run_args = cli(tmp_path, "--builds", "oracle", "--host-profile", "t", "--tasks", ",".join(TWO_TASKS),
                   "--repeats", "4", "--phones", virtual_phone.serial, "--out", str(mnt / "run"))
    script = (f"mount -t tmpfs -o size=2m tmpfs {mnt} || exit 99; "
              f"{' '.join(map(repr, run_args))}; rc=$?; cp -a {mnt}/run {keep}; exit $rc")
    out = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, cwd=tmp_path,
                         env=cli_env(), timeout=600)
    assert out.returncode not in (0, 99), out
    assert "Traceback" not in out.stderr and "Exception in thread" not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "No space left on device" in lines[0], out.stderr
    recorded = read_records(keep / "episodes.jsonl")
    finished = {r.episode_id for r in recorded if r.outcome != "error"}
    assert f"{len(finished)} episode(s) recorded" in lines[0] and "--resume" in lines[0]
    assert 0 < len(finished) < 8
    back = subprocess.run(cli(tmp_path, "--resume", str(keep)), capture_output=True, text=True, cwd=tmp_path,
                          env=cli_env(), timeout=600)
    assert back.returncode == 0, back.stderr
    records = assert_complete(keep, 8)
    assert [r for r in records if r.episode_id in finished][:len(recorded)] == \
        [r for r in recorded if r.episode_id in finished]


def test_run_and_resume_at_once_and_two_fresh_starts(tmp_path, virtual_phone):
    """Before: a run and a resume of one directory at once wrote 46 records for 24 planned
    episodes, both exiting 0; two fresh starts at once could die on `.manifest.json.tmp`."""
    host_profile(tmp_path)
    run_dir = tmp_path / "run"
    args = ["--builds", "oracle", "--host-profile", "t", "--tasks", ",".join(TWO_TASKS), "--repeats", "3",
            "--phones", virtual_phone.serial]
    first = subprocess.Popen(cli(tmp_path, *args, "--out", str(run_dir)), cwd=tmp_path, env=cli_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen(cli(tmp_path, *args, "--out", str(run_dir)), cwd=tmp_path, env=cli_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (run_dir / "manifest.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    resume = subprocess.run(cli(tmp_path, "--resume", str(run_dir)), cwd=tmp_path, env=cli_env(),
                            capture_output=True, text=True, timeout=120)
    outs = [p.communicate(timeout=300) + (p.returncode,) for p in (first, second)]
    codes = sorted(o[2] for o in outs)
    assert codes[0] == 0 and codes[1] != 0, outs
    loser = next(o for o in outs if o[2] != 0)
    assert "Traceback" not in loser[1] and len(loser[1].strip().splitlines()) == 1, loser[1]
    assert "in use by pid" in loser[1] or "already holds a run" in loser[1], loser[1]
    if resume.returncode != 0:  # it ran while the first held the directory: refused, naming it
        assert "in use by pid" in resume.stderr and "Traceback" not in resume.stderr, resume.stderr
    assert_complete(run_dir, 6)
    assert not (run_dir / ".lock").exists()
