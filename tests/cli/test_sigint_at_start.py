"""Issue 32, item 5: Ctrl-C in the first second or so of `agent-host run` (while the verbs'
modules are still being imported, before main's handlers) printed a KeyboardInterrupt
traceback. Now it is exit 130 without one whenever it comes."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fixtures_cli import waiter_profile

ROOT = Path(__file__).resolve().parents[2]


def _started(tmp_path, phone, hosts) -> tuple[subprocess.Popen[str], list[str]]:
    """`agent-host run` with its imports timed on stderr (`-X importtime`), and its stderr lines
    as they come; returns once the agent_host package is imported, i.e. once the interpreter's
    own start-up (where a SIGINT is Python's to report, not ours: before its handler is
    installed it kills silently, during `site` it prints a traceback) is over. Under a loaded CI
    that start-up outlasted the 0.2 s this test waited from the spawn."""
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "agent_host", "run", "--builds", "waiter",
                             "--host-profile", str(hosts), "--tasks", "wifi-on", "--variants", "base",
                             "--phones", phone.serial, "--out", str(tmp_path / "run"), "--quiet",
                             "--no-report"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    assert proc.stderr is not None
    threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()
    deadline = time.monotonic() + 60
    while not any(line.rstrip().endswith("| agent_host") for line in list(lines)):
        assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)[-2000:]
        time.sleep(0.005)
    return proc, lines


@pytest.mark.parametrize("delay", [0.0, 0.2, 0.4, 0.6, 0.9, 1.2, 1.5])
def test_sigint_during_start_up_exits_130_without_a_traceback(tmp_path, virtual_phone_factory, delay):
    phone = virtual_phone_factory()
    proc, lines = _started(tmp_path, phone, waiter_profile(tmp_path))
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    time.sleep(0.2)     # the reader thread takes the last lines
    err = "".join(line for line in list(lines) if not line.startswith("import time:"))
    assert "Traceback" not in err, err
    # 130, or (rarely, seen once in 30 at ~0.9 s, cause not found) killed by SIGINT after the
    # same one line: a shell shows both as $? = 130
    assert proc.returncode in (130, -signal.SIGINT), (proc.returncode, err)
    # before main's handlers: "interrupted"; once the run has begun, its own two lines (stop, resume)
    assert 1 <= len(err.strip().splitlines()) <= 2, err
