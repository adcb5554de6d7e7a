"""What `run` and `demo` print when they finish (console tables: the CLI's, not the run's)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from agent_host.config.records import OUTCOMES
from agent_host.report import write_reports
from agent_host.report.summary import summary_tables
from agent_host.runs.run import RunResult


def print_summary(result: RunResult, console: Console) -> None:
    table = Table(title=f"episodes in {result.run_dir}")
    table.add_column("build")
    table.add_column("done", justify="right")
    for o in OUTCOMES:
        table.add_column(o, justify="right")
    for p in result.progress.values():
        table.add_row(p.build, f"{p.done}/{p.total}", *[str(p.outcomes.get(o, 0)) for o in OUTCOMES])
    console.print(table)
    away: dict[str, str] = {}
    for p in result.progress.values():
        away.update(p.away)
    for serial, why in away.items():
        console.print(f"phone {serial} is away: {why}")
    for line in result.skipped:   # left out for lack of a requirement: in no rate
        console.print(line, highlight=False)


def write_report(run_dir: Path, console: Console, baseline: str | None = None) -> Path:
    """Write the report files and print its headline tables; returns report.html's path."""
    paths = write_reports(run_dir, baseline=baseline)
    for table in summary_tables(paths["results"]):
        console.print(table)
    return Path(paths["html"])
