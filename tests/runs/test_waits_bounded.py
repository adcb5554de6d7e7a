"""Waits end when the flags say (issue 32): `--phone-wait 10` once waited about 70 s for a frozen
phone, because every probe inside the wait (connect, then `echo ok`) took its own full 10 s on
top of the backoff. The wait is now one deadline the probes share."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_host.runs.execute import reconnect

ROOT = Path(__file__).resolve().parents[2]
SLACK_S = 6.0     # process and adb overhead on a shared machine; the old wait was 20 s or more over


@pytest.mark.slow
def test_the_phone_wait_ends_at_its_flag_for_a_frozen_phone():
    phone = subprocess.Popen([sys.executable, "-m", "agent_host", "phone", "start"], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        serial = phone.stdout.readline().split()[-1]
        os.kill(phone.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        got, why = reconnect(serial, 3.0)
        took = time.monotonic() - t0
    finally:
        os.kill(phone.pid, signal.SIGCONT)
        phone.terminate()
        phone.wait(30)
    assert got is None and why.startswith("not back after 3 s"), why
    assert took < 3.0 + SLACK_S, f"--phone-wait 3 waited {took:.1f} s"
