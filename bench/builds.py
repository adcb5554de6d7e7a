"""Speed of every embedded build, side by side in one run: decode tok/s, TTFT, prefill tok/s,
and each build's ratio to the 16-bit reference.

Builds are served one at a time (the machine has few cores), each warmed up, then asked the
12 shipped agent prompts once, greedy, a fixed number of output tokens (ignore_eos), prefix
caching off. On a shared machine the absolute figures move with the load; the ratios,
measured minutes apart in one invocation, are the result.

    .venv/bin/python bench/builds.py [--builds embedded-bf16,embedded-w4a16,...] [--reference embedded-bf16]
                                     [--max-tokens 64] [--json]

The 4-bit and W8A8 checkpoints are made on first use (~3-5 min each on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent_host.config.hosts import find_build  # noqa: E402
from agent_host.serving import speed  # noqa: E402
from agent_host.serving.fidelity import load_prompts, messages  # noqa: E402
from agent_host.serving.server import start  # noqa: E402

DEFAULT = "embedded-bf16,embedded-default,embedded-w4a16,embedded-w4a16-asym,embedded-w8a8"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--builds", default=DEFAULT, help=f"comma-separated build ids (default {DEFAULT})")
    ap.add_argument("--reference", default="embedded-bf16", help="ratios are to this build (default embedded-bf16)")
    ap.add_argument("--max-tokens", type=int, default=64, help="output tokens per request (default 64)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    ids = [b.strip() for b in args.builds.split(",") if b.strip()]
    if args.reference not in ids:
        ids.insert(0, args.reference)
    builds = [find_build(b) for b in ids]
    ps = load_prompts()
    prompts = [messages(ps, p) for p in ps.prompts]
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as logs:
        for b in builds:
            print(f"[bench] {b.id}: starting", file=sys.stderr, flush=True)
            b = b.model_copy(update={"args": list(b.args) + speed.NO_PREFIX_CACHE})
            try:
                with start(b, log_dir=Path(logs)) as srv:
                    rows[b.id] = speed.measure(srv.endpoint, prompts, max_tokens=args.max_tokens)
            except Exception as exc:  # one build failing does not end the comparison
                rows[b.id] = {"error": str(exc).splitlines()[0]}
            print(f"[bench] {b.id}: {rows[b.id]}", file=sys.stderr, flush=True)
    ok = {k: v for k, v in rows.items() if "error" not in v}
    rat = speed.ratios(ok, args.reference)
    if args.json:
        print(json.dumps({"reference": args.reference, "builds": rows, "ratios": rat}, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"embedded builds, {len(prompts)} prompts x {args.max_tokens} tokens; ratios to "
                    f"{args.reference} (same run)", title_justify="left")
    for col in ("build", "decode tok/s", "x ref", "TTFT s", "x ref", "prefill tok/s", "x ref"):
        t.add_column(col, justify="left" if col == "build" else "right")
    f = lambda v, p=1: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
    for bid, row in rows.items():
        if "error" in row:
            t.add_row(bid, row["error"][:60], "", "", "", "", "")
            continue
        r = rat[bid]
        t.add_row(bid, f(row["decode_tok_s"]), f(r["decode_tok_s"], 2), f(row["mean_ttft_s"], 3),
                  f(r["mean_ttft_s"], 2), f(row["prefill_tok_s"], 0), f(r["prefill_tok_s"], 2))
    Console(width=140).print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
