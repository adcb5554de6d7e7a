"""`agent-host serve` (placeholder: its owner replaces this module)."""

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="(not yet available)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    raise SystemExit("agent-host serve: not implemented yet")
