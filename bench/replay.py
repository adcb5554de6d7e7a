"""What a replay buys over more episodes, measured on one run side by side.

For each candidate build of a run that has been replayed (`agent-host replay RUN --reference B
--builds ...`, or `make demo`), two measures of "does it still recognise completion", each with
the compute it cost:
- the episode comparison: the width of the 95% interval of the paired success difference
  (candidate minus reference, pp, report/stats.compare), and the model seconds of the
  candidate's episodes (what adding the build to the run cost) and of both builds' episodes;
- the replayed completion agreement: the width of the 95% interval of P(candidate calls
  task_complete | the reference did with the goal held) (pp, over tasks), and the model
  seconds of the candidate's greedy replay requests (the reference's episodes are already paid
  for: the replay reuses them); beside it the seconds the log-prob scoring added.

And per build, replayed steps per minute of model time.

    .venv/bin/python bench/replay.py RUN_DIR [--reference B] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent_host.config.replay_log import REFERENCE_PASS, ReplayLog, replay_dir  # noqa: E402
from agent_host.errors import UserError  # noqa: E402
from agent_host.report import selection, stats  # noqa: E402
from agent_host.report.load import load_run  # noqa: E402
from agent_host.report.replay import summarise  # noqa: E402


def measure(run_dir: Path, reference: str | None = None) -> dict:
    run = load_run(run_dir)
    reference = reference or run.manifest.baseline or run.builds()[0]
    lines = ReplayLog(replay_dir(run_dir, reference)).read()
    if not lines:
        raise SystemExit(f"{run_dir}: no replay of {reference} (run agent-host replay first)")
    summary = summarise(lines, reference)
    counted = selection.select_latest(run.records).counted
    model_s = {b: sum(r.times.model for r in counted if r.build == b) for b in run.builds()}
    rows = []
    for b, c in summary["candidates"].items():
        if b == reference:
            continue
        cmp = stats.compare(reference, b, run.records)
        ep_width = (100 * (cmp["high"] - cmp["low"])) if cmp.get("low") is not None else None
        ca = c["completion_agreement"]
        own = [x for x in lines if x["pass"] == b and "error" not in x]
        greedy_s = sum(x.get("seconds", 0.0) for x in own)
        rows.append({
            "build": b,
            "episode_comparison": {"difference_pp": None if cmp.get("mean_diff") is None else 100 * cmp["mean_diff"],
                                   "width_pp": ep_width, "tasks": cmp.get("n_tasks"),
                                   "episodes": sum(r.build == b for r in counted),
                                   "model_s_candidate": round(model_s.get(b, 0.0), 1),
                                   "model_s_both": round(model_s.get(b, 0.0) + model_s.get(reference, 0.0), 1)},
            "completion_agreement": {"mean": ca["mean"], "k": ca["k"], "n": ca["n"], "tasks": ca["n_tasks"],
                                     "width_pp": None if ca["low"] is None else 100 * (ca["high"] - ca["low"]),
                                     "model_s": round(greedy_s, 1),
                                     "scoring_s": round(sum(x.get("score_seconds", 0.0) for x in own), 1)},
            "replayed_requests": len(own),
        })
    per_build = {b: c["steps_per_minute"] for b, c in summary["candidates"].items()}
    ref_lines = [x for x in lines if x["pass"] == REFERENCE_PASS]
    return {"run": str(run_dir), "reference": reference, "rows": rows, "steps_per_minute": per_build,
            "reference_scoring_s": round(sum(x.get("seconds", 0.0) + x.get("score_seconds", 0.0)
                                             for x in ref_lines), 1)}


def _num(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path, help="a run directory with a replay")
    ap.add_argument("--reference", help="the replayed reference (default: the run's baseline)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    try:
        data = measure(args.run_dir, args.reference)
    except UserError as exc:
        raise SystemExit(f"error: {exc}") from None
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"run {data['run']}, reference {data['reference']}: 95% interval widths and the model seconds each cost")
    print(f"{'build':24} {'episode diff width':>19} {'model-s (cand/both)':>20} | "
          f"{'completion agr. width':>22} {'model-s':>8} {'(+scoring)':>10}")
    for r in data["rows"]:
        e, c = r["episode_comparison"], r["completion_agreement"]
        print(f"{r['build']:24} {_num(e['width_pp'], '.1f'):>16} pp {e['model_s_candidate']:>9.0f}/{e['model_s_both']:<9.0f} | "
              f"{_num(c['width_pp'], '.1f'):>19} pp {c['model_s']:>8.0f} {c['scoring_s']:>10.0f}"
              f"   ({e['episodes']} episodes over {e['tasks']} tasks; {c['k']}/{c['n']} completion steps, "
              f"{r['replayed_requests']} replayed requests)")
    print("replayed steps per minute of model time: "
          + ", ".join(f"{b} {_num(v, 'g')}" for b, v in data["steps_per_minute"].items())
          + f"; the reference's own scoring pass took {data['reference_scoring_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
