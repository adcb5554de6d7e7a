"""`agent-host run`: builds x tasks x repeats over phones, resumable."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from agent_host.cli.locking import add_wait_flag, wait_seconds
from agent_host.errors import UserError
from agent_host.config.observation import OBSERVATION_MODES

if TYPE_CHECKING:   # annotations only: the runs layer is imported when a run starts (CLI start time)
    from rich.console import Console
    from agent_host.runs.run import RunResult

EXAMPLES = """\
examples:
  # two builds, every task in tasks/, base and verify variants, 3 repeats, two phones
  agent-host run --builds w4a8-amx,w4a16-tinygemm --tasks tasks/ --variants base,verify \\
      --repeats 3 --phones 127.0.0.1:5601,127.0.0.1:5602 --host-profile x86-amx

  # a few tasks by id, on a phone served by another machine's adb server
  agent-host run --builds embedded-default --tasks wifi-on,dnd-on --phones 10.0.0.7:5037/R58M12ABC

  # after a crash or kill: run exactly what is missing
  agent-host run --resume reports/runs/20261130-101500-ab12

  # two builds compared until decided: interleaved, repeats where the builds disagree, stop
  # when the difference excludes 0 or lies within +-5 pp, at most 600 episodes
  agent-host run --builds w4a16-tinygemm,bf16 --tasks tasks/ --phones 127.0.0.1:5601 \
      --until-decided --detect 5 --budget 600

  # a slow model on a small machine: allow 5 min per request, 1 h per episode
  agent-host run --builds w4a16-tinygemm --tasks tasks/ --phones 127.0.0.1:5601 \\
      --request-timeout 300 --episode-timeout 3600

Builds come from host profiles (docs/builds.md); a `server: policy` build is a scripted
policy (docs/policies.md: scripts, suites of task solutions with seeded flaws).

Episodes that fail because of the phone, the server, the harness or a time limit are labelled
`error`, retried (--max-attempts) and never counted as model failures. One process at a time
per run directory and per phone (a second one is refused, naming the holder; --wait-for-phone
waits for the phone instead). A phone that stops
answering is waited for (--phone-wait) and used again when it is back. On a full disk the run
stops, says how many episodes are recorded, and exits non-zero; resume it when there is room.
The run directory's episodes.jsonl is the source of truth; `agent-host report RUN_DIR` reads it.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run builds x tasks x repeats over phones (resumable)",
                       description="Run every episode of builds x task instances x variants x repeats, "
                                   "one worker per phone, one build's server up at a time.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--builds", help="comma-separated build ids (see `agent-host builds`)")
    p.add_argument("--tasks", help="comma-separated task files, directories or ids (default: tasks/)")
    p.add_argument("--variants", default="base", help="comma-separated: base, verify (default: base)")
    p.add_argument("--repeats", type=int, default=1,
                   help="repeats per task instance (default: 1); with --until-decided, of the first pass")
    p.add_argument("--phones", help="comma-separated serials; HOST:PORT/SERIAL for a remote adb server")
    p.add_argument("--seed", type=int, default=0, help="run seed; episode seeds derive from it (default: 0)")
    p.add_argument("--vary", metavar="CONDITIONS",
                   help="how each episode's phone differs, drawn from its seed (docs/tasks.md, \"Variations\"): "
                        "none, light (what a real phone plausibly shows: launcher order, extra rows, font and "
                        "display size, dark theme, 12/24 h), full (light + interruptions), or kinds joined by "
                        "'+' (font_scale+dark). Several conditions, comma-separated (none,full), each play "
                        "every instance on the same seeds: the report pairs them (robustness). Default: light")
    p.add_argument("--observation", choices=OBSERVATION_MODES, default=None,
                   help="what every build is shown of the screen, overriding its `observation:` "
                        "(docs/builds.md, Vision builds)")
    p.add_argument("--taught", type=Path, metavar="SPLIT.json",
                   help="a taught model's split (`agent-host teach dataset` writes split.json): recorded in the "
                        "manifest; the report's breakdown shows success on taught and held-out instances")
    p.add_argument("--out", type=Path, help="run directory (default: reports/runs/<run-id>)")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="resume this run: run only what is missing")
    p.add_argument("--host-profile", help="host profile the builds come from (default: all profiles)")
    p.add_argument("--phone-profile", default="virtual", help="phone profile (default: virtual)")
    p.add_argument("--max-attempts", type=int, default=3, help="attempts per episode on errors (default: 3)")
    p.add_argument("--startup-timeout", type=float, help="seconds to wait for each server to be ready")
    p.add_argument("--request-timeout", type=float, metavar="S",
                   help="seconds one model request may take before the episode ends `error` "
                        "(limit: ...) and is retried (default: the build's request_timeout_s, else 120)")
    p.add_argument("--episode-timeout", type=float, metavar="S",
                   help="wall-clock seconds one episode may take, same ending "
                        "(default: the build's episode_timeout_s, else 1200)")
    p.add_argument("--phone-wait", type=float, metavar="S",
                   help="seconds a phone that stopped answering is waited for (probed with backoff) "
                        "before it is reported away (default: 60)")
    p.add_argument("--baseline", metavar="BUILD",
                   help="the build reports compare the others with (default: the build whose role is reference, else the first of --builds)")
    p.add_argument("--plan", action="store_true",
                   help="print the smallest build-vs-build difference these tasks x repeats can detect "
                        "(80%% power, alpha 0.05) and exit without running anything")
    p.add_argument("--plan-rate", type=float, default=0.5, metavar="P",
                   help="for --plan: the baseline success rate you expect (default 0.5, the worst case)")
    p.add_argument("--interleave", action="store_true",
                   help="play the builds' episodes interleaved, in an order randomised by --seed (each task's "
                        "builds close in time; builds alternate in blocks when their servers cannot be up "
                        "together); the manifest records the order. --until-decided always interleaves")
    p.add_argument("--until-decided", action="store_true",
                   help="two builds: after a first pass, add repeats where the builds disagree and stop when "
                        "the paired difference excludes 0, lies within +-PP (--detect), or the budget is spent; "
                        "intervals stay valid under this stopping (docs/reports.md, \"Sequential runs\")")
    p.add_argument("--detect", type=float, metavar="PP",
                   help="with --until-decided: the smallest difference that matters, in percentage points; "
                        "a difference inside +-PP ends the run as equivalent (default: no such stop)")
    p.add_argument("--budget", metavar="EPISODES|DURATION",
                   help="with --until-decided: at most this many episodes (e.g. 600), or this long (90m, 2h); "
                        f"default: as many episodes as 10 repeats of everything")
    p.add_argument("--no-report", action="store_true", help="do not write the report at the end")
    add_wait_flag(p)
    p.add_argument("--quiet", action="store_true", help="no live progress display")
    p.set_defaults(func=_run)


def _csv(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _plan(args: argparse.Namespace, tasks: list) -> int:
    """Power planning before a run: the minimum detectable difference of the planned design."""
    from agent_host.cli.output import stdout_console
    from agent_host.report.power import plan
    from agent_host.report.selection import HEADLINE_VARIANT
    from agent_host.report.trivial import trivial_scores

    if not 0 < args.plan_rate < 1:
        raise UserError("--plan-rate must be between 0 and 1")
    if args.repeats < 1:
        raise UserError("--repeats must be at least 1")
    # the statistics' unit is the task (its parameter sets pooled); success, what a comparison
    # compares, is over base variants: verify variants feed recognition only
    base = [t for t in tasks if t.variant == HEADLINE_VARIANT]
    if not base:
        raise UserError("--plan: success is over base variants, and --variants has none (add base)")
    n_tasks = len({t.task_id for t in base})
    p = plan(n_tasks, args.repeats, rate=args.plan_rate, instances=len(base) / n_tasks)
    out = stdout_console()
    mde = p["mde"]["value"]
    a = p["assumed"]
    verify = len(tasks) - len(base)
    def n(k: int, what: str) -> str:
        return f"{k} {what}{'s' if k != 1 else ''}"
    out.print(f"{n(n_tasks, 'task')} ({n(len(base), 'base instance')}"
              + (f"; {n(verify, 'verify instance')} for recognition only" if verify else "") + f") x {args.repeats} "
              "repeats per build: "
              + (f"a true difference of {100 * mde:.0f} pp in success rate is detected with 80% power"
                 if mde is not None else "no difference up to 100 pp is detectable with 80% power")
              + " (paired over tasks, alpha 0.05)", highlight=False)
    out.print(f"assumed: baseline rate {a['rate']:.2f}, task ICC {a['icc']:.2f}, SD of the true per-task "
              f"difference {a['tau']:.2f} (the report gives the observed figures after the run)", highlight=False)
    out.print("repeats -> MDE: " + ", ".join(f"{r}: {'–' if v is None else f'{100 * v:.0f} pp'}"
                                             for r, v in p["by_repeats"].items()), highlight=False)
    out.print(f"tasks (at {args.repeats} repeats, {p['instances']:.3g} instances each) -> MDE: " + ", ".join(
        f"{t}: {'–' if v is None else f'{100 * v:.0f} pp'}" for t, v in p["by_tasks"].items()), highlight=False)
    scores = trivial_scores([{"task": t.id, "task_id": t.task_id, "variant": t.variant, "infeasible": t.infeasible}
                             for t in tasks])
    assert scores is not None, "tasks holds the base instances checked above"
    trivial = scores["policies"]
    out.print("doing nothing scores on these tasks: " + ", ".join(
        f"{x['name']} " + ("–" if x["success"] is None else f"{100 * x['success']:.1f}%")
        for x in trivial.values()) + " success", highlight=False)
    if args.builds:
        from agent_host.config.hosts import find_build
        together, why = _together([find_build(b, args.host_profile) for b in _csv(args.builds)])
        out.print(f"order with --interleave / --until-decided: {why}", highlight=False)
    _plan_variations(args, tasks, out)
    return 0


def _plan_variations(args: argparse.Namespace, tasks: list, out: Console) -> None:
    """Which kinds each --vary condition applies on this phone profile, and what it leaves to
    the virtual phone (cmd vphone) or out for a task's own reasons."""
    from collections import Counter

    from agent_host.config.phone_variation import applicable
    from agent_host.config.phones import load_phone_profile
    from agent_host.config.variation import VIRTUAL_ONLY, parse_vary, plays

    profile = load_phone_profile(args.phone_profile)
    for cond in vary_conditions(args):
        kinds = parse_vary(cond)
        if not kinds:
            out.print(f"--vary {cond}: every episode on the phone as its setup leaves it", highlight=False, soft_wrap=True)
            continue
        left = [t.key for t in tasks if not plays(t.vary_full, cond)]
        if left:
            out.print(f"--vary {cond} leaves out {len(left)} instance(s) whose vary.full is false (no varied "
                      f"phone differs for them): {', '.join(left)}", highlight=False, soft_wrap=True)
        virtual_only = [k for k in kinds if k in VIRTUAL_ONLY and not profile.simulated]
        taken = Counter(k for t in tasks for k in applicable(t, kinds, profile.simulated))
        parts = [f"{k} on {taken[k]} of {len(tasks)} instances" for k in kinds if k not in virtual_only]
        out.print(f"--vary {cond} on phone profile {profile.id}: " + "; ".join(parts)
                  + (f"; not applied (virtual phone only): {', '.join(virtual_only)}" if virtual_only else ""),
                  highlight=False, soft_wrap=True)


def _run(args: argparse.Namespace) -> int:
    _check_flags(args)
    _check_adb_servers(_csv(args.phones))
    if args.plan:
        return _plan_only(args)
    if args.resume:
        _refuse_changes_on_resume(args)
    _check_run_names(args)
    from agent_host.runs.run import DEFAULT_RUNS_DIR, new_run_id
    run_dir = args.resume or args.out or DEFAULT_RUNS_DIR / new_run_id()
    limits = {"request_timeout": args.request_timeout, "episode_timeout": args.episode_timeout,
              "phone_wait": args.phone_wait}
    stop, signals = threading.Event(), list[int]()
    with _stop_on_signals(stop, signals):
        try:
            result = _start_or_resume(args, run_dir, limits, stop)
        except KeyboardInterrupt:
            from agent_host.config.manifest import MANIFEST
            if (run_dir / MANIFEST).exists():
                print(f"stopped at once: the episodes in flight are not recorded; resume with: "
                      f"agent-host run --resume {run_dir}", file=sys.stderr, flush=True)
            raise
    return _finish(args, result, signals)


def _check_adb_servers(phones: list[str]) -> None:
    """Each local adb server the phones go through is an adb server, said at once: a port held
    by something else (an HTTP server, say) made the run wait 44 s in adb's own retries before
    saying so, where `phone start` says it at once."""
    from agent_host.runs.phone_lock import phone_key
    from virtual_phone import adb_server
    ports = set()
    for spec in phones:     # phone_key: HOST:PORT/SERIAL, the local server's port filled in, loopback as 127.0.0.1
        host, _, digits = phone_key(spec).partition("/")[0].rpartition(":")
        if host == "127.0.0.1" and digits.isdigit():
            ports.add(int(digits))
    for port in sorted(ports):
        if adb_server.listener(port) == "other":
            raise UserError(f"--phones: port {port} is held by a program that is not an adb server "
                            f"(stop it, or set ANDROID_ADB_SERVER_PORT to another port)")


DEFAULT_VARY = "light"


def vary_conditions(args: argparse.Namespace) -> tuple[str, ...]:
    """--vary as the run's conditions, each checked (config/variation.py)."""
    from agent_host.config.variation import parse_vary
    conds = tuple(_csv(args.vary if args.vary is not None else DEFAULT_VARY))
    if not conds:
        raise UserError("--vary: name at least one condition (none, light, full, or kinds)")
    for c in conds:
        try:
            parse_vary(c)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    dup = next((c for n, c in enumerate(conds) if c in conds[:n]), None)
    if dup is not None:
        raise UserError(f"--vary: {dup!r} is given twice")
    if len(conds) > 1 and args.until_decided:
        raise UserError("--vary: --until-decided plays one condition; give one")
    return conds


def _check_flags(args: argparse.Namespace) -> None:
    if not args.resume:
        vary_conditions(args)
    if not 1 <= args.max_attempts <= 20:
        raise UserError("--max-attempts must be between 1 and 20")
    for flag, most in (("startup_timeout", 86400), ("request_timeout", 86400), ("episode_timeout", 7 * 86400),
                       ("phone_wait", 86400)):
        value = getattr(args, flag)
        if value is not None and not 0 < value <= most:
            raise UserError(f"--{flag.replace('_', '-')} must be more than 0 and at most {most} seconds")
    if not args.until_decided and (args.detect is not None or args.budget is not None):
        raise UserError("--detect and --budget go with --until-decided")


def _plan_only(args: argparse.Namespace) -> int:
    from agent_host.cli.output import stdout_console
    from agent_host.config.tasks import load_tasks
    variants = tuple(_csv(args.variants))
    bad = [v for v in variants if v not in ("base", "verify")]
    if not variants or bad:
        raise UserError(f"--variants: unknown variant {bad[0]!r} (base, verify)" if bad else
                        "--variants: name at least one (base, verify)")
    tasks = load_tasks(_csv(args.tasks), variants=variants)
    if _csv(args.phones):   # what these phones cannot serve is not planned, and said so
        from agent_host.runs.requirements import servable_tasks
        from agent_host.config.phones import load_phone_profile
        tasks = servable_tasks(tasks, _csv(args.phones), say=stdout_console().print,
                               profile=load_phone_profile(args.phone_profile))
    return _plan(args, tasks)


def _refuse_changes_on_resume(args: argparse.Namespace) -> None:
    given = [flag for flag, value, default in (
        ("--builds", args.builds, None), ("--tasks", args.tasks, None), ("--variants", args.variants, "base"),
        ("--repeats", args.repeats, 1), ("--seed", args.seed, 0), ("--out", args.out, None),
        ("--host-profile", args.host_profile, None), ("--phone-profile", args.phone_profile, "virtual"),
        ("--baseline", args.baseline, None), ("--until-decided", args.until_decided, False),
        ("--interleave", args.interleave, False), ("--vary", args.vary, None),
        ("--observation", args.observation, None), ("--taught", args.taught, None)) if value != default]
    if given:
        raise UserError(f"{', '.join(given)}: a resume runs what its manifest planned; "
                        f"{'it' if len(given) == 1 else 'they'} cannot change with --resume "
                        f"(start a new run with --out instead)")


def _check_run_names(args: argparse.Namespace) -> None:
    if args.tasks is not None and not _csv(args.tasks):
        raise UserError("--tasks is empty: name task files, directories or ids (leave it out for tasks/)")
    if args.out is not None and (not str(args.out).strip() or args.out.name in ("", ".", "..")):
        raise UserError(f"--out {str(args.out)!r}: name a run directory (its name is the run id)")


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event, signals: list[int]) -> Iterator[None]:
    """The first SIGINT/SIGTERM sets `stop` (no new episode starts); a second stops at once."""
    def on_signal(signum: int, _frame: object) -> None:
        if signals:  # the second: stop at once (nothing recorded is lost)
            from agent_host.cli import Terminated
            raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        signals.append(signum)
        stop.set()
        print(f"\n{signal.Signals(signum).name}: no new episodes start; the ones in flight finish, then the "
              f"report of what ran is written (a second signal stops at once)", file=sys.stderr, flush=True)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)} \
        if threading.current_thread() is threading.main_thread() else {}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _finish(args: argparse.Namespace, result: RunResult, signals: list[int]) -> int:
    """The summary, the decision, the report; 130/143 when a signal stopped the run."""
    from agent_host.cli.output import stdout_console
    from agent_host.cli.summary import print_summary
    out = stdout_console()
    print_summary(result, console=out)
    _print_decision(result.run_dir, out)
    if not args.no_report:
        from agent_host.cli.summary import write_report
        try:
            html = write_report(result.run_dir, console=out)
        except OSError as exc:
            raise UserError(f"the run finished but its report could not be written ({exc}); "
                            f"fix that, then: agent-host report {result.run_dir}") from None
        out.print(f"report: {html}")
    if result.stopped:
        name = signal.Signals(signals[0]).name if signals else "a signal"
        print(f"stopped by {name}: the episodes that ran are recorded in {result.run_dir}; resume with: "
              f"agent-host run --resume {result.run_dir}", file=sys.stderr, flush=True)
        return 143 if signals and signals[0] == signal.SIGTERM else 130
    return 0


def _start_or_resume(args: argparse.Namespace, run_dir: Path, limits: dict, stop: threading.Event):
    from rich.console import Console

    from agent_host.cli.steps import run_progress
    from agent_host.runs.run import resume_run, start_run

    console = Console(stderr=True)
    with run_progress(console, enabled=not args.quiet) as live:
        if args.resume:
            return resume_run(args.resume, phones=_csv(args.phones) or None,
                              max_attempts=args.max_attempts, startup_timeout=args.startup_timeout,
                              hook=live.hook, limits=limits, wait_for_phone=wait_seconds(args), stop=stop,
                              driver=lambda m: _driver_for(m.sequential, m.order))
        from agent_host.config.hosts import find_build
        from agent_host.config.phones import load_phone_profile
        from agent_host.config.tasks import load_tasks

        if not _csv(args.builds):
            raise UserError("--builds is required (or --resume RUN_DIR)")
        variants = tuple(_csv(args.variants))
        if not variants:
            raise UserError("--variants: name at least one (base, verify)")
        bad = [v for v in variants if v not in ("base", "verify")]
        if bad:
            raise UserError(f"--variants: unknown variant {bad[0]!r} (base, verify)")
        from agent_host.serving.launch import preflight

        builds = [find_build(b, args.host_profile) for b in _csv(args.builds)]
        if args.observation:   # recorded in the manifest's builds, so a resume plays the same
            builds = [b.model_copy(update={"observation": args.observation}) for b in builds]
        for b in builds:
            preflight(b)
        if args.baseline and args.baseline not in {b.id for b in builds}:
            raise UserError(f"--baseline: {args.baseline!r} is not one of --builds")
        tasks = load_tasks(_csv(args.tasks), variants=variants)
        taught = {}
        if args.taught is not None:
            from agent_host.config.taught import load_split
            taught = {"taught": load_split(args.taught).model_dump()}
        baseline = args.baseline or next((b.id for b in builds if b.role == "reference"), builds[0].id)
        seq = (_sequential_setup(args, builds, tasks, baseline) if args.until_decided else
               _interleave_setup(args, builds, tasks) if args.interleave else {})
        return start_run(builds=builds, tasks=tasks, repeats=args.repeats, seed=args.seed,
                         phones=_csv(args.phones), profile=load_phone_profile(args.phone_profile),
                         out=run_dir, max_attempts=args.max_attempts,
                         startup_timeout=args.startup_timeout, hook=live.hook,
                         extra_manifest={"baseline": baseline, "host_profile": _profile_ref(args.host_profile), **seq,
                                         **taught},
                         limits={k: v for k, v in limits.items() if v is not None},
                         wait_for_phone=wait_seconds(args), stop=stop,
                         driver=_driver_for(seq.get("sequential"), seq.get("order")),
                         vary=vary_conditions(args))



def _profile_ref(host_profile: str | None) -> str | None:
    """--host-profile as the manifest keeps it, a file as an absolute path: a resume reads a
    build's `env:` values from it again (a run's files hold only their names)."""
    if host_profile and Path(host_profile).is_file():
        return str(Path(host_profile).resolve())
    return host_profile


def _driver_for(sequential: dict | None, order: list | None):
    """How a run is played, from its manifest's `sequential` and `order`: a sequential run by
    its rounds with the report layer's rule, an interleaved one in that order, else None
    (build after build)."""
    if sequential:
        from agent_host.report.sequential import judge_for
        from agent_host.runs.sequential import make_driver
        return make_driver(judge_for)
    if order:
        from agent_host.runs.sequential import interleaved_driver
        return interleaved_driver
    return None


def _together(builds: list) -> tuple[bool, str]:
    from agent_host.config import machine
    from agent_host.runs.order import servers_together
    facts = machine.read_host_facts()
    return servers_together(builds, facts.usable_cores, facts.memory_gib)


def _shared(builds: list, together: bool) -> list[str]:
    """Local model builds whose servers are up together: their speed figures are marked."""
    local = [b.id for b in builds if b.traits.local_model]
    return local if together and len(local) > 1 else []


def _interleave_setup(args: argparse.Namespace, builds: list, tasks: list) -> dict:
    """The manifest's order of a fixed interleaved run (runs/order.py)."""
    from agent_host.runs.order import interleave, order_record
    from agent_host.runs.plan import plan

    together, why = _together(builds)
    try:
        planned = plan([b.id for b in builds], tasks, args.repeats, args.seed, vary_conditions(args))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return {"order": order_record(interleave(planned, args.seed, together)), "order_together": together,
            "order_mode": why, "shared_machine": _shared(builds, together)}


def _sequential_setup(args: argparse.Namespace, builds: list, tasks: list, baseline: str) -> dict:
    """The manifest's `sequential` and `order` blocks for --until-decided; bad flags fail here."""
    from agent_host.report.sequential import BUDGET_REPEATS, configure
    from agent_host.runs.sequential import parse_budget

    if len(builds) != 2:
        raise UserError(f"--until-decided compares two builds (got {len(builds)} in --builds)")
    if args.detect is not None and not 0 < args.detect < 100:
        raise UserError("--detect must be more than 0 and less than 100 percentage points")
    try:
        episodes, seconds = parse_budget(args.budget) if args.budget else (None, None)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    n_tasks = len({t.task_id for t in tasks})
    budget_repeats = BUDGET_REPEATS if episodes is None else episodes / (2 * len(tasks))
    if budget_repeats < args.repeats:
        raise UserError(f"--budget {args.budget}: the first pass alone is {2 * len(tasks) * args.repeats} "
                        f"episodes ({len(tasks)} task instances x {args.repeats} repeats x 2 builds)")
    together, why = _together(builds)
    other = next(b.id for b in builds if b.id != baseline)
    state = configure(baseline, other, n_tasks, args.repeats, budget_repeats,
                      None if args.detect is None else args.detect / 100, seconds)
    state.update(together=together, order_mode=why, budget_episodes=episodes)
    return {"sequential": state, "shared_machine": _shared(builds, together)}


def _print_decision(run_dir: Path, out) -> None:
    """How a sequential run ended, in one line (nothing for a fixed run)."""
    from agent_host.config.manifest import MANIFEST, load_manifest
    try:
        m = load_manifest(run_dir / MANIFEST)
    except (OSError, UserError):
        return
    st = m.sequential or {}
    rounds = st.get("rounds") or []
    d = rounds[-1].get("decision") if rounds else None
    if d:
        out.print(f"sequential: {d['outcome']} ({st['build']} vs {st['baseline']}) at look {d['look']} of "
                  f"{d['looks']}: {d['why']}", highlight=False)
