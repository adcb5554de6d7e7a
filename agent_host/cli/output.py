"""Consoles for the CLI: piped output keeps wide tables whole instead of folding them at 80 columns."""

from __future__ import annotations

import sys

from rich.console import Console

PIPED_WIDTH = 160


def stdout_console(**kw: object) -> Console:
    """A console on stdout; when stdout is not a terminal, wide enough for our tables."""
    width = None if sys.stdout.isatty() else PIPED_WIDTH
    return Console(width=width, **kw)  # type: ignore[arg-type]
