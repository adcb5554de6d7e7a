"""`agent-host tasks adversaries`: the adversaries of policy/adversaries.py played against every
task instance's base variant; none may succeed.

Each (instance, kind) runs as an episode through the real policy server and step loop on a phone
(default: a fresh virtual phone). A kind that finds nothing to change on an instance (no object
added, none deleted) is counted as not applicable. Exit code 1 when any adversary ends in
`success` (or `infeasible_claimed` on an infeasible task), i.e. the judge was fooled.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent_host.errors import UserError
from agent_host.policy.adversaries import KINDS

if TYPE_CHECKING:
    from agent_host.config.phones import PhoneProfile
    from agent_host.config.tasks import TaskInstance


@dataclass(frozen=True)
class Played:
    instance: str
    kind: str
    applied: bool
    outcome: str
    error: str | None
    commands: list[str]
    infeasible: bool = False

    @property
    def fooled(self) -> bool:
        """The judge passed a policy that did not do what was asked: a success, or a claim of
        infeasibility on an infeasible task (the only place it counts as one)."""
        return self.applied and (self.outcome == "success" or self.outcome == "infeasible_claimed" and self.infeasible)


def play(tasks: list[TaskInstance], serial: str, kinds: tuple[str, ...], *, out_root: Path, profile: PhoneProfile,
         on_result: Callable[[Played], object] | None = None) -> list[Played]:
    """Every kind against every base instance of `tasks` on `serial`."""
    from agent_host.agent.episode import run_episode
    from agent_host.phone.device import Phone
    from agent_host.phone.requirements import bind_task
    from agent_host.policy.adversaries import Adversary, applicable
    from agent_host.policy.server import PolicyServer

    phone = Phone.connect(serial)
    out = []
    for task in (t for t in tasks if t.variant == "base" and t.solution):
        for kind in kinds:
            if not applicable(kind, task):
                played = Played(task.key, kind, False, "not played", None, [], task.infeasible)
                out.append(played)
                if on_result is not None:
                    on_result(played)
                continue
            adversary = Adversary(bind_task(task, phone), kind, phone, profile)
            server = PolicyServer(adversary).start()
            folder = out_root / f"{task.key}__{kind}".replace("/", "_").replace("@", "_")
            try:
                rec = run_episode(task, phone, server.endpoint("adversary"), out_dir=folder, profile=profile,
                                  screenshots=False)
            finally:
                server.stop()
            played = Played(task.key, kind, bool(adversary.applied), rec.outcome, rec.error, adversary.applied or [],
                            task.infeasible)
            out.append(played)
            if on_result is not None:
                on_result(played)
    return out


def tally(results: list[Played]) -> dict[str, dict[str, int]]:
    """Per kind: tried (applied), non-success among them, not applicable, errors."""
    out = {}
    for kind in dict.fromkeys(r.kind for r in results):
        rs = [r for r in results if r.kind == kind]
        tried = [r for r in rs if r.applied and r.outcome != "error"]
        out[kind] = {"tried": len(tried), "non_success": sum(not r.fooled for r in tried),
                     "not_applicable": sum(not r.applied for r in rs),
                     "errors": sum(r.applied and r.outcome == "error" for r in rs),
                     **{f"outcome_{o}": n for o, n in sorted(Counter(r.outcome for r in tried).items())}}
    return out


def run(args: argparse.Namespace) -> int:
    from agent_host.cli.output import stdout_console
    from agent_host.cli.phone import serial_or_virtual
    from agent_host.config.phones import load_phone_profile
    from agent_host.config.tasks import load_tasks

    kinds = tuple(args.kind or KINDS)
    tasks = [t for t in load_tasks(list(args.tasks or []), ("base",)) if t.solution]
    if not tasks:
        raise UserError("no task has a solution to build adversaries from")
    profile = load_phone_profile(args.profile or "virtual")
    console = stdout_console()
    out_root = Path(args.out or tempfile.mkdtemp(prefix="agent-host-adversaries-"))
    t0 = time.monotonic()

    def shown(p: Played) -> None:
        if not args.json:
            mark = "FOOLED" if p.fooled else ("n/a" if not p.applied else "ok")
            console.print(f"{mark:<6} {p.instance:<32} {p.kind:<23} {p.outcome}", highlight=False)
    with serial_or_virtual(args.phone) as serial:
        results = play(tasks, serial, kinds, out_root=out_root, profile=profile, on_result=shown)
    counts = tally(results)
    fooled = [r for r in results if r.fooled]
    if args.json:
        print(json.dumps({"kinds": counts, "fooled": [asdict(r) for r in fooled],
                          "seconds": round(time.monotonic() - t0, 1)}, indent=1))
    else:
        from rich.table import Table
        table = Table(title=f"adversaries on {len(tasks)} base instances ({serial})")
        for col in ("kind", "tried", "non-success", "not applicable", "errors"):
            table.add_column(col)
        for kind, c in counts.items():
            table.add_row(kind, str(c["tried"]), str(c["non_success"]), str(c["not_applicable"]), str(c["errors"]))
        console.print(table)
        console.print(f"{len(results)} episodes in {time.monotonic() - t0:.0f} s; "
                      + (f"{len(fooled)} fooled the judge" if fooled else "none fooled the judge")
                      + f". Episode folders: {out_root}")
    return 1 if fooled else 0


def add_parser(verbs: argparse._SubParsersAction) -> None:
    ad = verbs.add_parser(
        "adversaries", help="play generated adversaries against every task; fail if any succeeds",
        description="Play, for every task instance with a reference solution, adversaries generated from "
                    "the state readers (docs/tasks.md, 'Adversaries'): a stray object under a near-miss "
                    "name, a deletion done by renaming or moving, a change before task_infeasible, one "
                    "change more than asked. Each runs as a real episode; none may end in success.",
        epilog="examples:\n  agent-host tasks adversaries\n  agent-host tasks adversaries calendar-add-event "
               "--kind stray\n  agent-host tasks adversaries --json > adversaries.json\n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ad.add_argument("tasks", nargs="*", metavar="TASK", help="task ids, files or directories (default: tasks/)")
    ad.add_argument("--kind", action="append", choices=KINDS, help="only these kinds (repeatable)")
    ad.add_argument("--phone", metavar="SERIAL", help="a running phone (default: start a virtual phone)")
    ad.add_argument("--profile", metavar="NAME", help="phone profile (default: virtual)")
    ad.add_argument("--out", metavar="DIR", help="where the episode folders go (default: a temporary directory)")
    ad.add_argument("--json", action="store_true", help="print the counts per kind and the fooled episodes as JSON")
    ad.set_defaults(func=lambda args: run(args))
