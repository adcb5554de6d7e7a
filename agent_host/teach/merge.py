"""An adapter merged into its base: a full fp32 safetensors checkpoint, as the base's own (same
tokenizer, chat template and generation config), that vLLM serves and `agent-host quantize`
quantizes like any local model. Seconds for SmolLM2-135M.

The base is named by the adapter's training.json (`base`: an embedded model, rebuilt here from
the repository if absent), not by its path, so an adapter trained elsewhere merges here.
Written atomically (a temporary directory renamed into place), with MERGED beside the
weights: the adapter's sha256, its base, and the data it was trained on.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from agent_host.config.requests import Json
from agent_host.errors import UserError
from agent_host.teach.dataset import sha256_file
from agent_host.teach.train import TRAINING, quiet_transformers

ADAPTER = "adapter_model.safetensors"
MERGED = "agent-host-taught.json"


def adapter_facts(adapter: Path) -> Json:
    """The adapter's training record; UserError when `adapter` is not a `teach train` output."""
    for name in (ADAPTER, "adapter_config.json", TRAINING):
        if not (adapter / name).is_file():
            raise UserError(f"{adapter}: no {name} (an adapter directory is what `agent-host teach train` writes)")
    try:
        record: Json = json.loads((adapter / TRAINING).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UserError(f"{adapter / TRAINING}: not JSON ({exc})") from None
    if not isinstance(record.get("base"), str):
        raise UserError(f"{adapter / TRAINING}: base: missing (the embedded model the adapter was trained on)")
    return record


def merge(adapter: Path, out: Path) -> Json:
    """Merge `adapter` into its base, written to `out` (which must not exist); returns MERGED."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agent_host.serving.models import ensure_model

    record = adapter_facts(adapter)
    quiet_transformers()
    if out.exists():
        raise UserError(f"--out {out}: exists (a merged checkpoint is written whole, into a new directory)")
    t0 = time.monotonic()
    base_dir = ensure_model(record["base"])
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
        merged = PeftModel.from_pretrained(model, adapter).merge_and_unload()
        merged.save_pretrained(tmp, safe_serialization=True)
        AutoTokenizer.from_pretrained(base_dir).save_pretrained(tmp)
        for name in ("generation_config.json",):   # the base's stop token; no sampling defaults
            if (base_dir / name).is_file():
                shutil.copy2(base_dir / name, tmp / name)
        facts: Json = {"base": record["base"], "adapter": str(adapter),
                       "adapter_sha256": sha256_file(adapter / ADAPTER),
                       "data_sha256": (record.get("data") or {}).get("sha256"),
                       "seed": record.get("seed"), "steps": record.get("steps"),
                       "merge_seconds": round(time.monotonic() - t0, 1)}
        (tmp / MERGED).write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")
        tmp.chmod(0o755)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return facts
