"""`agent-host baseline blind-replay RUN`: a baseline that replays recorded calls blind."""

from __future__ import annotations

import argparse
from pathlib import Path

from agent_host.errors import UserError

EPILOG = """\
For each task instance of RUN, the tool calls of the reference build's successful episode
(the run's baseline, or --build; the first repeat, the unvaried condition where the run has
one) are played again, as sent, never reading the screen, on a fresh episode whose phone is
varied (--vary, default full) from another seed than the run's. It is an ordinary run, kept
in RUN/baselines/blind-replay/ (run the command again to resume it), and `agent-host report
RUN` shows its success beside complete-at-once and infeasible-at-once.

Why: when replaying a memorised path scores as well as a model, the suite measures memory of
a path, not reading the screen, and cannot rank builds. Under full variations a suite fit to
rank builds keeps blind replay of its reference solutions at or under about 10%.

examples:
  agent-host run --builds suite-ref --vary none --out runs/ref     # the reference solutions, recorded
  agent-host baseline blind-replay runs/ref                        # replayed blind under full
  agent-host baseline blind-replay runs/ref --vary none --out /tmp/blind-none   # the contrast
  agent-host baseline blind-replay runs/ref --repeats 3 --out /tmp/blind3    # three phones per instance
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("baseline", help="baselines a suite must beat: blind replay of recorded calls",
                       description=__doc__)
    verbs = p.add_subparsers(dest="baseline_verb", metavar="VERB", required=True)
    b = verbs.add_parser("blind-replay", help="replay a build's recorded calls without reading the screen",
                         description="Replay each instance's recorded calls blind, on phones varied from "
                                     "another seed.", epilog=EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("run_dir", type=Path, metavar="RUN", help="a run directory whose episodes are replayed")
    b.add_argument("--build", help="whose successful episodes are replayed (default: the run's baseline)")
    b.add_argument("--vary", default="full", metavar="CONDITION",
                   help="how the replayed phones differ: none, light, full (default) or kinds joined by '+'")
    b.add_argument("--repeats", type=int, default=1,
                   help="phones per instance, each varied from its own seed (default 1): one phone is one "
                        "draw of the variation, so a few repeats make the score steadier")
    b.add_argument("--phones", help="comma-separated serials (default: start a virtual phone)")
    b.add_argument("--out", type=Path, help="the replay's run directory (default: RUN/baselines/blind-replay)")
    b.add_argument("--quiet", action="store_true", help="no progress display")
    b.add_argument("--json", action="store_true", help="print the result as JSON")
    b.set_defaults(func=_blind_replay)


def _blind_replay(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console

    from agent_host.cli.output import stdout_console
    from agent_host.cli.phone import serial_or_virtual
    from agent_host.cli.steps import run_progress
    from agent_host.config.manifest import MANIFEST
    from agent_host.config.records import BLIND_REPLAY
    from agent_host.report.robustness import blind_replay
    from agent_host.config.variation import parse_vary
    from agent_host.runs import blind_replay as br

    try:
        parse_vary(args.vary)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not 1 <= args.repeats <= 100:
        raise UserError(f"--repeats must be between 1 and 100 (got {args.repeats})")
    manifest = br.source_manifest(args.run_dir)
    out = args.out or args.run_dir / BLIND_REPLAY
    recording = br.record(args.run_dir, manifest, args.build)
    if not recording.calls:
        raise UserError(f"{args.run_dir}: {recording.build} has no successful base episode to replay")
    phones = [p for p in (args.phones or "").split(",") if p]
    if len(phones) > 1:
        raise UserError("--phones: blind replay plays on one phone")
    console = Console(stderr=True)
    with serial_or_virtual(phones[0] if phones else None, console.print) as serial:
        with run_progress(console, enabled=not args.quiet) as live:
            if (out / MANIFEST).exists():
                from agent_host.runs.run import resume_run
                result = resume_run(out, phones=[serial], hook=live.hook)
            else:
                result = _start(args, manifest, recording, out, serial, live.hook)
    summary = br.summarise(out, recording)
    head = blind_replay(args.run_dir, out)
    summary["headline"] = head.model_dump(include={"mean", "low", "high", "n_tasks"}) if head else None
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        stdout_console().print(
            f"blind replay of {recording.build}'s calls under --vary {args.vary}: "
            f"{summary['success']} of {summary['replayed']} replayed episodes succeed "
            f"({summary['success_rate']:.0%}"
            + (f"; {head.mean:.1%} on the headline, the mean over {head.n_tasks} tasks"
               if head is not None and head.mean is not None else "")
            + f"); {len(recording.missing)} instance(s) had no successful episode "
            f"to replay. Run: {result.run_dir}", soft_wrap=True)
    return 0


def _start(args, manifest, recording, out, serial, hook):
    from agent_host.config.hosts import find_build
    from agent_host.config.phones import load_phone_profile
    from agent_host.config.tasks import load_tasks
    from agent_host.runs import blind_replay as br
    from agent_host.runs.run import start_run

    hosts = br.write_policy(out, recording)
    sources = sorted({t.source for t in manifest.tasks if t.source})
    by_key = {t.key: t for t in load_tasks(sources, variants=("base",))}
    tasks = [by_key[k] for k in recording.calls if k in by_key]
    if not tasks:
        raise UserError(f"{args.run_dir}: none of the recorded instances is found in its task files")
    build = find_build(br.BUILD_ID, hosts)
    return start_run(builds=[build], tasks=tasks, repeats=args.repeats, seed=br.replay_seed(manifest), phones=[serial],
                     profile=load_phone_profile(manifest.phone_profile), out=out, hook=hook, vary=(args.vary,),
                     extra_manifest={"host_profile": str(hosts.resolve()), "baseline": br.BUILD_ID,
                                     "blind_replay": {"source_run": str(args.run_dir.resolve()),
                                                      "build": recording.build,
                                                      "missing": recording.missing}})
