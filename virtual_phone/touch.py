"""One finger's down/move/up sequence, as injected by uiautomator2's `injectInputEvent`, told apart
into what Android's GestureDetector would make of it: a tap, a long press or a drag.

The thresholds are Android 14's ViewConfiguration defaults on this phone's 420 dpi screen
(density 2.625): touch slop 8 dp = 21 px, long-press timeout 400 ms. A double tap is two taps
in a row, which is what the apps here see of one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

ACTION_DOWN, ACTION_UP, ACTION_MOVE, ACTION_CANCEL = 0, 1, 2, 3
TOUCH_SLOP_PX = 21
LONG_PRESS_S = 0.4


@dataclass(frozen=True)
class Gesture:
    kind: str                      # "tap", "long", "drag"
    start: tuple[int, int]
    end: tuple[int, int]


@dataclass
class Touch:
    """The pointer state between injected events (None when no finger is down)."""
    down_at: tuple[int, int] | None = None
    down_time: float = 0.0
    moved: bool = False
    path: list[tuple[int, int]] = field(default_factory=list)

    def event(self, action: int, x: int, y: int, now: float | None = None) -> Gesture | None:
        """Feed one event; the gesture it completes, if any. Unknown actions raise ValueError."""
        now = time.monotonic() if now is None else now
        if action == ACTION_DOWN:
            self.down_at, self.down_time, self.moved, self.path = (x, y), now, False, [(x, y)]
            return None
        if action not in (ACTION_MOVE, ACTION_UP, ACTION_CANCEL):
            raise ValueError(f"unsupported action {action}")
        if self.down_at is None:
            return None          # a move or up with no finger down is dropped, as InputDispatcher does
        if action == ACTION_CANCEL:
            self.down_at = None
            return None
        self.path.append((x, y))
        fx, fy = self.down_at
        if abs(x - fx) > TOUCH_SLOP_PX or abs(y - fy) > TOUCH_SLOP_PX:
            self.moved = True
        if action == ACTION_MOVE:
            return None
        self.down_at = None
        if self.moved:
            return Gesture("drag", (fx, fy), (x, y))
        return Gesture("long" if now - self.down_time >= LONG_PRESS_S else "tap", (fx, fy), (fx, fy))
