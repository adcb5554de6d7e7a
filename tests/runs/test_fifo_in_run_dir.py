"""Issue 32, item 5: a FIFO in place of a file of a run directory. Before, `agent-host report RUN`
and `agent-host run --resume RUN` blocked for ever opening it (a FIFO's open waits for a
writer). Now every read of a run directory's files goes through config.records.open_regular:
the manifest, the log or a replay log that is not a regular file is named in one line (resume)
or a warning (report), and a screenshot that is not one is skipped with a warning."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixtures_cli import agent_host, assert_user_error, waiter_profile
from fixtures_report import make_run

EPISODE = "w4a16__wifi-on__base__r0"


def _fifo_at(run: Path, rel: str) -> Path:
    path = run / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("rel", ["manifest.json", f"episodes/{EPISODE}/step-002.png", f"episodes/{EPISODE}/steps.jsonl",
                                 "replay/x/replay.json", "replay/x/replay.jsonl"],
                         ids=["manifest", "step-png", "steps", "replay-json", "replay-jsonl"])
def test_report_warns_about_a_fifo_and_writes_the_report(tmp_path, rel):
    run = make_run(tmp_path)
    fifo = _fifo_at(run, rel)
    out = agent_host("report", str(run), cwd=tmp_path, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert f"{fifo}: " in out.stdout + out.stderr and "not a regular file" in out.stdout + out.stderr, out.stdout
    assert (run / "report.html").is_file() and (run / "results.json").is_file()


def test_report_refuses_a_fifo_episode_log_in_one_line(tmp_path):
    run = make_run(tmp_path)
    fifo = _fifo_at(run, "episodes.jsonl")
    out = agent_host("report", str(run), cwd=tmp_path, timeout=30)
    assert_user_error(out, str(fifo), "not a regular file")
    assert not (run / "report.html").exists()


@pytest.mark.parametrize("rel", ["manifest.json", "episodes.jsonl"])
def test_resume_refuses_a_fifo_in_one_line_and_writes_nothing(tmp_path, rel):
    run = make_run(tmp_path)
    fifo = _fifo_at(run, rel)
    before = {p: p.lstat().st_mtime_ns for p in run.rglob("*")}
    out = agent_host("run", "--resume", str(run), "--no-report", cwd=tmp_path, timeout=30)
    assert_user_error(out, str(fifo), "not a regular file")
    assert {p: p.lstat().st_mtime_ns for p in run.rglob("*")} == before


def test_run_refuses_a_fifo_as_its_server_log(tmp_path, virtual_phone_factory):
    """The server's log (servers/BUILD.server.log) is opened to append: a FIFO there blocked
    the open for ever, before the server even started."""
    import sys
    import subprocess
    phone = virtual_phone_factory()
    hosts = waiter_profile(tmp_path)
    run = tmp_path / "run"
    fifo = _fifo_at(run, "servers/waiter.server.log")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-m", "agent_host", "run", "--builds", "waiter", "--host-profile", str(hosts),
                          "--tasks", "wifi-on", "--variants", "base", "--phones", phone.serial, "--out", str(run),
                          "--quiet", "--no-report"], cwd=root, capture_output=True, text=True, timeout=60)
    assert_user_error(out, str(fifo), "not a regular file")
