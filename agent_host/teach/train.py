"""LoRA (peft) on an embedded model over a teach dataset, on the CPU, seeded.

Each example is rendered with the harness's own chat template (serving/models.py TEMPLATE, as
vLLM renders a request): the prompt is the request with the generation prompt, the target is
what follows it in the rendered conversation (the call and `<|im_end|>`). The loss counts the
targets' tokens only. By default an episode's steps are one sequence (`encode_episode`: the
steps of an episode share their prefix, so this cuts the tokens to forward several times). An
optimizer step is `batch` sequences, one forward each (no padding: they differ by thousands of
tokens), the loss weighted by target tokens. bf16 autocast where
the CPU multiplies bf16 natively (config/machine.py fast_bf16), fp32 elsewhere.

Writes into `out`: the adapter (adapter_model.safetensors, adapter_config.json), TRAINING
(`training.json`: the command, data sha256, seed, hyperparameters, tokens, speed, wall time,
machine, loss curve) and LOSS_PLOT.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_host.config.requests import Json
from agent_host.errors import UserError
from agent_host.teach.dataset import TRAIN, read_examples, sha256_file

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

TRAINING = "training.json"
LOSS_PLOT = "loss.png"
IGNORE = -100
Progress = Callable[[int, int, str], None]


@dataclass
class TrainOptions:
    base: str = "smollm2-135m"      # an embedded model (serving/models.py KNOWN)
    seed: int = 0
    epochs: float = 1.0
    max_steps: int | None = None    # stop after this many optimizer steps (a measurement)
    batch: int = 8                  # sequences per optimizer step
    pack: str = "episode"           # "episode": a sequence per episode (encode_episode); "step": per example
    lr: float = 2e-4
    warmup: float = 0.05            # fraction of the steps with a linear warm-up
    rank: int = 16
    alpha: int = 32
    dropout: float = 0.05
    targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    max_tokens: int = 8192          # longer examples are left out (counted in training.json)
    bf16: bool | None = None        # None: where the CPU has fast bf16
    # recompute each layer's activations in the backward pass instead of keeping them: about a
    # third more compute, a fraction of the memory (an 8192-token sequence held 19 GB without it
    # and was killed on a 24 GB machine); the same gradients (dropout's RNG is replayed)
    checkpointing: bool = True
    command: list[str] = field(default_factory=list)


@dataclass
class Encoded:
    ids: list[int]
    labels: list[int]

    @property
    def targets(self) -> int:
        return sum(1 for x in self.labels if x != IGNORE)


def _render(tok: PreTrainedTokenizerBase, example: Json, template: str) -> tuple[str, str]:
    """(the request rendered with the generation prompt, the target that follows it)."""
    messages, tools = example["messages"], example.get("tools")
    prompt = tok.apply_chat_template(messages[:-1], tools=tools, tokenize=False, add_generation_prompt=True,
                                     chat_template=template)
    full = tok.apply_chat_template(messages, tools=tools, tokenize=False, chat_template=template)
    assert isinstance(prompt, str) and isinstance(full, str)
    if not full.startswith(prompt):
        raise UserError(f"example {example.get('key')} step {example.get('step')}: the rendered conversation "
                        "does not start with its rendered prompt (is the last message the assistant's?)")
    return prompt, full[len(prompt):]


def _ids(tok: PreTrainedTokenizerBase, text: str) -> list[int]:
    return list(tok(text, add_special_tokens=False)["input_ids"])


def encode(tok: PreTrainedTokenizerBase, example: Json, template: str) -> Encoded:
    """An example's token ids and labels (IGNORE on the prompt): the request as vLLM tokenizes
    it, then the target."""
    prompt, target = _render(tok, example, template)
    p, t = _ids(tok, prompt), _ids(tok, target)
    return Encoded(ids=p + t, labels=[IGNORE] * len(p) + t)


def encode_episode(tok: PreTrainedTokenizerBase, steps: list[Json], template: str, max_tokens: int) -> list[Encoded]:
    """One episode's examples (in step order) as few sequences as fit `max_tokens`: a request is
    the previous request, its reply and what came after (the conversation is append-only), so
    one forward over the last step's conversation, the loss on every step's reply, teaches every
    step at once, each reply conditioned on exactly its own request's text. The tokens differ
    from `encode`'s only where an earlier reply meets its prefix (tokenized apart here, as it was
    generated, and together when vLLM renders it as history): a few tokens in thousands."""
    out: list[Encoded] = []
    ids: list[int] = []
    labels: list[int] = []
    done: str | None = None          # the text `ids` holds
    for ex in steps:
        prompt, target = _render(tok, ex, template)
        fresh = done is None or not prompt.startswith(done)
        p = _ids(tok, prompt if fresh else prompt[len(done or ""):])
        t = _ids(tok, target)
        if ids and (fresh or len(ids) + len(p) + len(t) > max_tokens):
            out.append(Encoded(ids, labels))
            ids, labels = [], []
            if not fresh:
                p = _ids(tok, prompt)
        ids, labels = ids + p + t, labels + [IGNORE] * len(p) + t
        done = prompt + target
    if ids:
        out.append(Encoded(ids, labels))
    return out


def episodes(examples: list[Json]) -> list[list[Json]]:
    """Examples grouped by the episode they came from (key, seed, condition), in step order."""
    groups: dict[tuple[str, int, str], list[Json]] = {}
    for ex in examples:
        groups.setdefault((ex["key"], ex.get("seed", 0), ex.get("vary", "none")), []).append(ex)
    return [sorted(g, key=lambda e: int(e["step"])) for g in groups.values()]


def dataset_file(dataset: Path) -> Path:
    """The training file of a dataset directory (train.jsonl), or the file itself."""
    path = dataset / TRAIN if dataset.is_dir() else dataset
    if not path.is_file():
        raise UserError(f"{path}: no training data (`agent-host teach dataset` writes {TRAIN})")
    return path


def _lr_at(step: int, total: int, opts: TrainOptions) -> float:
    warm = max(1, round(opts.warmup * total))
    if step < warm:
        return opts.lr * (step + 1) / warm
    return opts.lr * max(0.0, (total - step) / max(1, total - warm))


def train(dataset: Path, out: Path, opts: TrainOptions, progress: Progress | None = None) -> Json:
    """Train, write the adapter, TRAINING and LOSS_PLOT into `out`; returns TRAINING's content."""
    import contextlib

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agent_host.config.machine import classify, fast_bf16, manifest_facts, read_host_facts
    from agent_host.serving.models import KNOWN, TEMPLATE, ensure_model

    say = progress or (lambda done, total, what: None)
    quiet_transformers()
    if opts.base not in KNOWN:
        raise UserError(f"--base {opts.base}: not an embedded model ({', '.join(KNOWN)})")
    data = dataset_file(dataset)
    examples = read_examples(data)
    if not examples:
        raise UserError(f"{data}: no examples")
    say(0, 0, f"building {opts.base}")
    base_dir = ensure_model(opts.base)
    tok = AutoTokenizer.from_pretrained(base_dir)
    template = TEMPLATE.read_text()
    say(0, len(examples), "tokenizing")
    encoded: list[Encoded] = []
    if opts.pack == "episode":
        groups = episodes(examples)
        for n, group in enumerate(groups, 1):
            say(n, len(groups), "tokenizing")
            encoded += encode_episode(tok, group, template, opts.max_tokens)
    else:
        for n, ex in enumerate(examples, 1):
            say(n, len(examples), "tokenizing")
            encoded.append(encode(tok, ex, template))
    skipped = sum(1 for e in encoded if len(e.ids) > opts.max_tokens)
    encoded = [e for e in encoded if len(e.ids) <= opts.max_tokens]
    if not encoded:
        raise UserError(f"{data}: every example is longer than --max-tokens {opts.max_tokens}")

    random.seed(opts.seed)
    torch.manual_seed(opts.seed)
    facts = read_host_facts()
    bf16 = fast_bf16(facts) if opts.bf16 is None else opts.bf16
    lora = LoraConfig(r=opts.rank, lora_alpha=opts.alpha, lora_dropout=opts.dropout,
                      target_modules=list(opts.targets), task_type="CAUSAL_LM")
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32), lora)
    model.train()
    # the causal LM, its layers wrapped by LoRA (Any: torch types a module's children as Tensor | Module)
    inner: Any = model.get_base_model()
    if opts.checkpointing:
        inner.config.use_cache = False
        inner.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=opts.lr, weight_decay=0.0)

    per_epoch = math.ceil(len(encoded) / opts.batch)
    total = max(1, math.ceil(opts.epochs * per_epoch))
    if opts.max_steps is not None:
        total = min(total, opts.max_steps)
    order: list[int] = []
    rng = random.Random(opts.seed)
    curve: list[Json] = []
    tokens = targets = 0
    t0 = time.monotonic()
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if bf16 else contextlib.nullcontext
    for step in range(total):
        batch: list[Encoded] = []
        while len(batch) < opts.batch:
            if not order:
                order = list(range(len(encoded)))
                rng.shuffle(order)
            batch.append(encoded[order.pop()])
        for g in optimizer.param_groups:
            g["lr"] = _lr_at(step, total, opts)
        optimizer.zero_grad(set_to_none=True)
        weight = sum(e.targets for e in batch)
        loss_sum = 0.0
        for e in batch:
            # the head only where a target is predicted: the full vocabulary's logits over a whole
            # sequence are a fifth of the model's work and gigabytes at 8192 tokens
            where = [i for i in range(len(e.ids) - 1) if e.labels[i + 1] != IGNORE]
            with autocast():
                hidden = inner.model(input_ids=torch.tensor([e.ids])).last_hidden_state[0, where]
                logits = inner.lm_head(hidden)
            loss = torch.nn.functional.cross_entropy(logits.float(), torch.tensor([e.labels[i + 1] for i in where]))
            (loss * (e.targets / weight)).backward()  # type: ignore[no-untyped-call]
            loss_sum += float(loss.detach()) * e.targets
            tokens += len(e.ids)
        optimizer.step()
        targets += weight
        elapsed = time.monotonic() - t0
        curve.append({"step": step + 1, "loss": round(loss_sum / weight, 5), "lr": _lr_at(step, total, opts),
                      "tokens": tokens, "seconds": round(elapsed, 2)})
        say(step + 1, total, f"step {step + 1}/{total}, loss {loss_sum / weight:.3f}, {tokens / elapsed:.0f} tok/s")
    wall = time.monotonic() - t0

    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out), safe_serialization=True)
    (out / "README.md").unlink(missing_ok=True)   # peft's blank model card; training.json says what this is
    record: Json = {
        "command": opts.command, "base": opts.base, "base_dir": str(base_dir),
        "data": {"file": str(data), "sha256": sha256_file(data), "examples": len(examples),
                 "sequences": len(encoded), "skipped_too_long": skipped, "pack": opts.pack,
                 "tokens": sum(len(e.ids) for e in encoded), "target_tokens": sum(e.targets for e in encoded)},
        "seed": opts.seed,
        "hyperparameters": {k: v for k, v in asdict(opts).items() if k not in ("command", "base", "seed")},
        "bf16_autocast": bf16, "torch_threads": torch.get_num_threads(),
        "steps": total, "steps_per_epoch": per_epoch, "sequences_seen": total * opts.batch,
        "tokens_seen": tokens, "target_tokens_seen": targets,
        "tokens_per_s": round(tokens / wall, 1), "seconds_per_step": round(wall / total, 2),
        # by tokens, not steps: sequences differ tenfold in length, and a short run sees few
        "epoch_seconds_projected": round(sum(len(e.ids) for e in encoded) * wall / tokens, 1),
        "wall_seconds": round(wall, 1),
        "machine": {**manifest_facts(facts), "description": classify(facts).description},
        "trainable_parameters": sum(p.numel() for p in trainable),
        "loss_curve": curve,
    }
    (out / TRAINING).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    plot_loss(curve, out / LOSS_PLOT, title=f"LoRA r{opts.rank} on {opts.base}: {len(encoded)} sequences ({opts.pack})")
    return record


def quiet_transformers() -> None:
    """No weight-loading bars from transformers: the step's progress is ours."""
    from transformers.utils import logging as tlog

    tlog.disable_progress_bar()
    tlog.set_verbosity_error()


def plot_loss(curve: list[Json], path: Path, *, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot([c["step"] for c in curve], [c["loss"] for c in curve], marker="." if len(curve) < 50 else None)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss (target tokens)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
