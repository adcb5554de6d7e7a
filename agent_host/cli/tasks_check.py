"""`agent-host tasks check-solutions`: every task's reference solution must end in `success`.

Called by agent_host.cli.tasks (`run(args)`; args.phone: a serial or None). Each task instance
with a `solution:` runs as an episode against an in-process policy server playing it:
- base variant: the solution; it must end in `success` (`infeasible_claimed` on an infeasible
  task);
- verify variant: the goal already holds, so the reference policy is to recognise it: the
  one-step script `task_complete`; it must end in `success`. This checks that goal_setup makes
  the goal true and that the check sees it.
Without --phone a virtual phone is started for the check and stopped afterwards.
Exit code 1 unless every episode ends as expected.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agent_host.config.observation import TEXT, ObservationSpec
from agent_host.errors import UserError, check_dir_usable
from agent_host.policy.suite import RECOGNISE as VERIFY_SCRIPT

if TYPE_CHECKING:
    from rich.console import Console

    from agent_host.config.records import EpisodeRecord
    from agent_host.config.phones import PhoneProfile
    from agent_host.config.tasks import TaskInstance


def expected_outcome(rec: EpisodeRecord) -> str:
    """What a reference solution's episode must end as: on the task its phone made of it (an
    infeasible task's `vary.feasible` phone makes it feasible)."""
    return "infeasible_claimed" if rec.infeasible else "success"


def select_tasks(specs: list[str] | None) -> list[TaskInstance]:
    from agent_host.config.tasks import load_tasks
    tasks = load_tasks(specs or [], ("base", "verify"))
    return [t for t in tasks if t.solution or t.variant == "verify"]


def _failure_detail(rec: EpisodeRecord, out: Path) -> str:
    if rec.error:
        return rec.error
    detail = []
    try:
        lines = (out / "steps.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    for line in lines:
        step = json.loads(line)
        raw = step.get("raw_output") or {}
        for reply in [*(raw.get("retried") or []), raw]:
            content = reply.get("content") if isinstance(reply, dict) else None
            if content and "policy script" in content:
                detail.append(f"step {step['step']}: {content.split(': ', 1)[-1]}")
        action = step.get("action") or {}
        if action.get("error"):
            detail.append(f"step {step['step']}: {action['error']}")
    first = rec.goal_first_step
    detail.append(f"goal first held at step {first if first is not None else '-'}, "
                  f"complete at {rec.complete_step if rec.complete_step is not None else '-'}")
    return "; ".join(dict.fromkeys(detail))


def check(tasks: list[TaskInstance], serial: str, *, out_root: Path, profile: PhoneProfile, console: object = None,
          on_result: Callable[[TaskInstance, EpisodeRecord, Path], object] | None = None, vary: str = "none",
          seeds: int = 1) -> list[tuple[TaskInstance, EpisodeRecord, Path]]:
    """Run the reference policy of each task instance on `serial`, once per seed (0..seeds-1)
    with the phone varied as `vary` says (config/variation.py); (task, record, dir) each."""
    from agent_host.agent.episode import run_episode, varied_phone
    from agent_host.config.tasks import with_values
    from agent_host.config.records import EpisodeIdentity
    from agent_host.policy.script import PolicyScript
    from agent_host.policy.server import PolicyServer
    from agent_host.phone.device import Phone
    from agent_host.runs.plan import derive_seed

    phone = Phone.connect(serial)
    results = []
    for task in tasks:
        for s in range(seeds):
            out = out_root / (task.key.replace("/", "_").replace("@", "_") + (f"__s{s}" if seeds > 1 else ""))
            identity = EpisodeIdentity.of("solution", task, repeat=s, seed=derive_seed(0, task.key, s), vary=vary)
            # the solution of the data this episode's phone carries (its `vary.values` overlay)
            played = with_values(task, varied_phone(task, identity, profile).values or 0)
            script = VERIFY_SCRIPT if task.variant == "verify" else played.solution
            server = PolicyServer(PolicyScript.from_data(script, source=f"{task.source}: solution")).start()
            try:
                rec = run_episode(task, phone, server.endpoint("solution"), out_dir=out, profile=profile,
                                  screenshots=False, identity=identity, observation=solution_observation(task))
            finally:
                server.stop()
            results.append((task, rec, out))
            if on_result is not None:
                on_result(task, rec, out)
            if rec.outcome == "error" and rec.error and rec.error.startswith("phone:"):
                phone = Phone.connect(serial)  # the next task gets a fresh connection
    return results


def solution_observation(task: TaskInstance) -> ObservationSpec:
    """A solution is played as a text build; one that names points (tap_xy, ...) names the
    phone's pixels, so it is played by a build with that frame."""
    from agent_host.config.actions import POINT_ACTIONS

    points = any(next(iter(item), None) in POINT_ACTIONS for item in task.solution)   # {tool: {args}}
    return ObservationSpec(coordinates="pixels") if points else TEXT


def _check_vary(vary: str, seeds: int) -> None:
    from agent_host.config.variation import parse_vary
    try:
        parse_vary(vary)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not 1 <= seeds <= 100:
        raise UserError(f"--seeds must be between 1 and 100 (got {seeds})")


def run(args: argparse.Namespace) -> int:
    from agent_host.cli.output import stdout_console
    from agent_host.config.phones import load_phone_profile

    console = stdout_console()
    # getattr: the Namespace may hold only some of check-solutions' flags (tests pass a few)
    specs = getattr(args, "tasks", None) or getattr(args, "paths", None) or []
    tasks = select_tasks(list(specs))
    if not tasks:
        raise UserError("no task has a solution to check")
    profile = load_phone_profile(getattr(args, "profile", None) or "virtual")
    serial = getattr(args, "phone", None)
    if getattr(args, "out", None):
        check_dir_usable(args.out, "--out")
    vary = getattr(args, "vary", None) or "none"
    _check_vary(vary, getattr(args, "seeds", None) or 1)
    from agent_host.config.variation import plays
    left = sorted({t.task_id for t in tasks if not plays(t.vary_full, vary)})
    if left:
        console.print(f"left out of --vary {vary} (their vary.full is false: no varied phone differs for "
                      f"them): {', '.join(left)}", highlight=False, soft_wrap=True)
        tasks = [t for t in tasks if plays(t.vary_full, vary)]
    if serial:
        from agent_host.cli.locking import wait_seconds
        from agent_host.runs.phone_lock import PhoneLocks
        with PhoneLocks([serial], wait=wait_seconds(args)):
            return _check_on(args, console, tasks, profile, serial)
    return _check_on(args, console, tasks, profile, None)


def _check_on(args: argparse.Namespace, console: Console, tasks: list[TaskInstance], profile: PhoneProfile, serial: str | None) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    if serial:
        from agent_host.phone.device import Phone, PhoneError
        try:
            Phone.connect(serial)
        except PhoneError as exc:
            raise UserError(f"--phone {serial}: {exc} (is it listed by `adb devices`?)") from None
    # getattr: as in run, a Namespace may hold only some of the flags
    out_root = Path(getattr(args, "out", None) or tempfile.mkdtemp(prefix="agent-host-check-solutions-"))
    vary, seeds = getattr(args, "vary", None) or "none", getattr(args, "seeds", None) or 1

    from agent_host.cli.phone import serial_or_virtual

    t0 = time.monotonic()
    failures = 0
    rows = []
    with serial_or_virtual(serial, console.print) as serial:
        with Progress(TextColumn("[bold]check-solutions"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                      transient=False) as progress:
            bar = progress.add_task(tasks[0].key, total=len(tasks) * seeds)
            keys = iter([t.key for t in tasks for _ in range(seeds)][1:] + [""])

            def done(task: TaskInstance, rec: EpisodeRecord, out: Path) -> None:
                nonlocal failures
                want = expected_outcome(rec)
                ok = rec.outcome == want
                failures += not ok
                mark = "[green]ok[/]" if ok else "[red]FAIL[/]"
                seed = f" seed {rec.repeat}" if seeds > 1 else ""
                progress.console.print(f"{mark} {task.key + seed:<28} {rec.outcome:<19} {rec.steps:>2} steps "
                                       f"{rec.wall_s:5.1f} s")
                rows.append((task, rec, want, ok, "" if ok else _failure_detail(rec, out)))
                progress.update(bar, advance=1, description=next(keys))

            check(tasks, serial, out_root=out_root, profile=profile, on_result=done, vary=vary, seeds=seeds)

    table = Table(title=f"task solutions on {serial} ({profile.id})")
    table.add_column("task", no_wrap=True)
    for col in ("expected", "outcome", "steps", "time"):
        table.add_column(col, no_wrap=True)
    table.add_column("detail", overflow="fold")
    for task, rec, want, ok, detail in rows:
        table.add_row(task.key + (f" seed {rec.repeat}" if seeds > 1 else ""), want, f"[green]{rec.outcome}[/]" if ok else f"[red]{rec.outcome}[/]",
                      str(rec.steps), f"{rec.wall_s:.1f} s", detail)
    console.print(table)
    total = len(rows)
    # the closing line names each failure, so a log cut to its tail (CI's) still says which
    failed = [f"{task.key}{f' seed {rec.repeat}' if seeds > 1 else ''} ({rec.outcome}: {detail})" for task, rec, _, ok, detail in rows if not ok]
    verdict = "all solutions succeed" if not failures else f"{failures} of {total} failed: {'; '.join(failed)}"
    console.print(f"{total} episodes in {time.monotonic() - t0:.0f} s: {verdict}. Episode folders: {out_root}",
                  soft_wrap=True)
    return 1 if failures else 0
