"""Server processes: own process group, die with the controller, reaped if they outlive it.

Three layers make sure nothing stays running:
1. `stop_group` sends SIGTERM to the whole process group, then SIGKILL after a grace period.
2. The child asks the kernel (prctl PR_SET_PDEATHSIG) for a signal when its parent dies, so
   a SIGKILLed controller takes its server with it. Linux delivers it when the *thread* that
   forked exits, so forks from other threads than the main one go through one long-lived
   spawner thread.
3. Every server gets a pidfile under the cache directory (`servers/`). `reap_orphans()` (run
   at each start) kills the groups whose controller is gone. A server whose controller is
   still alive (another agent-host process) is never touched.

Process facts come from /proc (no psutil); start times guard against reused pids.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from agent_host.serving.paths import cache_root

PR_SET_PDEATHSIG = 1


def _pdeathsig(sig: int) -> None:
    """preexec_fn: ask for `sig` when the parent thread dies. Runs in the child after fork."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except Exception:  # not Linux: the pidfile reaping still applies
        pass


def proc_start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (clock ticks since boot), or None if there is no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm (field 2) may contain spaces and parentheses: split after the last ')'
    rest = raw[raw.rindex(")") + 2:].split()
    return int(rest[19])


def proc_state(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return raw[raw.rindex(")") + 2:].split()[0]


def group_members(pgid: int) -> list[int]:
    """Pids of live (non-zombie) processes in process group `pgid`, read from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        rest = raw[raw.rindex(")") + 2:].split()
        if rest[0] != "Z" and int(rest[2]) == pgid:
            out.append(int(entry))
    return out


def alive(pid: int, start_time: int | None = None) -> bool:
    st = proc_state(pid)
    if st is None or st == "Z":
        return False
    return start_time is None or proc_start_time(pid) == start_time


_spawner: ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()


def spawn(argv: list[str], *, env: dict[str, str], log_path: Path,
          death_signal: int = signal.SIGTERM) -> subprocess.Popen[bytes]:
    """Start `argv` in a new session (its own process group), output appended to `log_path`.

    PR_SET_PDEATHSIG fires when the forking *thread* exits, so a call from any thread but the
    main one forks from one long-lived spawner thread instead: a server started by a short-lived
    worker thread does not die with that thread.
    """
    if threading.current_thread() is threading.main_thread():
        return _spawn(argv, env, log_path, death_signal)
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-host-spawner")
    return _spawner.submit(_spawn, argv, env, log_path, death_signal).result()


def _spawn(argv: list[str], env: dict[str, str], log_path: Path, death_signal: int) -> subprocess.Popen[bytes]:
    from agent_host.config.records import open_own
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # open_own: a FIFO in the log's place would block this open for ever (and a link would
    # have the server write elsewhere); refused in one line instead
    with open(open_own(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as log:
        return subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True,
            preexec_fn=lambda: _pdeathsig(death_signal),
        )


def stop_group(pgid: int, *, grace: float = 10.0, proc: subprocess.Popen[bytes] | None = None) -> bool:
    """SIGTERM the group, wait up to `grace` seconds, then SIGKILL what is left.

    Returns True if the group had to be killed. Reaps `proc` (our direct child) if given.
    """
    killed = False
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc is not None:
            proc.poll()
        if not group_members(pgid):
            break
        time.sleep(0.05)
    else:
        killed = True
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        end = time.monotonic() + 5
        while group_members(pgid) and time.monotonic() < end:
            if proc is not None:
                proc.poll()
            time.sleep(0.05)
    if proc is not None:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    return killed


# ---------------------------------------------------------------------------- pidfiles

def pidfile_dir() -> Path:
    return cache_root() / "servers"


@dataclass
class PidRecord:
    pid: int
    start_time: int | None
    controller_pid: int
    controller_start_time: int | None
    build_id: str
    port: int | None
    argv: list[str]

    @property
    def path(self) -> Path:
        return pidfile_dir() / f"{self.pid}.json"


def write_pidfile(proc: subprocess.Popen[bytes], *, build_id: str, port: int | None, argv: list[str]) -> PidRecord:
    me = os.getpid()
    rec = PidRecord(pid=proc.pid, start_time=proc_start_time(proc.pid), controller_pid=me,
                    controller_start_time=proc_start_time(me), build_id=build_id, port=port, argv=argv)
    rec.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = rec.path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec.__dict__))
    os.replace(tmp, rec.path)
    return rec


def remove_pidfile(rec: PidRecord) -> None:
    try:
        rec.path.unlink()
    except FileNotFoundError:
        pass


def reap_orphans(*, grace: float = 5.0) -> list[PidRecord]:
    """Kill servers whose controller died without stopping them; return what was reaped."""
    reaped: list[PidRecord] = []
    d = pidfile_dir()
    if not d.is_dir():
        return reaped
    for f in sorted(d.glob("*.json")):
        try:
            rec = PidRecord(**json.loads(f.read_text()))
        except (OSError, ValueError, TypeError):
            f.unlink(missing_ok=True)
            continue
        if alive(rec.controller_pid, rec.controller_start_time):
            continue  # its controller still runs: not ours to touch
        if alive(rec.pid, rec.start_time):
            # the server leads its own group (start_new_session), so pgid == pid
            stop_group(rec.pid, grace=grace)
            reaped.append(rec)
        elif proc_state(rec.pid) is None and group_members(rec.pid):
            # leader gone, children left behind (the kernel does not reuse a pid while it
            # still names a process group, so these are the server's)
            stop_group(rec.pid, grace=grace)
            reaped.append(rec)
        f.unlink(missing_ok=True)
    return reaped
