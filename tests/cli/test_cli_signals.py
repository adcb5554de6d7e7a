"""The controller stopped from outside: what it started must stop with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixtures_cli import waiter_profile

ROOT = Path(__file__).resolve().parents[2]


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
def test_sigterm_to_run_stops_its_server(tmp_path, virtual_phone_factory):
    """Before: SIGTERM killed the controller without unwinding (exit -15), leaving only
    PDEATHSIG to stop its server, which reaches the server process but not a vLLM engine
    child in its group. Now it unwinds like Ctrl-C and stops the whole group."""
    phone = virtual_phone_factory()
    hosts = waiter_profile(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "agent_host", "run", "--builds", "waiter",
                             "--host-profile", str(hosts), "--tasks", "wifi-on", "--variants", "base",
                             "--phones", phone.serial, "--out", str(tmp_path / "run"), "--quiet",
                             "--no-report"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    steps = tmp_path / "run" / "episodes"
    while time.monotonic() < deadline and not list(steps.glob("*/steps.jsonl")):
        time.sleep(0.2)
    servers = [c for c in children(proc.pid) if alive(c)]
    assert servers, "the policy server should be a child of the controller"
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    time.sleep(1)
    assert not [s for s in servers if alive(s)], proc.stdout.read().decode()
    assert proc.returncode == 143  # SIGTERM (130 is SIGINT)


def test_a_bad_adb_server_port_is_an_error_not_5037():
    env = {**os.environ, "ANDROID_ADB_SERVER_PORT": "50x7"}
    out = subprocess.run([sys.executable, "-m", "agent_host", "devices"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["error: ANDROID_ADB_SERVER_PORT='50x7' is not a TCP port (1-65535)"]


def test_adb_server_port_never_falls_back_on_a_typo(monkeypatch):
    from virtual_phone.adb_server import AdbServerError, server_port

    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", "5o37")
    with pytest.raises(AdbServerError):
        server_port()
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", "15037")
    assert server_port() == 15037


def test_main_returns_after_an_abandoned_call_and_only_the_entry_point_leaves_at_once():
    """main() used os._exit once any call had been abandoned: the first in-process command of
    a pytest session after a watchdog test ended the whole session with status 0 and no
    summary (seen on the merged suite). main() returns; entry() still skips atexit hooks."""
    code = ("import atexit, sys\n"
            "from agent_host import watchdog\n"
            "from agent_host.cli import main, entry\n"
            "watchdog._abandoned.append('a frozen phone')\n"
            "atexit.register(lambda: print('atexit ran'))\n"
            "print('main returned', main(['tasks', 'list', '--json']) == 0 and 'ok')\n"
            "sys.argv = ['agent-host', 'tasks', 'list', '--json']\n"
            "entry()\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "main returned ok" in out.stdout, out.stderr[-2000:]
    assert out.returncode == 0 and "atexit ran" not in out.stdout


@pytest.mark.parametrize("answer", [b"HTTP/1.1 400 Bad Request\r\n\r\n", b""])
def test_devices_against_a_listener_that_is_not_adb_fails_at_once(answer):
    """Before: `adb start-server` waited on the held port and `devices` failed after ~21 s.
    Now the port's listener is asked first and the error is one line, in seconds."""
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conn.recv(64)
            if answer:
                conn.sendall(answer)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(port)}
    t0 = time.monotonic()
    try:
        out = subprocess.run([sys.executable, "-m", "agent_host", "devices"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=60)
    finally:
        srv.close()
    assert time.monotonic() - t0 < 15
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"error: adb server: port {port} is held by a program that is not an adb server "
        f"(set ANDROID_ADB_SERVER_PORT to another port)"]
