"""The `--wait-for-phone` flag every verb that drives a phone takes (run, episode, tasks
check-solutions, demo): by default a phone another process holds is refused at once."""

from __future__ import annotations

import argparse
import math

from agent_host.errors import UserError


def add_wait_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wait-for-phone", type=float, nargs="?", const=math.inf, default=None, metavar="S",
                   help="when another agent-host process holds a phone (one process per phone at a time), "
                        "wait up to S seconds for it (no S: as long as it takes) instead of refusing")


def wait_seconds(args: argparse.Namespace) -> float | None:
    value = getattr(args, "wait_for_phone", None)   # tasks_check.run is also called with a Namespace without it
    if value is not None and (math.isnan(value) or value < 0):
        raise UserError(f"--wait-for-phone must be 0 or more seconds (got {value:g})")
    return value
