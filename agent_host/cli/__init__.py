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
    "baseline",
    "quantize",
    "teach",
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
    """Run one command and return its exit code (tests call this in their own process)."""
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:
        # Ctrl-C before _main's own handling: importing the verbs' modules takes a second or so
        return _interrupted(exc)
    except RuntimeError as exc:
        if (cause := interrupt_cause(exc)) is None:
            raise
        return _interrupted(cause)


def entry() -> None:
    """The process entry point (`agent-host`, `python -m agent_host`): main, then exit.

    Only here may the process leave without its atexit hooks: main() itself returns, since a
    caller in the same process (a test, a script) must go on; an earlier os._exit in main()
    ended a whole pytest session, silently and with status 0, at the first in-process command
    after any test that had abandoned a call."""
    code = main()
    from agent_host import watchdog
    if watchdog.abandoned():
        # A call given up on (a frozen phone, a trickling server) may still hold a library's
        # lock that an atexit hook waits for (uiautomator2's stop_uiautomator): everything
        # this process started is already stopped by its `with` blocks, so leave at once.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    sys.exit(code)


class Terminated(KeyboardInterrupt):
    """SIGTERM, unwinding like Ctrl-C (exit 143 instead of 130)."""


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):   # no verb given: nothing set func
        parser.print_help()
        return 2
    # SIGTERM unwinds like Ctrl-C, so every `with` (servers, phones, adb servers) stops what it
    # started; verbs that serve in the foreground install their own handlers over this one.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        _check_environment()
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # inside the try: a reader that left (`| head`) is seen here
        return code
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # `agent-host ... --json | head`: the reader has what it wanted. Exit as a tool killed
        # by SIGPIPE would, without a traceback, and keep Python's final flush from failing.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141
    except KeyboardInterrupt as exc:   # Terminated (SIGTERM) included
        return _interrupted(exc)
    except RuntimeError as exc:
        if (cause := interrupt_cause(exc)) is None:
            raise
        return _interrupted(cause)


def interrupt_cause(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C (or SIGTERM) behind `exc`, if it is one Python wrapped: a KeyboardInterrupt
    raised while a class is being made (pydantic's models run `__set_name__` during an import)
    reaches the caller as a RuntimeError caused by it, so a Ctrl-C at start-up printed a
    traceback about once in thirty."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return seen
        seen = seen.__cause__
    return None


def _interrupted(exc: KeyboardInterrupt) -> int:
    """One line and the shell's exit status for the signal: 143 for SIGTERM, 130 for SIGINT."""
    if isinstance(exc, Terminated):
        print("terminated", file=sys.stderr)
        return 143
    print("interrupted", file=sys.stderr)
    return 130


def _terminate(signum: int, _frame: object) -> None:
    raise Terminated


def _check_environment() -> None:
    raw = os.environ.get("ANDROID_ADB_SERVER_PORT", "").strip()
    if raw and (not raw.isdigit() or not 0 < int(raw) < 65536):
        raise UserError(f"ANDROID_ADB_SERVER_PORT={raw!r} is not a TCP port (1-65535)")


if __name__ == "__main__":
    sys.exit(main())
