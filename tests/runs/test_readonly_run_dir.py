"""A run directory that turns read-only during a run: the one-line RecordingFailed message was
followed by "During handling of the above exception" and an OSError traceback, raised by the
server's log note while the server was being stopped on the way out."""

from __future__ import annotations

import pytest

from agent_host.config.builds import Build
from agent_host.serving.server import ManagedServer
from fixtures_cli import waiter_profile


def test_a_log_note_that_cannot_be_written_does_not_fail_the_stop(tmp_path):
    blocked = tmp_path / "servers"
    blocked.write_text("a file where the log directory should be")  # mkdir and open fail (ENOTDIR)
    server = ManagedServer(Build(id="b", weight_path="scripted", server="policy", script="x"),
                           log_dir=blocked, seed=0, startup_timeout=1, port=None)
    server._note("stopped after 0.1 s")  # before: NotADirectoryError


def _read_only(path, on: bool) -> None:
    """The run directory, files and folders, read-only: chmod for a user; root writes through
    modes, so there the immutable attribute (EPERM, a PermissionError too)."""
    import os
    import shutil
    import subprocess
    if os.geteuid() == 0:
        if not shutil.which("chattr"):
            pytest.skip("root, and no chattr to make a folder read-only")
        out = subprocess.run(["chattr", "-R", "+i" if on else "-i", str(path)], capture_output=True, text=True)
        if on and out.returncode != 0:
            pytest.skip(f"chattr +i does not work here: {out.stderr.strip()}")
    else:
        subprocess.run(["chmod", "-R", "a-w" if on else "u+w", str(path)], check=True)


@pytest.mark.slow
def test_a_run_directory_made_read_only_mid_run_is_one_line(tmp_path, virtual_phone_factory):
    """Issue 32, item 5: the run stopped with its one line, but a full PermissionError
    traceback (the episode's, logged as a harness bug) came first."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    phone = virtual_phone_factory()
    hosts = waiter_profile(tmp_path)
    run = tmp_path / "run"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "agent_host", "run", "--builds", "waiter",
                             "--host-profile", str(hosts), "--tasks", "wifi-on", "--variants", "base", "--repeats", "3", "--phones", phone.serial,
                             "--out", str(run), "--quiet", "--no-report"],
                            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list(run.glob("episodes/*/steps.jsonl")):
            time.sleep(0.1)
        _read_only(run, True)
        try:
            out, err = proc.communicate(timeout=240)
        finally:
            _read_only(run, False)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert proc.returncode not in (0, None), err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(run) in lines[0], err
