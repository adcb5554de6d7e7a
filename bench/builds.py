"""Speed of every embedded build, side by side in one run: decode tok/s, TTFT, prefill tok/s,
s/request on the agent's prompts, each build's ratio to the 16-bit reference, and its greedy
agreement with the reference (the fidelity probe: 12 agent prompts with the agent's tools).
The llama.cpp bar (embedded-q4-llama.cpp, `make bar`) is listed beside the vLLM builds when
its llama-server is built.

Builds are served one at a time (the machine has few cores), each warmed up, then asked the
12 shipped agent prompts once, greedy, a fixed number of output tokens (ignore_eos), prefix
caching off. On a shared machine the absolute figures move with the load; the ratios,
measured minutes apart in one invocation, are the result.

    .venv/bin/python bench/builds.py [--builds embedded-bf16,embedded-w4a16,...] [--reference embedded-bf16]
                                     [--max-tokens 64] [--agreement-tokens 48] [--json]

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
BAR = "embedded-q4-llama.cpp"


def default_ids() -> str:
    """The vLLM builds this CPU tier runs, and the llama.cpp bar where llama-server is built."""
    from agent_host.config.hosts import embedded_build, hardware_problems
    from agent_host.serving.kinds.llama_cpp import llama_server

    ids = [b for b in DEFAULT.split(",") if not hardware_problems(embedded_build(b))]
    return ",".join(ids + ([BAR] if llama_server() else []))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--builds", default=None,
                    help=f"comma-separated build ids (default {DEFAULT} as this CPU runs them, and {BAR} "
                         "where `make bar` built llama-server)")
    ap.add_argument("--reference", default="embedded-bf16", help="ratios are to this build (default embedded-bf16)")
    ap.add_argument("--max-tokens", type=int, default=64, help="output tokens per request (default 64)")
    ap.add_argument("--agreement-tokens", type=int, default=48,
                    help="tokens per fidelity answer for the agreement column (default 48; 0 skips it)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    ids = [b.strip() for b in (args.builds or default_ids()).split(",") if b.strip()]
    if args.reference not in ids:
        ids.insert(0, args.reference)
    builds = [find_build(b) for b in ids]
    ps = load_prompts()
    prompts = [messages(ps, p) for p in ps.prompts]
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as logs:
        for b in builds:
            print(f"[bench] {b.id}: starting", file=sys.stderr, flush=True)
            b = b.model_copy(update={"args": [*b.args, *b.traits.no_prefix_cache_args]})
            try:
                with start(b, log_dir=Path(logs)) as srv:
                    rows[b.id] = speed.measure(srv.endpoint, prompts, max_tokens=args.max_tokens)
            except Exception as exc:  # one build failing does not end the comparison
                rows[b.id] = {"error": str(exc).splitlines()[0]}
            print(f"[bench] {b.id}: {rows[b.id]}", file=sys.stderr, flush=True)
        agree = _agreement(builds, args, Path(logs)) if args.agreement_tokens else {}
    ok = {k: v for k, v in rows.items() if "error" not in v}
    for v in ok.values():
        v["s_per_request"] = v["wall_s"] / v["requests"] if v.get("requests") else None
    rat = speed.ratios(ok, args.reference)
    if args.json:
        print(json.dumps({"reference": args.reference, "builds": rows, "ratios": rat, "agreement": agree},
                         indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"embedded builds, {len(prompts)} prompts x {args.max_tokens} tokens; ratios to "
                    f"{args.reference} (same run)", title_justify="left")
    for col in ("build", "server", "decode tok/s", "x ref", "TTFT s", "x ref", "prefill tok/s", "x ref",
                "s/request", "agrees with ref"):
        t.add_column(col, justify="left" if col in ("build", "server") else "right")
    f = lambda v, p=1: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
    server = {b.id: b.server for b in builds}
    for bid, row in rows.items():
        if "error" in row:
            t.add_row(bid, server[bid], row["error"][:60], "", "", "", "", "", "", "")
            continue
        r = rat[bid]
        t.add_row(bid, server[bid], f(row["decode_tok_s"]), f(r["decode_tok_s"], 2), f(row["mean_ttft_s"], 3),
                  f(r["mean_ttft_s"], 2), f(row["prefill_tok_s"], 0), f(r["prefill_tok_s"], 2),
                  f(row["s_per_request"], 2), agree.get(bid, "-" if bid != args.reference else "reference"))
    Console(width=140).print(t)
    return 0


def _agreement(builds, args, logs: Path) -> dict[str, str]:
    """Each build's greedy answers to the fidelity probe's 12 agent prompts (the agent's tools,
    a tool call required) against the reference's: `exact/total (calls exact)`."""
    from agent_host.cli.fidelity import agent_tools
    from agent_host.serving.fidelity import run_fidelity

    ref = next(b for b in builds if b.id == args.reference)
    others = [b for b in builds if b.id != args.reference]
    print(f"[bench] agreement with {ref.id}: {len(others)} build(s)", file=sys.stderr, flush=True)
    rep = run_fidelity(others, ref, max_tokens=args.agreement_tokens, tools=agent_tools(),
                       tool_choice="required", log_dir=logs / "fidelity")
    return {r.build: (f"error: {r.error[:40]}" if r.error else f"{r.exact}/{r.total} ({r.calls_exact} calls)")
            for r in rep.builds}


if __name__ == "__main__":
    sys.exit(main())
