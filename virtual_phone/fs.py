"""In-memory file system of the virtual phone.

Shared by the world (shell commands such as `ls`, `cat`, `toybox md5sum`) and the transport
(sync STAT/LIST/RECV/SEND), so it is guarded by one lock: adbd serves streams from an asyncio
loop while blocking world calls run in executor threads.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat as _stat
import threading
import time
from dataclasses import dataclass

DIR_MODE = 0o040755
FILE_MODE = 0o100644

# Directories a freshly booted device has; the clients rely on the first two.
DEFAULT_DIRS = ("/", "/data", "/data/local", "/data/local/tmp", "/sdcard", "/system", "/system/bin")


@dataclass(frozen=True)
class FileStat:
    mode: int
    size: int
    mtime: int

    @property
    def is_dir(self) -> bool:
        return _stat.S_ISDIR(self.mode)


@dataclass
class _Node:
    mode: int
    mtime: int
    data: bytes = b""


def normpath(path: str) -> str:
    """Absolute, normalised path; a relative path is taken from `/` as adbd's cwd is `/`."""
    if not path.startswith("/"):
        path = "/" + path
    norm = posixpath.normpath(path)
    # posixpath keeps a leading "//" (POSIX allows it to mean something else); Android does not.
    return "/" + norm.lstrip("/")


class VirtualFS:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._nodes: dict[str, _Node] = {}
        now = int(time.time())
        for d in DEFAULT_DIRS:
            self._nodes[d] = _Node(DIR_MODE, now)

    # --- queries -------------------------------------------------------------------------

    def exists(self, path: str) -> bool:
        with self._lock:
            return normpath(path) in self._nodes

    def stat(self, path: str) -> FileStat | None:
        with self._lock:
            node = self._nodes.get(normpath(path))
            if node is None:
                return None
            return FileStat(node.mode, len(node.data), node.mtime)

    def read(self, path: str) -> bytes:
        p = normpath(path)
        with self._lock:
            node = self._nodes.get(p)
            if node is None:
                raise FileNotFoundError(p)
            if _stat.S_ISDIR(node.mode):
                raise IsADirectoryError(p)
            return node.data

    def listdir(self, path: str) -> list[tuple[str, FileStat]]:
        p = normpath(path)
        with self._lock:
            node = self._nodes.get(p)
            if node is None:
                raise FileNotFoundError(p)
            if not _stat.S_ISDIR(node.mode):
                raise NotADirectoryError(p)
            out: list[tuple[str, FileStat]] = []
            for child, n in self._nodes.items():
                if child != p and posixpath.dirname(child) == p:
                    out.append((posixpath.basename(child), FileStat(n.mode, len(n.data), n.mtime)))
            return sorted(out)

    # --- mutations -----------------------------------------------------------------------

    def mkdir(self, path: str, mode: int = DIR_MODE) -> None:
        """Create `path` and missing parents (like `mkdir -p`); existing directories are fine."""
        p = normpath(path)
        with self._lock:
            parts = [x for x in p.split("/") if x]
            cur = ""
            for part in parts:
                cur = f"{cur}/{part}"
                node = self._nodes.get(cur)
                if node is None:
                    self._nodes[cur] = _Node(mode | _stat.S_IFDIR, int(time.time()))
                elif not _stat.S_ISDIR(node.mode):
                    raise NotADirectoryError(cur)

    def write(self, path: str, data: bytes, mode: int = FILE_MODE, mtime: int | None = None) -> None:
        """Create or replace a regular file; parent directories are created as adb push does."""
        p = normpath(path)
        if p == "/":
            raise IsADirectoryError(p)
        with self._lock:
            existing = self._nodes.get(p)
            if existing is not None and _stat.S_ISDIR(existing.mode):
                raise IsADirectoryError(p)
            self.mkdir(posixpath.dirname(p))
            # sync SEND carries bare permission bits; keep the file type either way.
            if not _stat.S_IFMT(mode):
                mode |= _stat.S_IFREG
            self._nodes[p] = _Node(mode, int(time.time()) if mtime is None else int(mtime), bytes(data))

    def remove(self, path: str) -> None:
        """Remove a file, or a directory with everything below it (like `rm -rf`)."""
        p = normpath(path)
        with self._lock:
            if p not in self._nodes:
                raise FileNotFoundError(p)
            if p == "/":
                raise PermissionError(p)
            prefix = p + "/"
            for key in [k for k in self._nodes if k == p or k.startswith(prefix)]:
                del self._nodes[key]

    def move(self, src: str, dst: str) -> None:
        """rename(2): a file or a whole directory to a new path, mtimes kept (a rename touches no data).

        As rename(2) fails, with the errno as an OSError (so FileNotFoundError, IsADirectoryError,
        ... as Python maps them): ENOENT for a missing source or destination folder, EINVAL for a
        directory into itself, EISDIR for a file onto a directory, ENOTDIR for a directory onto a
        file, ENOTEMPTY onto a directory with something in it; an empty one, or a file, is replaced.
        """
        s, d = normpath(src), normpath(dst)
        with self._lock:
            if s not in self._nodes or posixpath.dirname(d) not in self._nodes:
                raise _err(errno.ENOENT, src)
            if s == d:
                return
            if s == "/" or d.startswith(s + "/"):
                raise _err(errno.EINVAL, src)
            self._make_room(self._nodes[s], d)
            prefix = s + "/"
            for key in [k for k in self._nodes if k == s or k.startswith(prefix)]:
                self._nodes[d + key[len(s):]] = self._nodes.pop(key)

    def _make_room(self, moving: _Node, d: str) -> None:
        """Clear `d` for a rename of `moving` onto it, or raise what rename(2) would."""
        target = self._nodes.get(d)
        if target is None:
            return
        src_dir, dst_dir = _stat.S_ISDIR(moving.mode), _stat.S_ISDIR(target.mode)
        if dst_dir and not src_dir:
            raise _err(errno.EISDIR, d)
        if src_dir and not dst_dir:
            raise _err(errno.ENOTDIR, d)
        if dst_dir and any(k.startswith(d + "/") for k in self._nodes):
            raise _err(errno.ENOTEMPTY, d)
        del self._nodes[d]


def _err(code: int, path: str) -> OSError:
    return OSError(code, os.strerror(code), path)
