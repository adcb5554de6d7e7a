"""One writer per run directory, and whole-file writes that never collide.

Before: a run and a `--resume` of the same directory at once wrote 46 records for 24
planned episodes, both exiting 0; two fresh starts at once hit `FileNotFoundError` on the
shared `.manifest.json.tmp` in 1 of 3 tries."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agent_host.config.records import write_json_atomic
from agent_host.runs.lock import LOCK, RunLock, RunLocked

HOLD = """
import sys, time
from agent_host.runs.lock import RunLock
lock = RunLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(60)
"""


def hold_in_child(run_dir: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "held"
    return p


def test_a_second_holder_is_refused_naming_the_first(tmp_path):
    with RunLock(tmp_path):
        with pytest.raises(RunLocked) as e:
            RunLock(tmp_path).acquire()
        msg = str(e.value)
        assert f"pid {os.getpid()} on {socket.gethostname()}" in msg and "\n" not in msg
    assert not (tmp_path / LOCK).exists()          # released: nothing left behind
    with RunLock(tmp_path):                         # and free again
        pass


def test_a_holder_killed_with_sigkill_leaves_a_stale_lock_that_is_taken_over(tmp_path):
    child = hold_in_child(tmp_path)
    try:
        with pytest.raises(RunLocked, match=f"pid {child.pid}"):
            RunLock(tmp_path).acquire()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert json.loads((tmp_path / LOCK).read_text())["pid"] == child.pid   # the stale file is there
    with RunLock(tmp_path):
        assert json.loads((tmp_path / LOCK).read_text())["pid"] == os.getpid()


def test_a_holder_on_another_host_is_respected(tmp_path):
    (tmp_path / LOCK).write_text(json.dumps({"pid": 1, "host": "elsewhere.example", "since": "x"}))
    with pytest.raises(RunLocked, match=r"pid 1 on elsewhere\.example.*delete .*\.lock"):
        RunLock(tmp_path).acquire()
    # a dead pid on this host is stale
    (tmp_path / LOCK).write_text(json.dumps({"pid": 2 ** 22 + 7, "host": socket.gethostname()}))
    with RunLock(tmp_path):
        pass


def test_concurrent_lockers_get_exactly_one_holder(tmp_path):
    """Eight threads race for the lock (each with its own file description) many times."""
    for _ in range(30):
        held, refused = [], []
        barrier = threading.Barrier(8)

        def go():
            barrier.wait()
            try:
                lock = RunLock(tmp_path).acquire()
            except RunLocked:
                refused.append(1)
                return
            held.append(lock)

        threads = [threading.Thread(target=go) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(held) == 1 and len(refused) == 7
        held[0].release()


def test_atomic_json_writes_from_many_writers_never_collide(tmp_path):
    target = tmp_path / "manifest.json"
    errors = []

    def writer(n):
        try:
            for i in range(200):
                write_json_atomic(target, {"writer": n, "i": i})
        except Exception as exc:  # the old shared '.manifest.json.tmp' raised FileNotFoundError here
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert json.loads(target.read_text())["i"] == 199
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_a_failed_write_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "x.json"
    target.write_text("old\n")
    with pytest.raises(TypeError):
        write_json_atomic(target, {1j: 2})  # a key JSON cannot write
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_a_holder_that_has_not_yet_written_its_name_is_still_named(tmp_path):
    """Before: CI failed once when the refused process read the lock file in the instant between
    the holder's flock and its write, and said 'in use by another process' without a pid."""
    import fcntl
    import time

    fd = os.open(tmp_path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # locked, still empty: the holder's first instant

    def write_name_late():
        time.sleep(0.05)
        os.pwrite(fd, (json.dumps({"pid": 4242, "host": socket.gethostname()}) + "\n").encode(), 0)

    writer = threading.Thread(target=write_name_late)
    writer.start()
    try:
        with pytest.raises(RunLocked, match="in use by pid 4242"):
            RunLock(tmp_path).acquire()
    finally:
        writer.join()
        os.close(fd)
