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
                                     [--max-tokens 64] [--agreement-tokens 48] [--time-making] [--json]

The 4-bit and W8A8 checkpoints are made on first use (~3-5 min each on 2 cores); --time-making
makes each listed build's quantized checkpoint once more, into a temporary directory (what
`agent-host quantize` does, with the options and dtype of the cached one), and reports its wall
time. The first line names the machine and vLLM's tier. AGENT_HOST_HOLD_AVX2=1 measures this
machine held to AVX2 (docs/builds.md), e.g. the AVX2 demo's builds:

    AGENT_HOST_HOLD_AVX2=1 .venv/bin/python bench/builds.py --time-making \
        --builds embedded-default,embedded-w8a8,embedded-w4a16-dequant
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
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
    ap.add_argument("--reference", default=None,
                    help="ratios are to this build (default: the demo's reference here, embedded-bf16 "
                         "where the CPU has fast bf16, else embedded-default)")
    ap.add_argument("--max-tokens", type=int, default=64, help="output tokens per request (default 64)")
    ap.add_argument("--agreement-tokens", type=int, default=48,
                    help="tokens per fidelity answer for the agreement column (default 48; 0 skips it)")
    ap.add_argument("--time-making", action="store_true",
                    help="make each listed build's quantized checkpoint again (in a temporary directory) "
                         "and report the wall time")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    args.reference = args.reference or _reference()
    machine = _machine()
    print(f"[bench] {machine}", file=sys.stderr, flush=True)
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
    made = _time_making(builds) if args.time_making else {}
    ok = {k: v for k, v in rows.items() if "error" not in v}
    for v in ok.values():
        v["s_per_request"] = v["wall_s"] / v["requests"] if v.get("requests") else None
    rat = speed.ratios(ok, args.reference)
    if args.json:
        print(json.dumps({"machine": machine, "reference": args.reference, "builds": rows, "ratios": rat,
                          "agreement": agree, "making_s": made}, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"embedded builds, {len(prompts)} prompts x {args.max_tokens} tokens; ratios to "
                    f"{args.reference} (same run); {machine}", title_justify="left")
    for col in ("build", "server", "decode tok/s", "x ref", "TTFT s", "x ref", "prefill tok/s", "x ref",
                "s/request", "agrees with ref") + (("made in s",) if made else ()):
        t.add_column(col, justify="left" if col in ("build", "server") else "right")
    f = lambda v, p=1: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
    server = {b.id: b.server for b in builds}
    for bid, row in rows.items():
        if "error" in row:
            t.add_row(bid, server[bid], row["error"][:60], *[""] * (7 + bool(made)))
            continue
        r = rat[bid]
        t.add_row(bid, server[bid], f(row["decode_tok_s"]), f(r["decode_tok_s"], 2), f(row["mean_ttft_s"], 3),
                  f(r["mean_ttft_s"], 2), f(row["prefill_tok_s"], 0), f(r["prefill_tok_s"], 2),
                  f(row["s_per_request"], 2), agree.get(bid, "-" if bid != args.reference else "reference"),
                  *((f(made.get(bid), 0),) if made else ()))
    Console(width=140).print(t)
    return 0


def _reference() -> str:
    from agent_host.config.machine import fast_bf16, read_host_facts

    return "embedded-bf16" if fast_bf16(read_host_facts()) else "embedded-default"


def _machine() -> str:
    """The CPU (its model says "(held to AVX2)" under AGENT_HOST_HOLD_AVX2=1), cores, vLLM's tier."""
    from agent_host.config.machine import read_host_facts, tier_description, vllm_cpu_library

    f = read_host_facts()
    lib = vllm_cpu_library(f)
    return f"{f.cpu_model}, {f.usable_cores} cores, vLLM {lib or '-'} ({tier_description(lib)})"


def _time_making(builds) -> dict[str, float]:
    """Seconds to make each build's quantized checkpoint afresh, as `agent-host quantize` makes
    it (GPTQ through llmcompressor in the quantize environment, the agent's calibration
    prompts, the cached checkpoint's options and dtype), into a temporary directory."""
    from agent_host.serving import models
    from agent_host.serving import quantize as q

    out: dict[str, float] = {}
    for b in builds:
        if b.model not in models.QUANTIZED or b.model in {x.model for x in builds if x.id in out}:
            continue
        base, kw = models.QUANTIZED[b.model]
        src = models.ensure_model(base)
        print(f"[bench] {b.id}: making {b.model} again", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.monotonic()
            q.quantize(src, Path(tmp) / "model", q.Options(**kw), models.calibration_samples(),
                       progress=lambda done, total, what: None)
            out[b.id] = time.monotonic() - t0
        print(f"[bench] {b.id}: made in {out[b.id]:.0f} s", file=sys.stderr, flush=True)
    return out


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
