"""One process drives a phone at a time: an exclusive lock per phone, held for the life of a
run, a resume, an episode, a `tasks check-solutions` or a demo.

Two runs on one phone interleave their actions: each one's episodes land on the other's
screens and are counted as model failures, silently. So the lock is taken before anything
touches the phone or writes a run directory, and a second process is refused in one line
naming the holder (or waits, `--wait-for-phone`).

A phone is named by the adb server it is reached through and its serial (`HOST:PORT/SERIAL`,
a plain serial being the local server's, ANDROID_ADB_SERVER_PORT or 5037), and is locked under
that name and under what it calls itself (`ro.serialno`, read over adb before the lock): one
device given as `127.0.0.1:P` and `localhost:P`, or reached through two adb servers, is one
lock (a phone whose identity cannot be read is locked by its name alone). The lock is `flock`
on one file per phone under the lock directory (AGENT_HOST_LOCK_DIR, else
`$XDG_RUNTIME_DIR/agent-host/phones`, else `/tmp/agent-host-<uid>/phones`). That folder has a
predictable name in a shared /tmp, so it must be this user's, mode 0700 and no symlink, and
each lock file is opened without following a link (`open_own`): a link another user planted
there once had its target truncated. The kernel drops a flock when its holder exits in any way
(kill -9 included), so a lock left by a dead process is stale and simply taken over. The file
names its holder (pid, command, since) for the refusal message and for `agent-host devices`.
Phones are locked in sorted order, so two processes waiting for overlapping sets cannot
deadlock.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from agent_host.config.records import NotOwnFile, open_own
from agent_host.errors import UserError
from agent_host.runs.lock import command_text, holder_once_written, read_holder, write_holder

LOCK_DIR_ENV = "AGENT_HOST_LOCK_DIR"
POLL_S = 0.25


class PhoneBusy(UserError):
    """Another process holds the phone."""


class LockDirUnsafe(UserError):
    """The lock folder is not this user's private folder."""


def lock_dir() -> Path:
    raw = os.environ.get(LOCK_DIR_ENV, "").strip()
    if raw:
        return Path(raw)
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and _usable_runtime_dir(Path(runtime)):
        return Path(runtime) / "agent-host" / "phones"
    return Path("/tmp") / f"agent-host-{os.getuid()}" / "phones"


def _usable_runtime_dir(path: Path) -> bool:
    """$XDG_RUNTIME_DIR as the spec makes it: an absolute path to this user's own directory
    that nobody else may write; anything else falls back to /tmp."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (path.is_absolute() and stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & 0o022 and os.access(path, os.W_OK | os.X_OK))


def private_lock_dir() -> Path:
    """The lock folder, made (or checked) this user's own, mode 0700, not a symlink, with
    the folder above it when agent-host named that too: whoever owns a folder on the path
    can swap what is below it."""
    path = lock_dir()
    if not os.environ.get(LOCK_DIR_ENV, "").strip():
        _private_dir(path.parent)
    _private_dir(path)
    return path


def _private_dir(path: Path) -> None:
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        _private_dir(path)
        return
    except OSError as exc:
        raise LockDirUnsafe(f"phone lock folder {path}: cannot make it ({exc.strerror or exc}); "
                            f"set {LOCK_DIR_ENV} to a folder of your own") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        what = ("a symbolic link" if exc.errno == errno.ELOOP or path.is_symlink()
                else "not a directory" if exc.errno == errno.ENOTDIR else exc.strerror or str(exc))
        raise LockDirUnsafe(f"phone lock folder {path}: {what}; refused (set {LOCK_DIR_ENV} "
                            f"to a folder of your own)") from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            raise LockDirUnsafe(f"phone lock folder {path}: owned by uid {st.st_uid}, not by this user "
                                f"(uid {os.getuid()}); refused (set {LOCK_DIR_ENV} to a folder of your own)")
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.fchmod(fd, 0o700)  # ours, so making it private again is safe (older versions made it 0755)
    finally:
        os.close(fd)


def phone_key(spec: str) -> str:
    """`HOST:PORT/SERIAL` for any serial: a plain serial is the local adb server's."""
    if "/" in spec:
        server, _, serial = spec.partition("/")
        host, _, port = server.rpartition(":")
        if host in ("localhost", "::1", "[::1]"):
            host = "127.0.0.1"
        return f"{host}:{port}/{serial}"
    port = os.environ.get("ANDROID_ADB_SERVER_PORT", "").strip() or "5037"
    return f"127.0.0.1:{port}/{spec}"


def _lock_file(name: str) -> Path:
    return lock_dir() / (re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".lock")


def lock_path(spec: str) -> Path:
    return _lock_file(phone_key(spec))


def identity_lock_path(identity: str) -> Path:
    """The lock of a device by what it calls itself (ro.serialno), whatever name reached it."""
    return _lock_file("device-" + identity)


def _identity(spec: str) -> str | None:
    from agent_host.phone.device import device_identity
    return device_identity(spec)


_read = read_holder


def describe(info: dict[str, object]) -> str:
    if not info.get("pid"):
        return "another process"
    cmd = command_text(info)
    return (f"pid {info['pid']}" + (f" ({cmd})" if cmd else "")
            + (f" since {info['since']}" if info.get("since") else ""))


def holder(spec: str, identity: str | None = None) -> dict[str, object] | None:
    """Who holds the phone's lock now (pid, command, since), under the name given or, with
    `identity`, under what the device calls itself; None when it is free."""
    return _holder(lock_path(spec)) or (_holder(identity_lock_path(identity)) if identity else None)


def _holder(path: Path) -> dict[str, object] | None:
    try:
        fd = open_own(path, os.O_RDONLY)
    except (OSError, NotOwnFile):
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd) or {"pid": None}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class PhoneLocks:
    """`with PhoneLocks(serials, wait=None):` ...; raises PhoneBusy naming the holder.

    `wait`: seconds to wait for a held phone (None or 0: refuse at once; inf: forever)."""

    def __init__(self, serials: Sequence[str], *, wait: float | None = None,
                 identify: Callable[[str], str | None] = _identity):
        self.serials = sorted(set(serials), key=phone_key)
        self.wait = wait or 0.0
        self.identify = identify
        self._fds: list[int] = []

    def _locks(self) -> list[tuple[Path, str, str]]:
        """(lock file, the name given, what the refusal adds) for each phone under its name and
        under what it calls itself, in one sorted order (two processes cannot deadlock)."""
        locks = {lock_path(s): (s, "") for s in self.serials}
        for s in self.serials:
            ident = self.identify(s)
            if ident:
                locks.setdefault(identity_lock_path(ident), (s, f" (the same device, ro.serialno {ident}, "
                                                                f"under another name)"))
        return [(path, *locks[path]) for path in sorted(locks)]

    def _take(self, path: Path, spec: str, why: str, deadline: float) -> int:
        try:
            private_lock_dir()
            fd = open_own(path, os.O_RDWR | os.O_CREAT, 0o600)
            os.fchmod(fd, 0o600)  # the holder's command line is nobody else's business
        except NotOwnFile as exc:
            raise PhoneBusy(f"phone {spec}: lock {exc}") from None
        except OSError as exc:
            raise PhoneBusy(f"phone {spec}: cannot take its lock {path} ({exc.strerror or exc}); "
                            f"set {LOCK_DIR_ENV} to a writable directory") from None
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise PhoneBusy(
                            f"phone {spec}: in use by {describe(holder_once_written(fd))}{why}; one process per phone "
                            f"at a time (--wait-for-phone S waits for it)") from None
                    time.sleep(POLL_S)
            write_holder(fd)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def acquire(self) -> "PhoneLocks":
        deadline = time.monotonic() + self.wait
        try:
            for path, spec, why in self._locks():
                self._fds.append(self._take(path, spec, why, deadline))
        except BaseException:
            self.release()
            raise
        return self

    def release(self) -> None:
        fds, self._fds = self._fds, []
        for fd in fds:
            try:
                os.ftruncate(fd, 0)  # no holder named once it is free
            except OSError:
                pass
            os.close(fd)  # drops the flock

    def __enter__(self) -> "PhoneLocks":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
