"""Progress of a long step (a model build, a GPTQ run, a fidelity probe, a replay, a run's
episodes) that a log or CI can read: a rich bar on a terminal; elsewhere plain lines, one per
progress event at most every few seconds, with an ETA, and a heartbeat after 25 s of silence, so a
redirected `make demo` prints a line at least every 30 s, the heartbeat thread's 1 s poll and a
slow write included (30 s with that slack gave gaps of 31 s), and never looks hung."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import TaskID

    from agent_host.config.records import EpisodeRecord
    from agent_host.runs.execute import BuildProgress

HEARTBEAT_S = 25.0
MIN_GAP_S = 5.0      # between lines of the same phase
CHANGE_GAP_S = 2.0   # between lines of a changed phase: a replay changes it every request


def _mmss(s: float) -> str:
    s = int(round(s))
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


class PlainProgress:
    """`update(done, total, what)` from any thread; lines go to `write`."""

    def __init__(self, label: str, write: Callable[[str], None], *, expect: str = "",
                 clock: Callable[[], float] = time.monotonic, heartbeat_s: float = HEARTBEAT_S,
                 min_gap_s: float = MIN_GAP_S, change_gap_s: float = CHANGE_GAP_S,
                 announce: bool = True) -> None:
        self.label, self.write, self.clock = label, write, clock
        self.heartbeat_s, self.min_gap_s, self.change_gap_s = heartbeat_s, min_gap_s, change_gap_s
        self.t0 = clock()
        self.last_line = -1e18
        self.state: tuple[int, int | None, str] = (0, None, "starting")
        self.first: tuple[float, int] | None = None   # (time, done) the rate counts from
        self._last_event = self.t0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.said = False
        if announce:
            self._say(f"{label}: started" + (f" (expect {expect})" if expect else ""))

    def eta(self) -> float | None:
        done, total, _ = self.state
        if not total or self.first is None or done <= self.first[1] or done >= total:
            return None
        t, d0 = self.first
        rate = (self.clock() - t) / (done - d0)
        return rate * (total - done)

    def line(self) -> str:
        done, total, what = self.state
        parts = [f"{self.label}: {what}"]
        if total:
            parts.append(f"{done}/{total}")
        parts.append(f"{_mmss(self.clock() - self.t0)} elapsed")
        eta = self.eta()
        if eta is not None:
            parts.append(f"ETA {_mmss(eta)}")
        return ", ".join(parts)

    def update(self, done: int, total: int | None, what: str) -> None:
        with self._lock:
            now, prev = self.clock(), self.state
            self.state = (done, total, what)
            if self.first is None and done > 0:
                # the rate counts from the event before the first unit: loading is not a unit
                self.first = (self._last_event, prev[0])
            self._last_event = now
            since = now - self.last_line
            first = prev == (0, None, "starting")   # the first event after "started"
            if first or (what != prev[2] and since >= self.change_gap_s) or since >= self.min_gap_s \
                    or (total and done >= total and prev[0] < total):
                self._say(self.line())

    def _say(self, text: str) -> None:
        self.last_line, self.said = self.clock(), True
        self.write(text)

    def beat(self) -> None:
        """A line if none was written for `heartbeat_s` (called by the heartbeat thread)."""
        with self._lock:
            if self.said and self.clock() - self.last_line >= self.heartbeat_s:
                self._say(self.line())

    def __enter__(self) -> PlainProgress:
        def loop() -> None:
            while not self._stop.wait(1.0):
                self.beat()

        self._thread = threading.Thread(target=loop, daemon=True, name="progress-heartbeat")
        self._thread.start()
        return self

    def __exit__(self, exc_type, *_exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        if not self.said:   # nothing began (refused before its first event): its error says it all
            return
        outcome = "failed" if exc_type else "done"
        self.write(f"{self.label}: {outcome} in {_mmss(self.clock() - self.t0)}")


class _Bar:
    def __init__(self, label: str, console) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.label = label
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                            TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                            TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=True)
        self.task: TaskID | None = None

    def update(self, done: int, total: int | None, what: str) -> None:
        assert self.task is not None, "updated inside its `with` only"
        self.bar.update(self.task, completed=done, total=total, description=f"{self.label}: {what}")

    def __enter__(self) -> _Bar:
        self.bar.__enter__()
        self.task = self.bar.add_task(self.label, total=None)
        return self

    def __exit__(self, *exc) -> None:
        self.bar.__exit__(*exc)


def step_progress(label: str, console, *, expect: str = ""):
    """A context manager with `.update(done, total, what)`: a bar on a terminal, else lines."""
    if console.is_terminal:
        if expect:
            console.print(f"{label} ({expect})")
        return _Bar(label, console)
    return PlainProgress(label, _writer(console), expect=expect)


class _PlainStatus(PlainProgress):
    """rich's `console.status` where output is not a terminal: `.update(text)` as lines, the
    first with the first update (a command refused before it prints only its error)."""

    def __init__(self, label: str, write: Callable[[str], None], **kw) -> None:
        super().__init__(label, write, announce=False, **kw)

    def update(self, text: str) -> None:  # type: ignore[override]
        prefix = f"{self.label}: "
        super().update(0, None, text[len(prefix):] if text.startswith(prefix) else text)


def _writer(console) -> Callable[[str], None]:
    return lambda text: console.print(text, soft_wrap=True, highlight=False)


def status_progress(label: str, console):
    """A context manager with `.update(text)`: rich's spinner on a terminal, else plain lines."""
    if console.is_terminal:
        return console.status(label)
    return _PlainStatus(label, _writer(console))


class PlainRunProgress:
    """The run's live view (runs/progress.RunProgress) as plain lines, for logs and CI."""

    def __init__(self, console, label: str = "episodes") -> None:
        self.console, self.label = console, label
        self.builds: dict[str, BuildProgress] = {}
        self.lines: PlainProgress | None = None

    def __enter__(self) -> PlainRunProgress:
        return self

    def __exit__(self, *exc) -> None:
        if self.lines is not None:
            self.lines.__exit__(*exc)

    def hook(self, p: BuildProgress, rec: EpisodeRecord | None) -> None:
        from agent_host.runs.progress import tallies

        if self.lines is None:   # first report: a run refused while being checked prints only its error
            self.lines = PlainProgress(self.label, _writer(self.console)).__enter__()
        self.builds[p.build] = p
        done = sum(b.done for b in self.builds.values())
        total = sum(b.total for b in self.builds.values())
        what = "; ".join(f"{b.build} {b.done}/{b.total} {tallies(b)}" for b in self.builds.values())
        self.lines.update(done, total, what)


def run_progress(console, enabled: bool = True):
    """The run's progress: rich's bars on a terminal, plain lines elsewhere, nothing if not enabled."""
    from agent_host.runs.progress import RunProgress

    if enabled and not console.is_terminal:
        return PlainRunProgress(console)
    return RunProgress(console, enabled=enabled)
