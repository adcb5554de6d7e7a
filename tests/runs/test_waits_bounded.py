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


def test_run_says_at_once_that_the_adb_port_is_held_by_something_else(monkeypatch, capsys):
    """`run` with the adb server's port held by an HTTP server said so after 44 s of adb's own
    retries; `phone start` says it at once, and so does `run` now."""
    import http.server
    import threading

    from agent_host.cli import main
    class Quiet(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(port))
        t0 = time.monotonic()
        code = main(["run", "--builds", "embedded-default", "--tasks", "wifi-on", "--phones", "emulator-5554"])
        took = time.monotonic() - t0
    finally:
        server.shutdown()
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert f"port {port} is held by a program that is not an adb server" in err[0]
    assert took < 20, f"said after {took:.0f} s"
