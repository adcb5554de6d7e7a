"""Report time and peak memory against run size: `agent-host report --no-screenshots` on
synthetic run directories of 1k, 10k and 100k episodes (2 builds, 50 tasks x 2 variants,
repeats to fill; 3 % errors retried; no episode folders, so the viewer has no steps to read).
Each size is reported in its own process; peak memory is that process's maximum resident set.
Targets (issue 24): 100k episodes under 2 minutes and under 1 GB.

    .venv/bin/python bench/report_scale.py [--sizes 1000,10000,100000] [--keep DIR] [--against TREE] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTCOMES = ["success"] * 6 + ["premature", "undone", "unrecognised", "nav_fail", "exhausted"]


def make_run(root: Path, n: int, seed: int = 0) -> Path:
    """A run directory with `n` recorded episodes (plus retried errors) in episodes.jsonl."""
    rng = random.Random(seed)
    run = root / f"run-{n}"
    run.mkdir(parents=True)
    builds = ["base", "cand"]
    tasks = [f"task-{i:02d}" for i in range(50)]
    per = max(1, n // (len(builds) * len(tasks) * 2))
    manifest = {"run_id": run.name, "builds": [{"id": b, "weight_path": "w", "server": "vllm"} for b in builds],
                "repeats": per, "seed": seed, "baseline": "base", "episodes_planned": n, "tasks": [], "phones": []}
    (run / "manifest.json").write_text(json.dumps(manifest))
    count = 0
    with (run / "episodes.jsonl").open("w") as f:
        for b in builds:
            for t in tasks:
                for variant in ("base", "verify"):
                    for r in range(per):
                        if count >= n:
                            break
                        eid = f"{b}__{t}__{variant}__r{r}"
                        attempts = ["error"] if rng.random() < 0.03 else []
                        attempts.append(rng.choice(OUTCOMES))
                        for a, outcome in enumerate(attempts, 1):
                            ok = outcome in ("success", "premature", "unrecognised")
                            rec = {"episode_id": eid, "run_id": run.name, "build": b, "model": "m", "task": t,
                                   "task_id": t, "variant": variant, "infeasible": False, "repeat": r,
                                   "seed": rng.randrange(1 << 30), "phone": "p1", "attempt": a, "outcome": outcome,
                                   "error": "phone: adb: device offline" if outcome == "error" else None,
                                   "goal_initial": variant == "verify", "goal_first_step": 2 if ok else None,
                                   "goal_final": ok, "complete_step": 3 if outcome == "success" else None,
                                   "steps": rng.randint(1, 12), "max_steps": 12,
                                   "wall_s": round(rng.uniform(5, 60), 3),
                                   "times": {"model": round(rng.uniform(2, 40), 3), "observe": 0.1, "act": 0.1,
                                             "settle": 0.5, "judge": 0.05},
                                   "usage": {"prompt_tokens": rng.randint(1000, 9000),
                                             "completion_tokens": rng.randint(20, 200)},
                                   "reason": "done" if outcome == "success" else None}
                            f.write(json.dumps(rec) + "\n")
                        count += 1
    return run


def measure(run: Path, code_dir: Path = ROOT) -> dict:
    code = ("import resource, sys, time; from agent_host.cli import main; t0 = time.monotonic(); "
            "rc = main(['report', sys.argv[1], '--no-screenshots', '--json']); "
            "sys.stderr.write('%d %.3f %d\\n' % (rc, time.monotonic() - t0, "
            "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))")
    out = subprocess.run([sys.executable, "-c", code, str(run)], cwd=code_dir, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(code_dir)})
    last = (out.stderr.strip().splitlines() or [""])[-1].split()
    if len(last) != 3 or not all(x.replace(".", "").isdigit() for x in last):
        raise SystemExit(f"report failed in {code_dir}: {out.stderr[-1500:]}")
    rc, seconds, rss_kb = last
    return {"rc": int(rc), "seconds": float(seconds), "peak_mb": int(rss_kb) / 1024}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--keep", type=Path, help="make the run directories here and keep them")
    ap.add_argument("--against", type=Path, metavar="TREE",
                    help="also report with the agent-host of this source tree (e.g. a main checkout), "
                         "alternating with this one at each size, for a side-by-side ratio")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="agent-host-report-scale-") as tmp:
        root = args.keep or Path(tmp)
        for n in (int(x) for x in args.sizes.split(",")):
            run = root / f"run-{n}"
            if not run.exists():
                make_run(root, n)
            trees = [("this", ROOT)] + ([("against", args.against.resolve())] if args.against else [])
            for name, tree in trees:
                m = measure(run, tree)
                rows.append({"episodes": n, "tree": name,
                             "log_mb": round((run / "episodes.jsonl").stat().st_size / 2**20, 1), **m})
                if not args.json:
                    r = rows[-1]
                    print(f"{n:>7} episodes  {name:<7}  log {r['log_mb']:>6.1f} MB  report {r['seconds']:7.1f} s  "
                          f"peak {r['peak_mb']:7.0f} MB  rc {r['rc']}", flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
