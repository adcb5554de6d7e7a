"""Runs under failure: a phone that dies leaves the pool, a server that dies is restarted,
error episodes are retried and never counted against the model."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from agent_host.config.builds import Build
from agent_host.config.phones import load_phone_profile
from agent_host.config.tasks import load_tasks
from agent_host.runs.run import start_run
from agent_host.runs.store import read_records

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


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
