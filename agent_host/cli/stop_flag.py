"""A stop request that a signal handler may set.

`threading.Event.set` takes the lock that `Event.wait` holds while it checks the flag, and a
Python signal handler runs in the main thread between any two bytecodes: a handler that sets an
Event the main thread is waiting on can find that lock held by the thread it interrupted, and
waits for itself forever (`phone start` hung on SIGTERM about one time in two after a
SIGSTOP/SIGCONT). A plain attribute write is atomic and takes no lock."""

from __future__ import annotations

import time

POLL_S = 0.1


class StopFlag:
    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float) -> bool:
        """True once set; False after `timeout` seconds (polled, never under a lock)."""
        end = time.monotonic() + timeout
        while not self._set and (left := end - time.monotonic()) > 0:
            time.sleep(min(POLL_S, left))
        return self._set
