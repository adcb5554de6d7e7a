"""Run throughput and step latency of the harness, measured side by side in one run.

The model is a scripted policy server that answers after a fixed delay (300 ms by default),
so what is measured is the harness: observe, act, settle, judge, store. Each virtual phone
runs in its own process (`agent-host phone start`), as real phones are separate devices; all
of them share one adb server and the controller, as in a real run.

Two tables:
- step latency, one phone per device latency profile (`--latency none,real-phone,real-phone+confirm`:
  the virtual phone as it is, answering with a real phone's timings (virtual_phone/latency.py),
  and the same settling by two agreeing dumps instead of one, to measure what that costs;
  under `real-phone` the phone profile's minimum settle delay is a real phone's, from
  pixel-android14): seconds per episode in the step loop and in task setup (shown apart: setup's
  own waits are not the step loop's), the harness's share of the step loop's wall time
  (1 - model time / loop time; target under real-phone: <= 15 %), its own share (also without
  the time waited on the phone in series: device calls and the settle's minimum delay), and
  device round trips per step, critical (waited on in series; target: <= 2 on a still screen)
  and beside the step;
- throughput (`--phones 1,2,4`, virtual phone as it is): episodes/minute per phone count and
  the speed-up over one phone (target: 4 phones >= 3.5x one).

    .venv/bin/python bench/run_throughput.py [--episodes-per-phone 4] [--task wifi-on]
        [--delay-ms 300] [--latency none,real-phone,real-phone+confirm] [--phones 1,2,4] [--json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent_host.config.builds import Build  # noqa: E402
from agent_host.config.phones import load_phone_profile  # noqa: E402
from agent_host.config.tasks import load_tasks  # noqa: E402
from agent_host.runs.run import start_run  # noqa: E402
from virtual_phone import adb_server  # noqa: E402
from virtual_phone.phone import free_port  # noqa: E402


def start_phone_process(adb_port: int, log: Path, latency: str = "none", seed: int = 0) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "agent_host", "phone", "start", "--adb-port", str(adb_port),
                             "--latency", latency, "--seed", str(seed)],
                            stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("serial: "):
        proc.kill()
        raise SystemExit(f"phone did not start: {line!r}; see {log}")
    return proc, line.split(": ", 1)[1]


def parse_time(s: str) -> float:
    return dt.datetime.fromisoformat(s).timestamp()


def measure(n_phones: int, per_phone: int, task, adb_port: int, work: Path, delay_ms: int,
            latency: str = "none") -> dict:
    tag = f"{n_phones}-{latency}"
    script = work / f"script-{tag}.yaml"
    script.write_text(yaml.safe_dump([dict(step) if isinstance(step, dict) else step
                                      for step in _solution(task)]))
    build = Build(id=f"policy-{delay_ms}ms", weight_path="scripted", server="policy",
                  script=str(script), args=["--delay-ms", str(delay_ms)])
    device, _, mode = latency.partition("+")
    profile = load_phone_profile("virtual")
    if device != "none":   # a real phone's animations need the real phone's settle delay
        profile = profile.model_copy(update={"settle_min_s": load_phone_profile("pixel-android14").settle_min_s})
    if mode == "confirm":  # settle by two agreeing dumps (rendered observations), not one
        profile = profile.model_copy(update={"settle_confirm": True})
    procs = []
    try:
        serials = []
        for i in range(n_phones):
            proc, serial = start_phone_process(adb_port, work / f"phone-{tag}-{i}.log", device, seed=i)
            procs.append(proc)
            serials.append(serial)
        result = start_run(builds=[build], tasks=[task], repeats=per_phone * n_phones, seed=0,
                           phones=serials, profile=profile, out=work / f"run-{tag}")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(10)
    from agent_host.runs.store import read_records
    recs = read_records(result.run_dir / "episodes.jsonl")
    ok = [r for r in recs if r.outcome != "error"]
    wall = max(parse_time(r.ended_at) for r in recs) - min(parse_time(r.started_at) for r in recs)
    ep_wall = sum(r.wall_s for r in ok)
    model = sum(r.times.model for r in ok)
    steps = [s for r in ok for s in read_steps(result.run_dir / "episodes" / r.episode_id / "steps.jsonl")]
    loop = [s for s in steps if s.step >= 1]
    loop_s = sum(s.wall_s or 0.0 for s in loop)
    setup_s = sum(s.wall_s or 0.0 for s in steps if s.step == 0)
    loop_model = sum(s.times.model for s in loop)
    n = max(1, len(loop))
    counted = [s.round_trips for s in loop if s.round_trips is not None]
    wait_total = sum(c.wait_s for c in counted)
    wait_step = wait_total / len(counted) if counted else None
    model_step = loop_model / n
    return {
        "phones": n_phones, "latency": latency, "episodes": len(ok), "errors": len(recs) - len(ok),
        "steps_per_episode": round(len(loop) / max(1, len(ok)), 2),
        "loop_s_per_episode": round(loop_s / max(1, len(ok)), 3),
        "setup_s_per_episode": round(setup_s / max(1, len(ok)), 3),
        "model_s_per_episode": round(loop_model / max(1, len(ok)), 3),
        "settle_s_per_step": round(sum(s.times.settle for s in loop) / n, 3),
        "model_s_per_step": round(model_step, 3),
        "harness_share_loop": round(1 - loop_model / loop_s, 3) if loop_s else None,
        "phone_wait_s_per_step": round(wait_step, 3) if counted else None,
        # the harness share of a harness that costs nothing itself: the phone's waits in series
        # over those waits plus the model's time
        "phone_floor_share": round(wait_step / (wait_step + model_step), 3) if counted and model_step else None,
        "harness_own_share_loop": (round(1 - (loop_model + wait_total) / loop_s, 3)
                                   if loop_s and counted else None),
        "critical_rt_per_step": round(sum(c.critical for c in counted) / len(counted), 2) if counted else None,
        "background_rt_per_step": round(sum(c.background for c in counted) / len(counted), 2) if counted else None,
        "outcomes": sorted({r.outcome for r in recs}),
        "wall_s": round(wall, 2), "episodes_per_min": round(len(ok) / wall * 60, 2),
        "mean_episode_s": round(ep_wall / max(1, len(ok)), 2),
        "harness_share": round(1 - model / ep_wall, 3) if ep_wall else None,
    }


def _fmt(value, spec: str) -> str:
    return spec.format(value) if value is not None else "-"


def read_steps(path: Path) -> list:
    from agent_host.config.records import StepRecord
    return [StepRecord.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def _solution(task) -> list:
    return [s.model_dump(mode="json", exclude_none=True) if hasattr(s, "model_dump") else s for s in task.solution]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes-per-phone", type=int, default=4, help="episodes each phone runs, per row")
    ap.add_argument("--task", default="wifi-on", help="task id (its solution is the scripted policy)")
    ap.add_argument("--delay-ms", type=int, default=300, help="the scripted model's answer delay")
    ap.add_argument("--latency", default="none,real-phone,real-phone+confirm",
                    help="device latency profiles for the step-latency table, one phone each ('' to skip); "
                         "PROFILE+confirm settles by two agreeing dumps (rendered observations) instead of one")
    ap.add_argument("--phones", default="1,2,4", help="phone counts for the throughput table ('' to skip)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()

    task = load_tasks([args.task], variants=("base",))[0]
    if not task.solution:
        raise SystemExit(f"task {args.task} has no solution to script")
    port = free_port()
    os.environ["ANDROID_ADB_SERVER_PORT"] = str(port)
    adb_server.ensure_server(port)
    rows: list[dict] = []
    lat_rows: list[dict] = []
    try:
        with tempfile.TemporaryDirectory(prefix="agent-host-bench-") as tmp:
            for name in [x for x in args.latency.split(",") if x]:
                lat_rows.append(measure(1, args.episodes_per_phone, task, port, Path(tmp), args.delay_ms, name))
            (Path(tmp) / "throughput").mkdir()
            for n in [int(x) for x in args.phones.split(",") if x]:
                rows.append(measure(n, args.episodes_per_phone, task, port, Path(tmp) / "throughput", args.delay_ms))
    finally:
        adb_server.kill_server(port)
    base = rows[0]["episodes_per_min"] if rows else None
    for r in rows:
        r["speedup_vs_first"] = round(r["episodes_per_min"] / base, 2) if base else None
    if args.json:
        print(json.dumps({"step_latency": lat_rows, "throughput": rows}, indent=2))
        return 0
    from rich.table import Table

    from agent_host.cli.output import stdout_console
    console = stdout_console()
    if lat_rows:
        lt = Table(title=f"step latency: task {args.task}, 1 phone, policy server answering after {args.delay_ms} ms")
        for col in ("device latency", "episodes", "errors", "steps/ep", "setup s/ep (apart)", "loop s/ep",
                    "model s/ep", "settle s/step", "phone wait s/step", "harness share", "harness own share",
                    "critical RT/step", "beside RT/step"):
            lt.add_column(col, justify="right", min_width=18 if col == "device latency" else None)
        for r in lat_rows:
            lt.add_row(r["latency"], str(r["episodes"]), str(r["errors"]), f"{r['steps_per_episode']:.1f}",
                       f"{r['setup_s_per_episode']:.2f}", f"{r['loop_s_per_episode']:.2f}",
                       f"{r['model_s_per_episode']:.2f}", f"{r['settle_s_per_step']:.3f}",
                       _fmt(r["phone_wait_s_per_step"], "{:.3f}"), _fmt(r["harness_share_loop"], "{:.0%}"),
                       _fmt(r["harness_own_share_loop"], "{:.0%}"),
                       f"{r['critical_rt_per_step']:.2f}" if r["critical_rt_per_step"] is not None else "-",
                       f"{r['background_rt_per_step']:.2f}" if r["background_rt_per_step"] is not None else "-")
        console.print(lt)
        for r in lat_rows:
            if r["latency"] != "real-phone":
                continue
            share, own, crit = r["harness_share_loop"], r["harness_own_share_loop"], r["critical_rt_per_step"]
            print(f"target under {r['latency']}: harness <= 15% of loop wall time -> {share:.0%} "
                  f"({'met' if share is not None and share <= 0.15 else 'NOT met'}; without the phone's "
                  f"own waits in series: {_fmt(own, '{:.0%}')}); "
                  f"<= 2 critical round trips per step -> {crit} "
                  f"({'met' if crit is not None and crit <= 2 else 'NOT met'})")
            floor = r["phone_floor_share"]
            if floor is not None:
                print(f"  the phone's own time in series per step ({r['phone_wait_s_per_step']:.3f} s: the minimum "
                      f"settle delay beside the action's input, then one dump) is {floor:.0%} of a step whose model "
                      f"answers in {r['model_s_per_step']:.3f} s, before the harness does anything: no step loop that "
                      f"observes the screen after acting can be under {floor:.0%} with this phone")
    if not rows:
        return 0
    t = Table(title=f"run throughput: task {args.task}, policy server answering after {args.delay_ms} ms")
    for col in ("phones", "episodes", "errors", "wall s", "episodes/min", "speed-up", "mean episode s", "harness share"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(str(r["phones"]), str(r["episodes"]), str(r["errors"]), f"{r['wall_s']:.1f}",
                  f"{r['episodes_per_min']:.1f}", f"{r['speedup_vs_first']:.2f}x", f"{r['mean_episode_s']:.2f}",
                  f"{r['harness_share']:.0%}" if r["harness_share"] is not None else "-")
    console.print(t)
    last = rows[-1]
    print(f"target: {last['phones']} phones >= 3.5x one -> measured {last['speedup_vs_first']:.2f}x "
          f"({'met' if last['speedup_vs_first'] and last['speedup_vs_first'] >= 3.5 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
