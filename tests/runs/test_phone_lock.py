"""One process per phone: two runs on one phone interleaved their actions and counted each
other's damage as model failures (11 of 36 episodes, both exiting 0). Now the second is
refused in one line naming the holder, or waits for the phone with --wait-for-phone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_host.runs.phone_lock import PhoneBusy, PhoneLocks, holder, phone_key

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def lock_dir(tmp_path, monkeypatch):
    d = tmp_path / "locks"
    monkeypatch.setenv("AGENT_HOST_LOCK_DIR", str(d))
    return d


def test_a_held_phone_is_refused_naming_the_holder_and_free_again_after():
    with PhoneLocks(["127.0.0.1:5601"]):
        assert holder("127.0.0.1:5601")["pid"] == os.getpid()
        with pytest.raises(PhoneBusy, match=rf"phone 127.0.0.1:5601: in use by pid {os.getpid()} .*--wait-for-phone"):
            PhoneLocks(["127.0.0.1:5601"]).acquire()
        PhoneLocks(["127.0.0.1:5602"]).acquire().release()  # another phone is another lock
    assert holder("127.0.0.1:5601") is None
    PhoneLocks(["127.0.0.1:5601"]).acquire().release()


def test_the_adb_server_is_part_of_the_phone_name(monkeypatch):
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", "15037")
    assert phone_key("emulator-5554") == "127.0.0.1:15037/emulator-5554"
    assert phone_key("localhost:15037/emulator-5554") == "127.0.0.1:15037/emulator-5554"
    with PhoneLocks(["emulator-5554"]):
        with pytest.raises(PhoneBusy):
            PhoneLocks(["127.0.0.1:15037/emulator-5554"]).acquire()
        PhoneLocks(["10.0.0.7:5037/emulator-5554"]).acquire().release()


def _hold_in_child(serial: str) -> subprocess.Popen:
    code = ("import sys, time; from agent_host.runs.phone_lock import PhoneLocks; "
            f"l = PhoneLocks([{serial!r}]).acquire(); print('held', flush=True); time.sleep(600)")
    child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_dead_holders_lock_is_taken_over_and_a_waiter_gets_the_phone():
    child = _hold_in_child("p1")
    try:
        with pytest.raises(PhoneBusy, match=f"in use by pid {child.pid}"):
            PhoneLocks(["p1"]).acquire()
        t0 = time.monotonic()
        with pytest.raises(PhoneBusy):
            PhoneLocks(["p1"], wait=0.6).acquire()
        assert 0.5 < time.monotonic() - t0 < 5
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    with PhoneLocks(["p1"]):  # kill -9 leaves the file; the kernel dropped its lock
        assert holder("p1")["pid"] == os.getpid()


def _hosts(tmp: Path) -> Path:
    script = tmp / "oracle.yaml"
    script.write_text(f"suite: [{ROOT / 'tasks'}]\n")
    hosts = tmp / "h.yaml"
    hosts.write_text(f"id: h\ndescription: d\nhardware_class: x86-avx2\nbuilds:\n"
                     f"  - {{id: oracle, weight_path: scripted, server: policy, script: {script}}}\n")
    return hosts


def _run_cmd(hosts: Path, serial: str, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "agent_host", "run", "--builds", "oracle", "--host-profile", str(hosts),
            "--tasks", "wifi-on,dark-theme-on", "--repeats", "2", "--phones", serial, "--out", str(out),
            "--quiet", "--no-report", *extra]


def _outcomes(run: Path) -> list[str]:
    return [json.loads(line)["outcome"] for line in (run / "episodes.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_two_runs_on_one_phone_the_second_is_refused_or_waits(tmp_path, virtual_phone_factory):
    phone = virtual_phone_factory()
    hosts = _hosts(tmp_path)
    first = subprocess.Popen(_run_cmd(hosts, phone.serial, tmp_path / "a"), cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list((tmp_path / "a").glob("episodes/*/steps.jsonl")):
            time.sleep(0.1)
        second = subprocess.run(_run_cmd(hosts, phone.serial, tmp_path / "b"), cwd=ROOT,
                                capture_output=True, text=True, timeout=120)
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: phone {phone.serial}: in use by pid {first.pid}"), \
            second.stderr
        assert not (tmp_path / "b").exists()  # nothing written for the refused run
        devices = subprocess.run([sys.executable, "-m", "agent_host", "devices", "--json"], cwd=ROOT,
                                 capture_output=True, text=True, timeout=60)
        row = next(r for r in json.loads(devices.stdout) if r["serial"] == phone.serial)
        assert row["held_by"].startswith(f"pid {first.pid}")
        waiter = subprocess.run(_run_cmd(hosts, phone.serial, tmp_path / "c", "--wait-for-phone", "300"),
                                cwd=ROOT, capture_output=True, text=True, timeout=400)
        assert first.wait(120) == 0, first.stderr.read()
        assert waiter.returncode == 0, waiter.stderr
    finally:
        if first.poll() is None:
            first.kill()
    # one process at a time on the phone: both score what the oracle scores alone
    assert _outcomes(tmp_path / "a") == ["success"] * 4
    assert _outcomes(tmp_path / "c") == ["success"] * 4


def test_one_phone_under_two_names_is_one_lock(virtual_phone_factory):
    """Issue 32: runs given `127.0.0.1:P` and `localhost:P`, or the same phone through a second
    adb server, both took their lock and drove one phone together (9 of 48 episodes mislabelled).
    The lock is also keyed by what the device calls itself (ro.serialno)."""
    from virtual_phone import adb_server
    from fixtures_phone import _pick_port
    phone = virtual_phone_factory()
    other = virtual_phone_factory()
    second_server = _pick_port()
    adb_server.ensure_server(second_server)
    try:
        with PhoneLocks([phone.serial]):
            for name in (f"localhost:{phone.port}", f"127.0.0.1:{second_server}/{phone.serial}"):
                with pytest.raises(PhoneBusy, match=rf"phone {name}: in use by pid {os.getpid()} .*"
                                                    rf"\(the same device, ro.serialno VPHONE\d+, under another name\)"):
                    PhoneLocks([name]).acquire()
            PhoneLocks([other.serial]).acquire().release()      # another device is another lock
            assert holder(f"localhost:{phone.port}", f"VPHONE{phone.port:08d}")["pid"] == os.getpid()
        PhoneLocks([f"localhost:{phone.port}"]).acquire().release()
    finally:
        adb_server.kill_server(second_server)


def test_a_holder_that_has_not_yet_written_its_name_is_named_once_it_does():
    """CI: the refusal said 'in use by another process' when it read the lock file in the moment
    between the holder's flock and its write of its own name."""
    import fcntl
    import threading

    from agent_host.runs.lock import write_holder
    from agent_host.runs.phone_lock import lock_path, private_lock_dir

    private_lock_dir()
    path = lock_path("127.0.0.1:5611")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # taken, name not yet written
    late = threading.Timer(0.3, write_holder, (fd,))
    late.start()
    try:
        with pytest.raises(PhoneBusy, match=rf"in use by pid {os.getpid()}"):
            PhoneLocks(["127.0.0.1:5611"], identify=lambda s: None).acquire()
    finally:
        late.join()
        os.close(fd)
