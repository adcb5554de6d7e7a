"""`agent-host probe`: name this machine's hardware class and recommend a weight path."""

from __future__ import annotations

import argparse
import json

EPILOG = """\
Reads this machine (architecture, /proc/cpuinfo flags, cores, memory, an NVIDIA GPU through
nvidia-smi, a Jetson through /etc/nv_tegra_release or the device-tree model), names its
hardware class (x86-amx, x86-avx512, x86-avx2, arm64, cuda, jetson), picks the host profile
device_profiles/hosts/<class>.yaml and recommends its build for the priority:
  speed     W4A8 (int4_scaled_mm_cpu) where AMX exists: fastest, least faithful
  fidelity  keeps bf16 activations (W4A16 tinygemm, about 8% slower decode): the one to use
            for agentic work, and the default

examples:
  agent-host probe
  agent-host probe --priority speed
  agent-host probe --json
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("probe", help="which weight path suits this machine",
                       description=__doc__, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--priority", choices=["speed", "fidelity"], default="fidelity",
                   help="speed or fidelity (default fidelity, the one for agentic work)")
    p.add_argument("--json", action="store_true", help="print the facts and advice as JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_host.config.machine import read_host_facts
    from agent_host.serving.probe import recommend

    advice = recommend(read_host_facts(), args.priority)
    if args.json:
        print(json.dumps(advice.to_json(), indent=2))
        return 0
    print_advice(advice)
    return 0


def print_advice(advice) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(highlight=False)
    f, c, b = advice.facts, advice.classification, advice.build
    con.print(f"[bold]This machine:[/bold] {c.description}")
    t = Table.grid(padding=(0, 2))
    t.add_column(style="dim")
    t.add_column()
    t.add_row("hardware class", (c.hardware_class or "none") +
              (f"  (host profile {advice.profile_path})" if advice.profile_path else ""))
    cores = f"{f.cores} cores" + (f" ({f.usable_cores} usable)" if f.usable_cores != f.cores else "")
    mem = f", {f.memory_gib:g} GiB memory" if f.memory_gib else ""
    t.add_row("CPU", f"{f.cpu_model or '?'} ({f.arch}), {cores}{mem}")
    if c.cpu_description != c.description:
        t.add_row("CPU class", c.cpu_description)
    t.add_row("GPU", ", ".join(g.name for g in f.gpus) if f.gpus else
              (f"Jetson: {f.jetson_model}" if f.jetson_model else "none (no nvidia-smi GPU, not a Jetson)"))
    t.add_row("vLLM", advice.vllm or "not installed")
    if advice.vllm_library:
        from agent_host.config.machine import tier_description

        ops = ", ".join(advice.vllm_ops) if advice.vllm_ops is not None else "not read (vLLM not installed)"
        t.add_row("vLLM CPU tier", f"{advice.vllm_library} ({tier_description(advice.vllm_library)}): "
                  f"kernel ops {ops or 'none of the 4-bit/int8 ones'}")
    if advice.dtype:
        t.add_row("dtype", f"{advice.dtype} for builds that pin none: {advice.dtype_why}")
    for r in c.reasons:
        t.add_row("because", r)
    for n in f.notes:
        t.add_row("note", n)
    con.print(t)
    con.print()
    agentic = " (recommended for agentic work)" if advice.priority == "fidelity" else \
        " (for agentic work use --priority fidelity)"
    con.print(f"[bold]Priority {advice.priority}[/bold]{agentic}")
    r = Table.grid(padding=(0, 2))
    r.add_column(style="dim")
    r.add_column()
    if b is None:
        r.add_row("weight path", "none")
        r.add_row("why", advice.why)
    else:
        r.add_row("weight path", f"[bold]{b.weight_path}[/bold]  (build {b.id}: {b.server}, "
                  f"kernel {b.kernel or '?'}, {b.bits_per_weight:g} bits/weight"
                  + (f", {b.activations} activations" if b.activations else "") + ")")
        r.add_row("why", advice.why)
        if b.measured:
            m = b.measured
            where = ", ".join(x for x in (m.machine, f"{m.threads} threads" if m.threads else None, m.model) if x)
            r.add_row("measured", (f"{m.decode_tok_s:g} tok/s decode" if m.decode_tok_s else m.summary())
                      + (f" on {where}" if where else ""))
        r.add_row("verified", "yes: measured on hardware of this class" if b.verified
                  else "no: this combination has not been measured on this class of machine")
        if advice.blockers:
            r.add_row("to serve it here", "; ".join(advice.blockers))
    if advice.other:
        o = advice.other
        r.add_row(f"{o['priority']} instead", f"{o['weight_path']} (build {o['build']}, "
                  f"{'verified' if o['verified'] else 'unverified'})")
    if advice.runs_now:
        r.add_row("runs here now", ", ".join(advice.runs_now))
    for bid, why in advice.refused.items():
        r.add_row("refused", f"{bid}: {why}")
    con.print(r)
