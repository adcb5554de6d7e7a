"""`agent-host replay RUN`: send every request the reference build made in a run to other builds."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from agent_host.errors import UserError

if TYPE_CHECKING:
    from agent_host.config.manifest import RunManifest

EPILOG = """\
Every episode records each request it sent (requests.json: the final conversation, each
request's end in it, the tools and options, a sha256 of the body as sent). replay rebuilds
each request of the --reference build's episodes byte for byte and sends it greedily to each
build of --builds (one server at a time, started and stopped as in a run), then compares the
candidate's answer with the reference's at that exact state: the same action (tool and
canonical arguments; a final tool's `reason` text aside), the same tool only, or different.

Each step has a role, from the reference's point of view: navigation (the goal did not hold
yet), completion (it held and the reference called task_complete), after_goal (it held and
the reference did something else), infeasible (the reference called task_infeasible). Per
candidate it reports agreement over all steps and by role, completion agreement
(P(candidate calls task_complete | the reference did, goal held)) and false completion
(P(candidate calls task_complete | goal not held)), with 95% intervals over tasks; the first
divergence of each episode; and with vLLM builds the log-probability of the reference's own
reply under the candidate minus under the reference (a gap that moves before an action
flips) and the ten largest gaps (--no-logprobs skips the scoring).

Answers go to RUN/replay/<reference>/replay.jsonl as they come (kill it and run it again:
only what is missing is asked); RUN/replay/<reference>/replay.json is the summary, and
`agent-host report RUN` shows it with each step's candidate answers in the viewer. One
writer at a time per run directory (the run lock). Episodes recorded before requests.json
existed are refused.

Build ids: the run's own builds by id, else as for `agent-host run` (ID, PROFILE/ID, or ID in
--host-profile). Put the reference in --builds too to measure how deterministic serving it is.

examples:
  agent-host replay reports/runs/demo-X --reference embedded-bf16 --builds embedded-w4a16,embedded-w8a8
  agent-host replay RUN --reference embedded-bf16 --builds embedded-bf16 --json
  agent-host replay RUN --reference oracle --builds flawed --tasks wifi-on,dark-theme-on --no-logprobs
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="replay the reference build's requests of a run on other builds",
                       description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", metavar="RUN", type=Path, help="a run directory")
    p.add_argument("--reference", required=True, metavar="BUILD", help="the build whose episodes are replayed")
    p.add_argument("--builds", required=True, metavar="X,Y", help="comma-separated candidate build ids")
    p.add_argument("--tasks", metavar="T,U", help="only these tasks (task ids or instance ids)")
    p.add_argument("--host-profile", metavar="P", help="host profile id or YAML file for build ids not in the run")
    p.add_argument("--no-logprobs", action="store_true", help="skip scoring the reference's replies (vLLM builds)")
    p.add_argument("--startup-timeout", type=float, help="seconds per server start (default: each build's)")
    p.add_argument("--json", action="store_true", help="print replay.json")
    p.set_defaults(func=_run)


def resolve_builds(manifest: RunManifest, ids: list[str], host_profile: str | None,
                   where: Path = Path("the run")) -> list:
    """The builds `ids`: as the run recorded them (their `env:` values, which a run does not
    keep, from the build configured now, as a resume takes them), else from the host profile."""
    from agent_host.config.builds import Build
    from agent_host.config.hosts import find_build
    from agent_host.runs.run import with_env

    own = {b["id"]: b for b in manifest.builds if "id" in b}
    return [with_env(Build.model_validate(own[i]), host_profile or manifest.host_profile, where) if i in own
            else find_build(i, host_profile) for i in ids]


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from agent_host.cli.steps import status_progress
    from agent_host.report.replay import write_summary
    from agent_host.runs.replay import replay_run
    from agent_host.runs.store import RunStore

    ids = [b.strip() for b in args.builds.split(",") if b.strip()]
    if not ids or len(set(ids)) != len(ids):
        raise UserError("--builds: name one or more distinct build ids")
    if args.startup_timeout is not None and not args.startup_timeout > 0:
        raise UserError("--startup-timeout must be more than 0 seconds")
    try:
        manifest = RunStore(args.run_dir).read_manifest()
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    if args.reference not in manifest.build_ids():
        raise UserError(f"--reference {args.reference}: not a build of {args.run_dir} "
                        f"({', '.join(manifest.build_ids())})")
    reference, *candidates = resolve_builds(manifest, [args.reference, *ids], args.host_profile, args.run_dir)
    for b in candidates:
        if not b.runnable:
            raise UserError(f"build {b.id} is listed but not runnable: {' '.join(b.notes.split())}")
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None
    err = Console(stderr=True, highlight=False)
    with status_progress("replay", err) as status:
        out = replay_run(args.run_dir, reference, candidates, tasks=tasks, logprobs=not args.no_logprobs,
                         startup_timeout=args.startup_timeout, hook=status.update)
    data = write_summary(out)
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print_replay(data, out)
    return 1 if any(c["errors"] for c in data["candidates"].values()) else 0


def print_replay(data: dict, out: Path | None = None) -> None:
    from rich.table import Table

    from agent_host.cli.output import stdout_console
    from agent_host.config.replay_log import ROLES
    from agent_host.report.replay import rate_text as pct

    con = stdout_console(highlight=False)
    t = Table(title=f"replay of {data['reference']}'s steps: same action as the reference (95% over tasks)",
              title_justify="left")
    for col in ("build", "all steps", *ROLES, "completion agreement", "false completion", "log-prob gap",
                "steps/min"):
        t.add_column(col)
    for b, c in data["candidates"].items():
        gap = c["logprob_gap"]["all"]
        t.add_row(b, pct(c["agreement"]), *(pct(c["by_role"][r]) for r in ROLES), pct(c["completion_agreement"]),
                  pct(c["false_completion"]), "-" if gap is None else f"{gap:+.3f}",
                  "-" if c["steps_per_minute"] is None else f"{c['steps_per_minute']:g}")
    con.print(t)
    for b, c in data["candidates"].items():
        div = [d for d in c["first_divergence"] if d["step"] is not None]
        where = ", ".join(f"{d['episode_id']} step {d['step']} ({d['role']})" for d in div[:4])
        con.print(f"{b}: first divergence in {len(div)}/{len(c['first_divergence'])} episodes"
                  + (f": {where}" + (" ..." if len(div) > 4 else "") if div else ""))
        if c["errors"]:
            con.print(f"[red]{b}: {c['errors']} requests failed: {'; '.join(c['error_examples'])}[/red]")
    if out is not None:
        con.print(f"details: {out / 'replay.json'}")
