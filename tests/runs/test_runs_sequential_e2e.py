"""`run --until-decided` end to end on the virtual phone: two scripted suite builds whose flaws
differ by a known amount (an oracle, and the same suite with a seeded `premature` flaw in half
its episodes), killed with SIGKILL mid-sequence, resumed, decided, reported.

Which episodes get the flaw is a pure function of the episode's seed and goal, so every
outcome is known in advance: the test checks the log against that prediction, that each
episode the rounds planned ran exactly once, and that the decision is the true one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures_policy import write_suite_builds

from agent_host.config.tasks import load_tasks
from agent_host.policy.suite import flaw_for
from agent_host.runs.plan import derive_seed
from agent_host.runs.store import read_records

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TASKS = ["wifi-on", "wifi-off", "bluetooth-on", "bluetooth-off", "airplane-mode-on", "dark-theme-on",
         "dark-theme-off", "location-off", "auto-rotate-off", "adaptive-brightness-off", "dnd-on",
         "battery-saver-on"]
FLAWS = {"premature": 0.5}
SEED = 3


def write_builds(tmp: Path) -> Path:
    return write_suite_builds(tmp, FLAWS, "the sequential run test")


def agent_host(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "agent_host", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def expected(episode: str) -> str:
    build, task, _, rep = episode.split("__")
    inst = next(t for t in load_tasks([task], variants=("base",)))
    if build == "oracle":
        return "success"
    return "premature" if flaw_for(derive_seed(SEED, inst.key, int(rep[1:])), inst.goal, FLAWS) else "success"


def test_until_decided_killed_resumed_decides_and_reports(tmp_path, virtual_phone_factory):
    phone = virtual_phone_factory()
    hosts = write_builds(tmp_path)
    run_dir = tmp_path / "run"
    t0 = time.monotonic()
    proc = agent_host("run", "--builds", "oracle,flawed", "--host-profile", str(hosts), "--tasks", ",".join(TASKS),
                      "--until-decided", "--repeats", "1", "--detect", "10", "--seed", str(SEED),
                      "--phones", phone.serial, "--out", str(run_dir), "--quiet", "--no-report")
    manifest = run_dir / "manifest.json"
    log = run_dir / "episodes.jsonl"
    killed_at = None
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            rounds = json.loads(manifest.read_text())["sequential"]["rounds"]
        except (OSError, ValueError, KeyError):
            rounds = []
        # mid-sequence: the first look is decided "go on", and the second round is under way
        if len(rounds) >= 2 and log.exists():
            first = len(rounds[0]["order"])
            if len(read_records(log)) >= first + 3:
                killed_at = len(read_records(log))
                break
        time.sleep(0.1)
    out = proc.stdout.read() if proc.poll() is not None else ""
    assert killed_at is not None, f"the run ended before a second round: {out}"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    before = read_records(log)

    proc = agent_host("run", "--resume", str(run_dir), "--quiet")
    text, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, text
    seconds = time.monotonic() - t0

    m = json.loads(manifest.read_text())
    st = m["sequential"]
    rounds = st["rounds"]
    planned = [e for r in rounds for e in r["order"]]
    assert len(planned) == len(set(planned)), "no episode planned twice"
    records = read_records(log)
    assert [r.episode_id for r in records[:len(before)]] == [r.episode_id for r in before], "resume only appends"
    done = [r for r in records if r.outcome != "error"]
    assert sorted(r.episode_id for r in done) == sorted(planned), "every planned episode exactly once"
    assert {r.episode_id: r.outcome for r in done} == {e: expected(e) for e in planned}
    # played in the recorded order (one phone: the log is the order)
    assert [r.episode_id for r in done] == planned
    decision = rounds[-1]["decision"]
    assert decision["final"] and decision["outcome"] == "worse", decision
    assert all(not r["decision"]["final"] for r in rounds[:-1])
    assert decision["high"] < 0 and decision["low"] <= -0.5 <= decision["high"] + 0.3
    assert "sequential: worse" in text

    from agent_host.report import write_reports
    written = write_reports(run_dir, baseline="oracle")
    seq = written["results"]["sequential"]
    assert seq["outcome"] == "worse" and seq["episodes"] == len(planned)
    md = (run_dir / "report" / "report.md").read_text() if (run_dir / "report" / "report.md").exists() else \
        next(run_dir.rglob("report.md")).read_text()
    assert "Sequential comparison" in md and "decided: flawed is worse" in md
    print(f"\nsequential e2e: {len(rounds)} looks, {len(planned)} episodes, killed at {killed_at} records, "
          f"decision {decision['outcome']} [{100 * decision['low']:+.1f}, {100 * decision['high']:+.1f}] pp, "
          f"{seconds:.0f} s")
