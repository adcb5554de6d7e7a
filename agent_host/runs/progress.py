"""A live view of a run: per build, episodes done of total, outcome tallies, ETA."""

from __future__ import annotations

import threading
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from agent_host.config.records import OUTCOMES, EpisodeRecord
from agent_host.runs.execute import BuildProgress

_SHORT = {"success": "ok", "premature": "prem", "undone": "undone", "collateral": "coll", "unrecognised": "unrec",
          "infeasible_claimed": "infeas", "nav_fail": "nav", "exhausted": "exh", "error": "err"}


def tallies(p: BuildProgress) -> str:
    parts = [f"{_SHORT[o]} {p.outcomes[o]}" for o in OUTCOMES if p.outcomes.get(o)]
    if p.retries:
        parts.append(f"retries {p.retries}")
    if p.away:
        parts.append("away " + ",".join(sorted(p.away)))
    return "  ".join(parts) or "-"


class RunProgress:
    def __init__(self, console: Console | None = None, enabled: bool = True):
        self.progress = Progress(
            TextColumn("[bold]{task.fields[build]}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[tally]}"), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
            console=console, disable=not enabled, transient=False,
        )
        self._ids: dict[str, TaskID] = {}
        self._lock = threading.Lock()
        self._started = False

    # The display starts with the first report, so an error while the run is still being
    # checked leaves stderr holding only that error.
    def __enter__(self) -> "RunProgress":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._started:
            self.progress.__exit__(exc_type, exc, tb)

    def hook(self, p: BuildProgress, rec: EpisodeRecord | None) -> None:
        with self._lock:
            if not self._started:
                self.progress.__enter__()
                self._started = True
            if p.build not in self._ids:
                self._ids[p.build] = self.progress.add_task("", total=p.total, completed=p.done,
                                                            build=p.build, tally=tallies(p))
            # total too: a sequential run's grows with every round
            self.progress.update(self._ids[p.build], completed=p.done, total=p.total, tally=tallies(p))
