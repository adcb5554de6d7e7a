"""What `run` and `demo` print when they finish."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from agent_host.config.records import OUTCOMES
from agent_host.runs.run import RunResult


def print_summary(result: RunResult, console: Console) -> None:
    table = Table(title=f"run {result.run_dir}", show_lines=False)
    table.add_column("build")
    table.add_column("done", justify="right")
    for o in OUTCOMES:
        table.add_column(o, justify="right")
    for p in result.progress.values():
        table.add_row(p.build, f"{p.done}/{p.total}", *[str(p.outcomes.get(o, 0)) for o in OUTCOMES])
    console.print(table)


def write_report(run_dir: Path, console: Console, baseline: str | None = None) -> Path | None:
    from agent_host.report import write_reports
    paths = write_reports(run_dir, baseline=baseline)
    console.print(f"report: {paths['html']}")
    return paths["html"]
