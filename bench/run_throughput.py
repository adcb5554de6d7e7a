"""Run throughput: episodes per minute with 1, 2 and 4 virtual phones.

The model is a scripted policy server that answers after a fixed 200 ms, so what is
measured is the harness: observe, act, settle, judge, store. Each virtual phone runs in its
own process (`agent-host phone start`), as real phones are separate devices; all of them
share one adb server and the controller, as in a real run.

Printed, side by side from one invocation: episodes/minute per phone count, the speed-up
over one phone (target: 4 phones >= 3.5x one) and the harness's share of episode wall time
(1 - model time / episode wall time).

    .venv/bin/python bench/run_throughput.py [--episodes-per-phone 4] [--task wifi-on] [--json]
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
from agent_host.virtual_phone import adb_server  # noqa: E402
from agent_host.virtual_phone.phone import free_port  # noqa: E402


def start_phone_process(adb_port: int, log: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "agent_host", "phone", "start", "--adb-port", str(adb_port)],
                            stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("serial: "):
        proc.kill()
        raise SystemExit(f"phone did not start: {line!r}; see {log}")
    return proc, line.split(": ", 1)[1]


def parse_time(s: str) -> float:
    return dt.datetime.fromisoformat(s).timestamp()


def measure(n_phones: int, per_phone: int, task, adb_port: int, work: Path, delay_ms: int) -> dict:
    script = work / f"script-{n_phones}.yaml"
    script.write_text(yaml.safe_dump([dict(step) if isinstance(step, dict) else step
                                      for step in _solution(task)]))
    build = Build(id=f"policy-{delay_ms}ms", weight_path="scripted", server="policy",
                  script=str(script), args=["--delay-ms", str(delay_ms)])
    procs = []
    try:
        serials = []
        for i in range(n_phones):
            proc, serial = start_phone_process(adb_port, work / f"phone-{n_phones}-{i}.log")
            procs.append(proc)
            serials.append(serial)
        result = start_run(builds=[build], tasks=[task], repeats=per_phone * n_phones, seed=0,
                           phones=serials, profile=load_phone_profile("virtual"),
                           out=work / f"run-{n_phones}")
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
    return {
        "phones": n_phones, "episodes": len(ok), "errors": len(recs) - len(ok),
        "outcomes": sorted({r.outcome for r in recs}),
        "wall_s": round(wall, 2), "episodes_per_min": round(len(ok) / wall * 60, 2),
        "mean_episode_s": round(ep_wall / max(1, len(ok)), 2),
        "harness_share": round(1 - model / ep_wall, 3) if ep_wall else None,
    }


def _solution(task) -> list:
    return [s.model_dump(mode="json", exclude_none=True) if hasattr(s, "model_dump") else s for s in task.solution]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes-per-phone", type=int, default=4)
    ap.add_argument("--task", default="wifi-on")
    ap.add_argument("--delay-ms", type=int, default=200)
    ap.add_argument("--phones", default="1,2,4")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    task = load_tasks([args.task], variants=("base",))[0]
    if not task.solution:
        raise SystemExit(f"task {args.task} has no solution to script")
    port = free_port()
    os.environ["ANDROID_ADB_SERVER_PORT"] = str(port)
    adb_server.ensure_server(port)
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="agent-host-bench-") as tmp:
            for n in [int(x) for x in args.phones.split(",")]:
                rows.append(measure(n, args.episodes_per_phone, task, port, Path(tmp), args.delay_ms))
    finally:
        adb_server.kill_server(port)
    base = rows[0]["episodes_per_min"]
    for r in rows:
        r["speedup_vs_first"] = round(r["episodes_per_min"] / base, 2) if base else None
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.table import Table

    from agent_host.cli.output import stdout_console
    t = Table(title=f"run throughput: task {args.task}, policy server answering after {args.delay_ms} ms")
    for col in ("phones", "episodes", "errors", "wall s", "episodes/min", "speed-up", "mean episode s", "harness share"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(str(r["phones"]), str(r["episodes"]), str(r["errors"]), f"{r['wall_s']:.1f}",
                  f"{r['episodes_per_min']:.1f}", f"{r['speedup_vs_first']:.2f}x", f"{r['mean_episode_s']:.2f}",
                  f"{r['harness_share']:.0%}" if r["harness_share"] is not None else "-")
    stdout_console().print(t)
    last = rows[-1]
    print(f"target: {last['phones']} phones >= 3.5x one -> measured {last['speedup_vs_first']:.2f}x "
          f"({'met' if last['speedup_vs_first'] and last['speedup_vs_first'] >= 3.5 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
