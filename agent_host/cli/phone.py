"""`agent-host phone`: run a virtual phone; poke its fault knobs; check what a phone has."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Callable, Iterator

from agent_host.cli.stop_flag import StopFlag
from agent_host.config.requirements import REQUIREMENTS
from agent_host.errors import UserError
from virtual_phone.latency import profile_names as latency_profiles

DESCRIPTION = """\
A virtual Android 14 phone on 127.0.0.1, attached to the real adb server, so adb,
adbutils and uiautomator2 drive it exactly like a phone on a cable.
"""

START_EPILOG = """\
examples:
  agent-host phone start                         a phone on a free port; prints its serial first
  agent-host phone start --port 6101             a fixed port (serial 127.0.0.1:6101)
  agent-host phone start --faults rpc_latency_ms=100,kill_u2_after=20
  agent-host phone start --latency real-phone    answer with a real phone's timings (seeded jitter)
  agent-host phone start --no-sim --no-calendar-account   a phone a run must skip some tasks on
  agent-host phone start --contact-sync          an account syncs contacts: the contacts tasks are skipped
  ANDROID_ADB_SERVER_PORT=15037 agent-host phone start   use (or start) another adb server

then, from another terminal:
  adb -s 127.0.0.1:6101 shell settings get global wifi_on
  python -c "import uiautomator2 as u2; print(u2.connect('127.0.0.1:6101').info)"

faults (off by default; SPEC is knob=value,...):
  drop_after=N  drop_at=30s  drop_for=5s  kill_u2_after=N  kill_u2_at=T
  rpc_latency_ms=MS  dialog_after=N  dialog_at=T
While running:  adb -s SERIAL shell vphone-fault set|clear|show|drop|kill-u2|dialog
or:             agent-host phone fault SERIAL kill-u2

The phone serves until Ctrl-C or SIGTERM, then detaches from the adb server (adb disconnect).
"""

FAULT_EPILOG = """\
examples:
  agent-host phone fault 127.0.0.1:6101 show
  agent-host phone fault 127.0.0.1:6101 kill-u2          the uiautomator server dies now
  agent-host phone fault 127.0.0.1:6101 set rpc_latency_ms=200,dialog_after=5
  agent-host phone fault 127.0.0.1:6101 clear
"""


CHECK_DESCRIPTION = """\
Read from a phone (real or virtual) every requirement a task may declare (`requires:` in a
task file), whether every app the tasks open is installed (their aliases resolved through the
phone profile), and everything the harness itself needs, and print one row each: met or not,
what was seen, and how to fix it. `agent-host run` reads the task requirements and the apps
the same way and schedules a task only on phones that have them. Exit code 0 when every row
is met, 1 if not.
"""

CHECK_EPILOG = """\
examples:
  agent-host phone check 127.0.0.1:6101
  agent-host phone doctor 0A281FDD4000D3          the same (a phone on USB)
  agent-host phone check 127.0.0.1:6101 --json    rows as JSON: name, kind, met, seen, what, fix
  agent-host phone check SERIAL --phone-profile pixel-android14 --tasks markor-to-contacts,wifi-on

rows:
""" + "\n".join(f"  {r.name:<19}{r.kind:<9}{r.what}" for r in REQUIREMENTS.values()) + """

kind `task`: a task names it in `requires:`; `derived`: a task needs it by the apps it opens;
`harness`: every run needs it.
"""


@contextlib.contextmanager
def serial_or_virtual(serial: str | None, say: Callable[[str], object] | None = None) -> Iterator[str]:
    """`serial`, or (None) the serial of a fresh virtual phone started for the block and stopped
    after it: the default of the verbs that play tasks (check-solutions, adversaries, changes)."""
    if serial:
        yield serial
        return
    from virtual_phone.phone import VirtualPhone
    if say is not None:
        say("starting a virtual phone ...")
    vphone = VirtualPhone().start()
    try:
        yield vphone.serial
    finally:
        vphone.stop()


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("phone", help="run a virtual phone (for authoring tasks, tests, CI); check what a phone has",
                       description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = p.add_subparsers(dest="phone_verb", metavar="<command>")

    start = verbs.add_parser("start", help="start one virtual phone and serve until interrupted",
                             description=DESCRIPTION, epilog=START_EPILOG,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    start.add_argument("--port", type=int, default=0,
                       help="TCP port on 127.0.0.1 (default: a free one)")
    start.add_argument("--faults", metavar="SPEC", default=None,
                       help="fault knobs, e.g. kill_u2_after=20,rpc_latency_ms=100")
    start.add_argument("--adb-port", type=int, default=None,
                       help="adb server port (default: ANDROID_ADB_SERVER_PORT, else 5037); "
                            "a server is started there if none runs")
    start.add_argument("--seed", type=int, default=0, help="seed of the phone's world (and of its latency jitter)")
    start.add_argument("--latency", metavar="PROFILE", default="none",
                       help="delay each answer as a real phone would, per call kind (hierarchy dump, "
                            "screenshot, input, other JSON-RPC, shell), with seeded jitter: "
                            f"{', '.join(['none', *latency_profiles()])} (default: none, as fast as it can)")
    start.add_argument("--model", default="VirtualPhone", help="ro.product.model to report")
    start.add_argument("--no-sim", action="store_true",
                       help="no SIM (gsm.sim.state ABSENT): tasks requiring sim_sms or sim_call are skipped")
    start.add_argument("--no-calendar-account", action="store_true",
                       help="no calendar in the provider: tasks requiring calendar_account are skipped")
    start.add_argument("--contact-sync", action="store_true",
                       help="an account syncs contacts (its contacts come back after the provider is "
                            "cleared): tasks requiring no_contact_sync are skipped")
    start.set_defaults(func=_start)

    check = verbs.add_parser("check", aliases=["doctor"], help="what a phone has: every requirement, with fixes",
                             description=CHECK_DESCRIPTION, epilog=CHECK_EPILOG,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("serial", help="the phone's serial (`agent-host devices` lists them)")
    check.add_argument("--json", action="store_true", help="print the rows as JSON")
    check.add_argument("--phone-profile", default="virtual",
                       help="phone profile the tasks' app aliases resolve through (default: virtual, as for run)")
    check.add_argument("--tasks", help="comma-separated task files, directories or ids whose apps must be "
                                        "installed, as for run (default: tasks/)")
    check.set_defaults(func=_check)

    fault = verbs.add_parser("fault", help="change a running virtual phone's fault knobs",
                             epilog=FAULT_EPILOG,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    fault.add_argument("serial", help="the virtual phone's serial, e.g. 127.0.0.1:6101")
    fault.add_argument("action", nargs="+",
                       help="show | clear | set SPEC | drop | kill-u2 | dialog | latency MS")
    fault.set_defaults(func=_fault)

    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _start(args: argparse.Namespace) -> int:
    from virtual_phone.adb_server import AdbServerError
    from virtual_phone.faults import parse_spec
    from virtual_phone.phone import VirtualPhone, VirtualPhoneError

    from virtual_phone.latency import make as make_latency

    try:
        faults = parse_spec(args.faults)
    except ValueError as exc:
        raise UserError(f"--faults: {exc}") from None
    try:
        latency = make_latency(args.latency, args.seed)
    except ValueError as exc:
        raise UserError(f"--latency: {exc}") from None
    if args.port and not 1 <= args.port <= 65535:
        raise UserError(f"--port: {args.port} is not a TCP port")

    stop = StopFlag()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    phone = VirtualPhone(port=args.port, faults=faults, adb_port=args.adb_port,
                         model=args.model, seed=args.seed, latency=latency,
                         sim=not args.no_sim, calendar_account=not args.no_calendar_account,
                         contact_sync=args.contact_sync)
    try:
        try:
            phone.start()
        except OSError as exc:
            raise UserError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
        except (VirtualPhoneError, AdbServerError) as exc:
            raise UserError(str(exc)) from None
        print(f"serial: {phone.serial}", flush=True)
        print(f"adb server: 127.0.0.1:{phone.adb_port}", flush=True)
        print(f"faults: {faults.describe()}", flush=True)
        print(f"latency: {latency.name}", flush=True)
        if args.no_sim or args.no_calendar_account:
            print(f"without: {', '.join(n for n, off in (('SIM', args.no_sim), ('calendar account', args.no_calendar_account)) if off)}",
                  flush=True)
        if args.contact_sync:
            print("with: an account that syncs contacts", flush=True)
        print("serving; Ctrl-C or SIGTERM to stop", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        phone.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    print(f"detached {phone.serial}", flush=True)
    return 0


def _fault(args: argparse.Namespace) -> int:
    import adbutils

    from virtual_phone import adb_server

    adb_server.ensure_server()
    line = " ".join(["vphone-fault", *args.action])
    try:
        result = adbutils.AdbClient().device(args.serial).shell2(line, v2=True)
    except adbutils.AdbError as exc:
        raise UserError(f"{args.serial}: {exc}") from None
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


def _check(args: argparse.Namespace) -> int:
    import json

    from agent_host.config.phones import load_phone_profile
    from agent_host.config.tasks import load_tasks, needed_apps
    from agent_host.phone.device import Phone, PhoneError
    from agent_host.phone.requirements import check_rows

    profile = load_phone_profile(args.phone_profile)
    apps = needed_apps(load_tasks([t.strip() for t in (args.tasks or "").split(",") if t.strip()]),
                       profile.apps)
    try:
        rows = check_rows(Phone.connect(args.serial), apps=apps)
    except PhoneError as exc:
        raise UserError(str(exc)) from None
    if args.json:
        print(json.dumps([r.to_json() for r in rows], indent=2))
    else:
        from rich.table import Table

        from agent_host.cli.output import stdout_console
        table = Table(title=f"phone {args.serial}", show_lines=False)
        for col in ("requirement", "kind", "", "seen", "how to fix"):
            table.add_column(col, overflow="fold")
        for r in rows:
            table.add_row(r.name, r.kind, "met" if r.met else "[bold red]NOT MET[/]", r.seen,
                          "" if r.met else r.fix)
        console = stdout_console()
        console.print(table)
        missing = [r.name for r in rows if not r.met]
        console.print(f"{len(rows) - len(missing)} of {len(rows)} met"
                      + (f"; not met: {', '.join(missing)}" if missing else ""))
    return 0 if all(r.met for r in rows) else 1
