"""Total deadlines that nothing can outwait.

A socket timeout bounds the gap between bytes, not the call: a server that sends its headers
and then one byte a second, or a phone frozen mid-answer (SIGSTOP), holds a call forever
while every read "makes progress". `call(fn, limit, what)` runs `fn` on a daemon thread and
waits at most `limit` seconds (and no longer than the innermost `deadline()` block has left);
past that it raises `Overdue` and abandons the thread, which ends when its peer finally
answers or closes. The caller labels the fault (the phone's, the server's) and the run
retries the episode as usual.

`deadline(seconds)` scopes a total budget (an episode's) over every watched call inside it,
including calls made from threads that copied the context (contextvars). Every duration is
taken from the monotonic clock, and `elapsed()` never goes below zero even where a test
harness (libfaketime) steps the monotonic clock back too.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token, copy_context
from typing import Any, TypeVar

T = TypeVar("T")

_DEADLINE: ContextVar[tuple[float, str] | None] = ContextVar("watchdog_deadline", default=None)
_INSIDE: ContextVar[bool] = ContextVar("inside_watched_call", default=False)
_abandoned: list[str] = []   # calls given up on; their threads may hold locks until they end


class Overdue(Exception):
    """A watched call did not return in time; `limit` is the budget it had, `scope` what set it
    ("call" for the call's own limit, else the enclosing deadline's name)."""

    def __init__(self, what: str, limit: float, scope: str):
        self.what, self.limit, self.scope = what, limit, scope
        by = "" if scope == "call" else f" ({scope})"
        super().__init__(f"{what}: no answer within {limit:.3g} s{by}")


def abandoned() -> int:
    """How many calls this process gave up on. Their threads may still hold a library's locks
    (uiautomator2's atexit hook waits for the one its stuck connect holds), so a process that
    abandoned any exits without running atexit hooks (cli.entry)."""
    return len(_abandoned)


def elapsed(t0: float) -> float:
    """Seconds since the monotonic time `t0`, never negative."""
    return max(0.0, time.monotonic() - t0)


@contextmanager
def timed(into: object, name: str) -> Iterator[float]:
    """Add the seconds the block takes to `into.<name>` (a PhaseTimes field, say), however the
    block ends; the block gets its start time. One helper instead of paired clock reads around
    each phase. `into` is any object because this module imports nothing of the project."""
    t0 = time.monotonic()
    try:
        yield t0
    finally:
        setattr(into, name, getattr(into, name) + elapsed(t0))


def enter(seconds: float | None, name: str = "deadline") -> Token[tuple[float, str] | None]:
    """Start a deadline `seconds` from now (an enclosing, earlier one still wins); hand the
    token to `leave()`. `deadline()` is the block form."""
    if seconds is None or math.isinf(seconds):
        return _DEADLINE.set(_DEADLINE.get())
    end = time.monotonic() + max(0.0, seconds)
    outer = _DEADLINE.get()
    return _DEADLINE.set((end, name) if outer is None or end < outer[0] else outer)


def leave(token: Token[tuple[float, str] | None]) -> None:
    _DEADLINE.reset(token)


@contextmanager
def deadline(seconds: float | None, name: str = "deadline") -> Iterator[None]:
    """Every watched call in this block (and in threads that copy its context) ends by
    `seconds` from now; an enclosing, earlier deadline still wins."""
    token = enter(seconds, name)
    try:
        yield
    finally:
        leave(token)


def remaining() -> float | None:
    """Seconds left of the innermost deadline (None: no deadline)."""
    d = _DEADLINE.get()
    return None if d is None else max(0.0, d[0] - time.monotonic())


def budget(limit: float | None) -> tuple[float | None, str]:
    """The seconds a call starting now may take, and what set them."""
    d = _DEADLINE.get()
    left = None if d is None else max(0.0, d[0] - time.monotonic())
    if left is not None and (limit is None or left < limit):
        return left, d[1]  # type: ignore[index]
    return limit, "call"


def call(fn: Callable[[], T], limit: float | None, what: str) -> T:
    """`fn()`, or Overdue once `limit` s (or the enclosing deadline) have passed.

    Inside a watched call, `fn` runs directly: the outer watch already bounds it, and a
    second thread would deadlock on a lock the first one holds."""
    if _INSIDE.get():
        return fn()
    seconds, scope = budget(limit)
    if seconds is None:
        return fn()
    if seconds <= 0:
        raise Overdue(what, 0.0 if scope == "call" else seconds, scope)
    box: dict[str, Any] = {}
    done = threading.Event()
    ctx = copy_context()

    def run() -> None:
        _INSIDE.set(True)
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=ctx.run, args=(run,), name=f"watched: {what}"[:60], daemon=True).start()
    if not done.wait(seconds):
        _abandoned.append(what)
        raise Overdue(what, seconds if scope != "call" else limit, scope)  # type: ignore[arg-type]
    if "error" in box:
        raise box["error"]
    return box["value"]
