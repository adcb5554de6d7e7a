"""`agent-host episode` (placeholder: its owner replaces this module)."""

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("episode", help="(not yet available)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    raise SystemExit("agent-host episode: not implemented yet")
