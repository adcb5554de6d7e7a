"""The phone's log buffer (what `log` writes and `logcat` reads) and logcat's output formats.

Formats as AOSP liblog's logprint.cpp writes them: threadtime (logcat's default)
`MM-DD HH:MM:SS.mmm  PID  TID L TAG     : message`, time `MM-DD HH:MM:SS.mmm L/TAG( PID): message`,
brief `L/TAG( PID): message`, tag `L/TAG: message`, raw `message`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

LEVELS = "VDIWEF"          # verbose .. fatal; S (silent) is above them all
MAX_ENTRIES = 5000          # a ring buffer: the oldest entries go first


@dataclass(frozen=True)
class Entry:
    ms: int
    pid: int
    tid: int
    level: str
    tag: str
    msg: str


@dataclass
class LogBuffer:
    entries: list[Entry] = field(default_factory=list)
    now_ms: Callable[[], int] = lambda: int(time.time() * 1000)   # the phone's clock (Ui hands it in)
    dropped: int = 0        # entries gone from the front, so readers can follow by absolute index
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def write(self, level: str, tag: str, msg: str, pid: int = 4242, ms: int | None = None) -> None:
        ms = self.now_ms() if ms is None else ms
        with self._lock:
            for line in msg.split("\n"):
                self.entries.append(Entry(ms, pid, pid, level, tag, line))
            over = len(self.entries) - MAX_ENTRIES
            if over > 0:
                del self.entries[:over]
                self.dropped += over

    def clear(self) -> None:
        with self._lock:
            self.dropped += len(self.entries)
            self.entries.clear()

    def since(self, index: int) -> tuple[list[Entry], int]:
        """Entries from absolute index `index` on, and the index after them."""
        with self._lock:
            start = max(0, index - self.dropped)
            return list(self.entries[start:]), self.dropped + len(self.entries)


def format_entry(e: Entry, fmt: str) -> str:
    t = time.gmtime(e.ms / 1000)
    stamp = time.strftime("%m-%d %H:%M:%S", t) + f".{e.ms % 1000:03d}"
    if fmt == "time":
        return f"{stamp} {e.level}/{e.tag}({e.pid:5d}): {e.msg}\n"
    if fmt == "brief":
        return f"{e.level}/{e.tag:<8}({e.pid:5d}): {e.msg}\n"
    if fmt == "tag":
        return f"{e.level}/{e.tag}: {e.msg}\n"
    if fmt == "raw":
        return e.msg + "\n"
    return f"{stamp} {e.pid:5d} {e.tid:5d} {e.level} {e.tag:<8}: {e.msg}\n"


def matches(e: Entry, specs: dict[str, str], default: str) -> bool:
    """Filterspecs TAG:LEVEL; `default` is the level for other tags ("V" all, "S" none)."""
    want = specs.get(e.tag, specs.get("*", default))
    return want != "S" and LEVELS.index(e.level) >= LEVELS.index(want)
