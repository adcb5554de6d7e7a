"""`agent-host <verb>`: each verb lives in its own module under agent_host.cli.

A verb module exposes `register(subparsers)`, which adds its parser and sets `func`
(a callable taking the parsed namespace and returning an exit code).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading

from agent_host import __version__
from agent_host.errors import UserError

# Order is the order `agent-host --help` lists them in.
VERBS = [
    "demo",
    "run",
    "report",
    "episode",
    "tasks",
    "observe",
    "policy",
    "phone",
    "devices",
    "builds",
    "probe",
    "serve",
    "fidelity",
    "replay",
    "quantize",
]

DESCRIPTION = """\
Does this build of this model still get real phone tasks done?

agent-host serves each build of a model through an OpenAI-compatible server, drives an
Android phone (real, or the built-in virtual phone) through multi-screen tasks written as
YAML, and records per episode whether the model navigated to the goal state and whether it
recognised completion by calling task_complete while the goal held.
"""

EPILOG = """\
start here:
  agent-host demo                       virtual phone + embedded small model, writes a report
  agent-host phone start                a virtual phone on 127.0.0.1 for authoring tasks
  agent-host tasks validate tasks/      check task YAML files
  agent-host probe                      which weight path suits this machine
  agent-host <verb> --help              details and examples for each verb
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-host",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agent-host {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="<verb>")
    for verb in VERBS:
        module = importlib.import_module(f"agent_host.cli.{verb.replace('-', '_')}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    # SIGTERM unwinds like Ctrl-C, so every `with` (servers, phones, adb servers) stops what it
    # started; verbs that serve in the foreground install their own handlers over this one.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        _check_environment()
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _terminate(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _check_environment() -> None:
    raw = os.environ.get("ANDROID_ADB_SERVER_PORT", "").strip()
    if raw and (not raw.isdigit() or not 0 < int(raw) < 65536):
        raise UserError(f"ANDROID_ADB_SERVER_PORT={raw!r} is not a TCP port (1-65535)")


if __name__ == "__main__":
    sys.exit(main())
