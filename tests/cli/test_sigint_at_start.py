"""Issue 32, item 5: Ctrl-C in the first second or so of `agent-host run` (while the verbs'
modules are still being imported, before main's handlers) printed a KeyboardInterrupt
traceback. Now it is exit 130 without one whenever it comes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixtures_cli import waiter_profile

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("delay", [0.2, 0.4, 0.6, 0.9, 1.2, 1.5])
def test_sigint_during_start_up_exits_130_without_a_traceback(tmp_path, virtual_phone_factory, delay):
    phone = virtual_phone_factory()
    hosts = waiter_profile(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "agent_host", "run", "--builds", "waiter",
                             "--host-profile", str(hosts), "--tasks", "wifi-on", "--variants", "base",
                             "--phones", phone.serial, "--out", str(tmp_path / "run"), "--quiet",
                             "--no-report"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err
    # 130, or (rarely, seen once in 30 at ~0.9 s, cause not found) killed by SIGINT after the
    # same one line: a shell shows both as $? = 130
    assert proc.returncode in (130, -signal.SIGINT), (proc.returncode, err)
    # before main's handlers: "interrupted"; once the run has begun, its own two lines (stop, resume)
    assert 1 <= len(err.strip().splitlines()) <= 2, err
