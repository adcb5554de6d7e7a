"""The phone's one clock: what `date`, System.currentTimeMillis() as the apps see it, the status bar,
alarms, SMS and call dates and the log read, and what `uptime` counts from.

It runs with the host's wall clock (a second on the phone is a second here: `sleep` and timed
gestures really wait), shifted by an offset a test can set or advance:

    phone.world.state.clock.set(1_798_761_600)   # 2027-01-01 00:00 UTC
    phone.world.state.clock.advance(3600)        # an hour later (uptime too)

`set` moves only the wall clock, as `date -s` would; `advance` is time passing, so the time
since boot moves as well.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

BOOTED_BEFORE_S = 3600.0     # a fresh phone has been up an hour


@dataclass
class PhoneClock:
    offset_s: float = 0.0
    _elapsed_extra_s: float = 0.0
    _start_mono: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def now(self) -> float:
        """Seconds since the epoch on the phone (UTC: the phone's timezone is GMT)."""
        return time.time() + self.offset_s

    def now_ms(self) -> int:
        return int(self.now() * 1000)

    def elapsed(self) -> float:
        """Seconds since boot (SystemClock.elapsedRealtime / 1000)."""
        return time.monotonic() - self._start_mono + BOOTED_BEFORE_S + self._elapsed_extra_s

    def set(self, epoch_s: float) -> None:
        with self._lock:
            self.offset_s = float(epoch_s) - time.time()

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.offset_s += float(seconds)
            self._elapsed_extra_s += float(seconds)

    def gmtime(self) -> time.struct_time:
        return time.gmtime(self.now())


def clock_text(hour: int, minute: int, h24: bool, *, am_pm: bool = True) -> str:
    """A time of day as the phone shows it (DateFormat.getTimeFormat for en-US): "7:30 AM" on the
    12-hour clock ("7:30" where the view leaves out the AM/PM, as the status bar does), "07:30"
    on the 24-hour one (Settings > System > Date & time, `settings put system time_12_24 24`).
    The one place times on screen are formatted; shell readers report raw values instead."""
    if h24:
        return f"{hour:02d}:{minute:02d}"
    text = f"{hour % 12 or 12}:{minute:02d}"
    return f"{text} {'AM' if hour < 12 else 'PM'}" if am_pm else text


def time_text(epoch_ms: int, h24: bool, *, am_pm: bool = True) -> str:
    """clock_text of an instant (the phone's timezone is GMT)."""
    t = time.gmtime(epoch_ms / 1000)
    return clock_text(t.tm_hour, t.tm_min, h24, am_pm=am_pm)
