"""One writer per run directory: an exclusive lock held for the life of a run or resume.

The lock is `flock` on `RUN_DIR/.lock`, removed again on release. The kernel drops the
flock when the holder exits in any way (kill -9 included), so a file left by a dead process
on this machine is stale and taken over. The file also names its holder (pid, host, command, start time): that is what a
refused second process prints, and it catches the one case flock cannot, a file system
shared between machines that does not pass locks on; then a holder on another host is
taken as alive, since this machine cannot see its processes, and the message says how to
clear it by hand.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from agent_host.config.records import NotOwnFile, open_own
from agent_host.config.secrets import redact_argv
from agent_host.errors import UserError

LOCK = ".lock"
# The holder writes its name microseconds after its flock; 5 s is generous, for a loaded
# 2-core machine that can deschedule it for over a second.
HOLDER_WRITE_WAIT_S = 5.0


class RunLocked(UserError):
    """Another process holds the run directory."""


def _holder_text(info: dict[str, object]) -> str:
    if not info.get("pid"):
        return "another process"
    cmd = command_text(info)
    return (f"pid {info.get('pid')} on {info.get('host')}"
            + (f" ({cmd})" if cmd else "") + (f" since {info.get('since')}" if info.get("since") else ""))


def command_text(info: dict[str, object]) -> str:
    """A holder's command line as shown, redacted again (a file an older version wrote may
    name a key)."""
    command = info.get("command")
    return " ".join(redact_argv(command if isinstance(command, list) else []))[:120]


def read_holder(fd: int) -> dict[str, object]:
    """What `write_holder` wrote ({} while nothing, or nothing readable, is there)."""
    try:
        raw = os.pread(fd, 4096, 0)
        data = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def holder_once_written(fd: int) -> dict[str, object]:
    """The holder's name, read from a lock file someone else holds. The holder writes it just
    after taking the flock, so a file still empty is read again for a moment rather than
    reported as a nameless holder."""
    deadline = time.monotonic() + HOLDER_WRITE_WAIT_S
    info = read_holder(fd)
    while not info and time.monotonic() < deadline:
        time.sleep(0.01)
        info = read_holder(fd)
    return info


def write_holder(fd: int, **extra: str) -> None:
    """Name this process in an flock'ed lock file (what a refused process quotes and
    `agent-host devices` shows): its command line redacted, a key given as --api-key too."""
    me = {"pid": os.getpid(), **extra, "command": redact_argv(sys.argv)[:8],
          "since": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)


def _pid_alive(pid: Any) -> bool:   # Any: whatever a lock file holds; int() tells a pid
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True
    return True


class RunLock:
    """`with RunLock(run_dir):` ... ; raises RunLocked naming the holder."""

    def __init__(self, run_dir: Path):
        self.dir = Path(run_dir)
        self.path = self.dir / LOCK
        self._fd: int | None = None

    def _read(self, fd: int) -> dict[str, object]:
        return read_holder(fd)

    def acquire(self) -> "RunLock":
        for _ in range(20):
            try:
                fd = self._try_acquire()
            except OSError as exc:  # a full or read-only disk, a directory we may not write
                raise RunLocked(f"{self.dir}: cannot take the run lock {self.path} "
                                f"({exc.strerror or exc})") from None
            if fd is not None:
                self._fd = fd
                return self
        raise RunLocked(f"{self.dir}: could not take {self.path} (it keeps being replaced)")

    def _try_acquire(self) -> int | None:
        """The locked fd; None when the file was removed or replaced while we locked it (a
        holder releasing): then the caller tries again on the new file."""
        try:
            fd = open_own(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except NotOwnFile as exc:  # a link there would have us overwrite its target
            raise RunLocked(str(exc)) from None
        try:
            flocked = True
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise RunLocked(f"{self.dir}: in use by {_holder_text(holder_once_written(fd))}; "
                                f"one run or resume per run directory at a time") from None
            except OSError as exc:
                if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                    raise
                flocked = False  # no flock on this file system: the holder file alone decides
            try:
                current = os.lstat(self.path).st_ino
            except FileNotFoundError:
                current = None
            if current != os.fstat(fd).st_ino:
                os.close(fd)
                return None
            info = self._read(fd)
            if info and info.get("pid") != os.getpid() and info.get("host") != socket.gethostname():
                raise RunLocked(f"{self.dir}: in use by {_holder_text(info)} (another machine, so this one "
                                f"cannot tell whether it still runs); if it does not, delete {self.path}")
            if info and info.get("host") == socket.gethostname() and info.get("pid") != os.getpid() \
                    and _pid_alive(info.get("pid")) and not flocked:
                raise RunLocked(f"{self.dir}: in use by {_holder_text(info)}")
            write_holder(fd, host=socket.gethostname())
        except BaseException:
            os.close(fd)
            raise
        return fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        # Removed while still locked: a process that opened the old file finds it replaced
        # (inode check in _try_acquire) and tries again.
        try:
            os.unlink(self.path)
        except OSError:  # a read-only disk: the kernel still drops the flock on close
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
        finally:
            os.close(fd)

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
