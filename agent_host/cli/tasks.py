"""`agent-host tasks`: validate, list and describe task files; run their reference solutions."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agent_host.errors import UserError

DESCRIPTION = """\
Task files are YAML in tasks/ (one task per file, or a list). Each has a goal, setup steps
that put the phone in a start state, a check that says when the goal holds, a step budget and
a teardown. See docs/tasks.md for the format.
"""

EXAMPLES = """\
examples:
  agent-host tasks validate                    every file in tasks/; lists every error
  agent-host tasks validate tasks/wifi-on.yaml my-tasks/
  agent-host tasks list                        ids, variants, apps, budgets, tags
  agent-host tasks list --json | jq '.[].id'
  agent-host tasks list --counts --json        task instances per app and per kind
  agent-host tasks schema > tasks/task.schema.json
  agent-host tasks check-solutions             run each task's solution on a virtual phone
  agent-host tasks adversaries                 play generated adversaries; none may succeed
  agent-host tasks changes                     what each goal_setup changes, beside `change:`

Errors read `FILE:LINE: field.path: message`, one per line; validate exits 1 if there is any.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tasks", help="validate, list and describe task files",
                       description=DESCRIPTION, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])
    verbs = p.add_subparsers(dest="tasks_verb", metavar="<command>")

    v = verbs.add_parser("validate", help="check task files; list every error (exit 1 on any)",
                         description="Load every task file and list every error, one line each: "
                                     "FILE:LINE: field.path: message. Exits 1 if there is any.",
                         epilog="examples:\n  agent-host tasks validate\n"
                                "  agent-host tasks validate tasks/alarm-set.yaml\n",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                   help="task files or directories (default: tasks/)")
    v.set_defaults(func=_validate)

    ls = verbs.add_parser("list", help="list task instances: id, variants, app, max_steps, tags",
                          description="List every task instance (params expanded) with its variants.",
                          epilog="examples:\n  agent-host tasks list\n  agent-host tasks list --json\n"
                                 "  agent-host tasks list --counts --json\n"
                                 "  agent-host tasks list tasks/alarm-set.yaml\n",
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    ls.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                    help="task files or directories (default: tasks/)")
    ls.add_argument("--json", action="store_true", help="one JSON array instead of a table")
    ls.add_argument("--counts", action="store_true",
                    help="only the number of task instances per app and per kind (kind tags: "
                         "multi-app, text-entry, retrieval, long-horizon, infeasible, recognition); "
                         "with --json, one JSON object")
    ls.set_defaults(func=_list)

    sc = verbs.add_parser("schema", help="print the JSON Schema of a task file",
                          description="Print the JSON Schema of a task file. tasks/task.schema.json "
                                      "holds a copy; task files point editors at it with "
                                      "`# yaml-language-server: $schema=./task.schema.json`.",
                          epilog="examples:\n  agent-host tasks schema > tasks/task.schema.json\n",
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    sc.set_defaults(func=_schema)

    cs = verbs.add_parser("check-solutions", help="run every task's solution; fail unless each succeeds",
                          description="Run each task's reference `solution` as a scripted policy on a "
                                      "phone (default: a fresh virtual phone) and fail unless every "
                                      "episode ends in `success` (`infeasible_claimed` on infeasible tasks).",
                          epilog="examples:\n  agent-host tasks check-solutions\n"
                                 "  agent-host tasks check-solutions wifi-on tasks/alarm-set.yaml\n"
                                 "  agent-host tasks check-solutions --phone 127.0.0.1:5601\n"
                                 "  agent-host tasks check-solutions --vary full --seeds 5   # on varied phones\n",
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    cs.add_argument("tasks", nargs="*", metavar="TASK",
                    help="task ids, files or directories (default: tasks/)")
    cs.add_argument("--phone", metavar="SERIAL", help="a running phone (default: start a virtual phone)")
    cs.add_argument("--out", metavar="DIR", help="where the episode folders go (default: a new temporary directory)")
    cs.add_argument("--vary", metavar="CONDITION", default="none",
                    help="vary each episode's phone: none (default), light, full, or kinds joined by '+' "
                         "(docs/tasks.md, \"Variations\")")
    cs.add_argument("--seeds", type=int, default=1, metavar="N",
                    help="play each instance on N seeds (N differently varied phones; default 1)")
    from agent_host.cli.locking import add_wait_flag
    add_wait_flag(cs)
    cs.set_defaults(func=_check_solutions)

    from agent_host.cli import tasks_adversaries
    tasks_adversaries.add_parser(verbs)

    ch = verbs.add_parser("changes", help="measure what each task's goal_setup changes; compare with `change:`",
                          description="For each task instance with a goal_setup, run its setup on a phone "
                                      "(default: a fresh virtual phone), read the task's scope, run goal_setup, "
                                      "read it again, and print the objects added and removed per kind beside "
                                      "the task's declared `change:` (docs/tasks.md, 'What a task changes'). "
                                      "Exit 1 when any disagrees.",
                          epilog="examples:\n  agent-host tasks changes\n  agent-host tasks changes tasks/my-task.yaml "
                                 "--json\n", formatter_class=argparse.RawDescriptionHelpFormatter)
    ch.add_argument("tasks", nargs="*", metavar="TASK", help="task ids, files or directories (default: tasks/)")
    ch.add_argument("--phone", metavar="SERIAL", help="a running phone (default: start a virtual phone)")
    ch.add_argument("--json", action="store_true", help="one JSON object per instance")
    ch.set_defaults(func=_changes)


def _changes(args: argparse.Namespace) -> int:
    from agent_host.config.phones import load_phone_profile
    from agent_host.config.tasks import load_tasks
    from agent_host.cli.phone import serial_or_virtual
    from agent_host.phone.changes import measure_change
    from agent_host.phone.device import Phone

    instances = load_tasks(list(args.tasks or []))
    verify = {t.id: t for t in instances if t.variant == "verify"}
    pairs = [(t, verify[t.id]) for t in instances if t.variant == "base" and t.id in verify]
    if not pairs:
        raise UserError("no task instance has a goal_setup to measure")
    bad = 0
    with serial_or_virtual(args.phone) as serial:
        phone, profile = Phone.connect(serial), load_phone_profile("virtual")
        for base, ver in pairs:
            m = measure_change(base, ver, phone, profile)
            bad += not m.agrees
            if args.json:
                print(json.dumps({"instance": m.instance, "declared": m.declared, "measured": m.measured,
                                   "agrees": m.agrees}))
            else:
                print(f"{'ok  ' if m.agrees else 'DIFF'} {m.instance:<34} declared {_change_text(m.declared):<28} "
                      f"goal_setup {_change_text(m.measured)}")
    if not args.json:
        print(f"{len(pairs)} instances measured: " + (f"{bad} disagree" if bad else "every declared change agrees"))
    return 1 if bad else 0


def _change_text(counts: dict) -> str:
    return ", ".join(f"{k} +{a} -{r}" for k, (a, r) in counts.items() if (a, r) != (0, 0)) or "nothing"


def _validate(args: argparse.Namespace) -> int:
    from agent_host.config.tasks import collect, default_tasks_dir, expand

    paths = args.paths or [default_tasks_dir()]
    report = collect(paths)
    if report.errors:
        for line in report.errors:
            print(line)
        print(f"{len(report.errors)} error(s) in {report.files_with_errors} file(s) "
              f"({report.files} file(s) checked)", file=sys.stderr)
        return 1
    if not report.files:
        print(f"no task files in {', '.join(map(str, paths))}", file=sys.stderr)
        return 1
    instances = sum(len(expand(t, source=p, sha256=d)) for t, p, d in report.tasks)
    print(f"ok: {len(report.tasks)} task(s) in {report.files} file(s), {instances} instance(s) with variants")
    return 0


def _rows(paths: list[Path]) -> list[dict]:
    from agent_host.config.tasks import VARIANTS, load_tasks

    instances = load_tasks([str(p) for p in paths], variants=VARIANTS)
    rows: dict[str, dict] = {}
    for t in instances:
        row = rows.setdefault(t.id, {
            "id": t.id, "task_id": t.task_id, "variants": [], "keys": [], "app": t.app,
            "max_steps": t.max_steps, "tags": t.tags, "infeasible": t.infeasible,
            "solution_steps": len(t.solution), "source": str(t.source), "goal": t.goal,
        })
        row["variants"].append(t.variant)
        row["keys"].append(t.key)
    return list(rows.values())


def _counts(rows: list[dict]) -> dict:
    """Task instances per app (by name) and per kind (every kind, then those of none)."""
    from agent_host.config.records import NO_KIND, TASK_KINDS, task_kinds

    apps: dict[str, int] = {}
    kinds = dict.fromkeys((*TASK_KINDS, NO_KIND), 0)
    for r in rows:
        apps[r["app"]] = apps.get(r["app"], 0) + 1
        for k in task_kinds(r["tags"], r["infeasible"]):
            kinds[k] += 1
    return {"tasks": len(rows), "apps": dict(sorted(apps.items())), "kinds": kinds}


def _list(args: argparse.Namespace) -> int:
    rows = _rows(args.paths)
    counts = _counts(rows)
    if args.json:
        print(json.dumps(counts if args.counts else rows, indent=2))
        return 0

    from agent_host.cli.output import stdout_console
    from rich.table import Table

    if args.counts:
        table = Table(title=f"{len(rows)} task instance(s)", title_justify="left")
        table.add_column("by")
        table.add_column("group", no_wrap=True)
        table.add_column("tasks", justify="right")
        for app, n in counts["apps"].items():
            table.add_row("app", app, str(n))
        for kind, n in counts["kinds"].items():
            table.add_row("kind", kind, str(n))
        stdout_console().print(table)
        return 0
    table = Table(title=f"{len(rows)} task instance(s)", title_justify="left")
    table.add_column("id", no_wrap=True)
    table.add_column("variants", no_wrap=True)
    table.add_column("app")
    table.add_column("steps", justify="right")
    table.add_column("infeasible", min_width=10)
    table.add_column("tags", overflow="fold")
    for r in rows:
        table.add_row(r["id"], ",".join(r["variants"]), r["app"], str(r["max_steps"]),
                      "yes" if r["infeasible"] else "", ", ".join(r["tags"]))
    console = stdout_console()
    console.print(table)
    console.print("per app: " + ", ".join(f"{k} {n}" for k, n in counts["apps"].items()))
    console.print("per kind: " + ", ".join(f"{k} {n}" for k, n in counts["kinds"].items() if n))
    return 0


def _schema(args: argparse.Namespace) -> int:
    from agent_host.config.tasks import task_json_schema

    print(json.dumps(task_json_schema(), indent=2))
    return 0


def _check_solutions(args: argparse.Namespace) -> int:
    from agent_host.cli import tasks_check

    return int(tasks_check.run(args) or 0)
