"""GPTQ's column loop on one thread and on every thread, side by side (issue 30: calibration sized
to the machine).

llmcompressor's GPTQ quantizes a module column by column (gptq_block_update): a few small
tensor ops per column, thousands per module. With more than one thread their fork and join can
cost more than the arithmetic, so agent-host's quantize worker compresses on one thread and
keeps every thread for the calibration forwards (serving/quantize_worker.py
`_one_thread_while_compressing`). This times `quantize_weight` on SmolLM2-135M's module shapes
(random weights, a Hessian from random inputs) both ways and prints the ratio.

Runs under the quantize environment (`make setup` makes it): started from another Python, it
starts itself again there. To see an AVX2-only CPU's code paths on a wider one, hold torch to
them: ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2.

    python bench/gptq_threads.py                 # SmolLM2's 576x576 and 1536x576 modules, 3 repeats
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

SHAPES = {"q/o (576x576)": (576, 576), "gate/up (1536x576)": (1536, 576), "down (576x1536)": (576, 1536)}


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3, help="timings per shape and thread count (median)")
    p.add_argument("--group-size", type=int, default=64, help="W4A16 group size (SmolLM2's: 64)")
    return p.parse_args()


def in_quantize_env() -> None:
    """Start again under the quantize environment's Python when llmcompressor is not here."""
    try:
        import llmcompressor  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from agent_host.serving.quantize import quantize_env_missing, quantize_python

        if (missing := quantize_env_missing()) is not None:
            sys.exit(f"bench/gptq_threads.py: {missing}")
        os.execv(str(quantize_python()), [str(quantize_python()), *sys.argv])


def one_module(rows: int, cols: int, group: int, threads: int, repeats: int) -> float:
    import torch
    from compressed_tensors.quantization import QuantizationArgs
    from llmcompressor.modifiers.gptq.gptq_quantize import quantize_weight

    torch.manual_seed(0)
    w = torch.randn(1, rows, cols)
    x = torch.randn(4096, cols)
    h = (x.T @ x / x.shape[0]).unsqueeze(0)
    args = QuantizationArgs(num_bits=4, type="int", symmetric=True, strategy="group", group_size=group)
    scale = (w.reshape(1, rows, cols // group, group).abs().amax(-1) / 7).clamp(min=1e-8)
    zero = torch.zeros_like(scale, dtype=torch.int8)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            quantize_weight(w.clone(), h.clone(), scale, zero, None, args)
            times.append(time.perf_counter() - t0)
        return statistics.median(times)
    finally:
        torch.set_num_threads(before)


def main() -> int:
    args = parse()
    in_quantize_env()
    import torch

    every = torch.get_num_threads()
    cap = os.environ.get("ATEN_CPU_CAPABILITY", "")
    print(f"torch {torch.__version__}, {every} threads, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}{' (held by ATEN_CPU_CAPABILITY)' if cap else ''}")
    print(f"{'module':22s} {'1 thread s':>11s} {f'{every} threads s':>12s} {'ratio':>7s}")
    for name, (rows, cols) in SHAPES.items():
        one = one_module(rows, cols, args.group_size, 1, args.repeats)
        all_ = one_module(rows, cols, args.group_size, every, args.repeats)
        print(f"{name:22s} {one:11.2f} {all_:12.2f} {all_ / one:7.2f}")
    print("ratio: seconds on every thread / seconds on one (above 1: one thread is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
