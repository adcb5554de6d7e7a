"""Signals end a run cleanly. One SIGINT or SIGTERM near an episode boundary printed
tracebacks (`UserError: build slow: the server is not running`) and logged episodes that
never ran as `error`, each costing an attempt. Now the first signal stops scheduling, lets
the episode in flight finish, writes the report of what ran and exits 130 (SIGINT) or 143
(SIGTERM) with the resume command; a second stops at once. Nothing is lost, duplicated or
labelled `error`, and the resume runs exactly the rest."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _start(tmp: Path, serial: str, *extra: str) -> subprocess.Popen:
    script = tmp / "slow.yaml"
    script.write_text("actions: []\nafter: wait\nwait_seconds: 0.3\n")
    hosts = tmp / "h.yaml"
    hosts.write_text(f"id: h\ndescription: d\nhardware_class: x86-avx2\nbuilds:\n"
                     f"  - {{id: waiter, weight_path: scripted, server: policy, script: {script}}}\n")
    return subprocess.Popen([sys.executable, "-m", "agent_host", "run", "--builds", "waiter", "--host-profile",
                             str(hosts), "--tasks", "wifi-on", "--repeats", "3", "--phones", serial,
                             "--out", str(tmp / "run"), "--quiet", *extra], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_steps(tmp: Path, n: int = 2) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if any(len(p.read_text().splitlines()) >= n for p in (tmp / "run" / "episodes").glob("*/steps.jsonl")):
            return
        time.sleep(0.05)
    raise AssertionError("no episode started")


def _records(tmp: Path) -> list[dict]:
    return [json.loads(x) for x in (tmp / "run" / "episodes.jsonl").read_text().splitlines() if x.strip()]


def _resume_and_check(tmp: Path, serial: str) -> None:
    out = subprocess.run([sys.executable, "-m", "agent_host", "run", "--resume", str(tmp / "run"), "--quiet",
                          "--no-report"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    recs = _records(tmp)
    assert sorted(r["repeat"] for r in recs) == [0, 1, 2]  # nothing lost, nothing twice
    assert all(r["outcome"] != "error" and r["attempt"] == 1 for r in recs), recs


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_one_signal_finishes_the_episode_in_flight_reports_and_says_how_to_resume(
        tmp_path, virtual_phone, sig, code):
    proc = _start(tmp_path, virtual_phone.serial)
    _wait_for_steps(tmp_path)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    assert "Traceback" not in err and "Traceback" not in out, err
    assert f"resume with: agent-host run --resume {tmp_path / 'run'}" in err.strip().splitlines()[-1]
    recs = _records(tmp_path)
    assert len(recs) == 1 and recs[0]["outcome"] != "error", recs  # the episode in flight finished
    assert (tmp_path / "run" / "report.html").exists()  # the report of what ran
    _resume_and_check(tmp_path, virtual_phone.serial)


def test_a_second_signal_stops_at_once_and_loses_nothing_recorded(tmp_path, virtual_phone):
    proc = _start(tmp_path, virtual_phone.serial, "--no-report")
    _wait_for_steps(tmp_path)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 10  # not the rest of the episode (12 steps of 0.3 s and more)
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    assert "resume with: agent-host run --resume" in err
    assert _records(tmp_path) == []  # the episode cut short is not recorded, never as `error`
    _resume_and_check(tmp_path, virtual_phone.serial)
