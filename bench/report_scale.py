"""Report time and peak memory against run size: `agent-host report --no-screenshots` on
synthetic run directories of 1k, 10k and 100k episodes (2 builds, 50 tasks x 2 variants,
repeats to fill; 3 % errors retried; a folder with steps.jsonl for --with-steps of the episodes,
as a real run has, so the viewer's pages are part of the cost). Each size is reported in its own
process; peak memory is that process's maximum resident set. Targets (issues 24 and 32): 100k
episodes under 2 minutes, 200k under 4, under 1 GB, report.html under 10 MB.

Measured (`--sizes 10000,100000,200000 --with-steps 0.2 --against` the tree before the pages
were streamed) on an x86-64 VM with AVX-512 and AMX, 2 cores, 23.5 GiB, other jobs running:

    episodes  log       before                     after
      10 000    5.7 MB  15.2 s,  223 MB, 0.1 MB    13.1 s, 175 MB, 0.1 MB  (time, peak RSS, report.html)
     100 000   56.9 MB  35.2 s, 1057 MB, 0.5 MB    44.9 s, 277 MB, 0.5 MB
     200 000  113.8 MB  77.1 s, 1974 MB, 0.8 MB    70.8 s, 377 MB, 0.8 MB

Before, every episode's steps were read into memory before the first page was written, and
episodes.csv was made whole in memory; now both are written as read. Times vary by a quarter
from run to run on this shared machine (100k again at once: 34.7 s after, 33.9 s before):
only the memory is a steady comparison.

    .venv/bin/python bench/report_scale.py [--sizes 1000,10000,100000] [--keep DIR] [--against TREE] [--with-steps 0.2] [--json]
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


TARGET_S = {100_000: 120, 200_000: 240}
TARGET_MB, TARGET_HTML_MB = 1024, 10


def _steps(n: int, rng: random.Random) -> str:
    """An episode's steps.jsonl: `n` steps with a screen-long observation each."""
    lines = []
    for i in range(1, n + 1):
        lines.append(json.dumps({"step": i, "observation": "\n".join(f"[{j}] button \"item {rng.randrange(999)}\""
                                                                       for j in range(40)),
                                 "action": {"name": "tap", "args": {"index": rng.randrange(40)}},
                                 "raw_output": {"content": "tap"}, "goal": i == n}))
    return "\n".join(lines) + "\n"


def make_run(root: Path, n: int, seed: int = 0, with_steps: float = 0.2) -> Path:
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
                        if rng.random() < with_steps:
                            folder = run / "episodes" / eid
                            folder.mkdir(parents=True, exist_ok=True)
                            (folder / "steps.jsonl").write_text(_steps(rec["steps"], rng))
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
    html = run / "report.html"
    return {"rc": int(rc), "seconds": float(seconds), "peak_mb": int(rss_kb) / 1024,
            "html_mb": round(html.stat().st_size / 2**20, 1) if html.exists() else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--keep", type=Path, help="make the run directories here and keep them")
    ap.add_argument("--against", type=Path, metavar="TREE",
                    help="also report with the agent-host of this source tree (e.g. a main checkout), "
                         "alternating with this one at each size, for a side-by-side ratio")
    ap.add_argument("--with-steps", type=float, default=0.2, metavar="FRACTION",
                    help="share of episodes with a folder of steps (default 0.2)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="agent-host-report-scale-") as tmp:
        root = args.keep or Path(tmp)
        for n in (int(x) for x in args.sizes.split(",")):
            run = root / f"run-{n}"
            if not run.exists():
                make_run(root, n, with_steps=args.with_steps)
            trees = [("this", ROOT)] + ([("against", args.against.resolve())] if args.against else [])
            for name, tree in trees:
                m = measure(run, tree)
                rows.append({"episodes": n, "tree": name,
                             "log_mb": round((run / "episodes.jsonl").stat().st_size / 2**20, 1), **m})
                if not args.json:
                    r = rows[-1]
                    target = TARGET_S.get(n)
                    print(f"{n:>7} episodes  {name:<7}  log {r['log_mb']:>6.1f} MB  report {r['seconds']:7.1f} s"
                          f"{f' (target {target})' if target else ''}  peak {r['peak_mb']:6.0f} MB (target {TARGET_MB})  "
                          f"report.html {r['html_mb']} MB (target {TARGET_HTML_MB})  rc {r['rc']}", flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
