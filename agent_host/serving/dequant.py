"""A GPTQ checkpoint's weights dequantized into a dense fp32 checkpoint: the same 4-bit
weights' effect on behaviour exactly, served by an ordinary GEMM (so its speed is not a 4-bit
speed). The demo's 4-bit side on a CPU whose vLLM library has no 4-bit kernel (AVX2)."""

from __future__ import annotations

import shutil
from pathlib import Path

from agent_host.errors import UserError

# compressed-tensors' per-module parameters, beside the dequantized `weight`
QUANT_PARAMS = ("weight_scale", "weight_shape", "weight_zero_point", "weight_g_idx",
                "weight_global_scale", "input_scale", "input_zero_point")


def dequantize(src: Path, out: Path) -> dict:
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils.quantization_config import CompressedTensorsConfig
    except ImportError as exc:
        raise UserError(f"dequantizing {src} needs transformers and compressed-tensors "
                        f"(the vllm extra; run `make setup`): {exc}") from None
    loaded = AutoModelForCausalLM.from_pretrained(
        src, dtype=torch.float32, quantization_config=CompressedTensorsConfig(run_compressed=False))
    state = {k: v.detach().to(torch.float32).contiguous() for k, v in loaded.state_dict().items()
             if k.rsplit(".", 1)[-1] not in QUANT_PARAMS}
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    del loaded
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if "lm_head" not in k]:
        raise UserError(f"{src}: dequantized weights do not match the model: missing {missing[:5]}, "
                        f"unexpected {unexpected[:5]}")
    if missing:  # a tied lm_head
        model.tie_weights()
    model.save_pretrained(out, safe_serialization=True)
    AutoTokenizer.from_pretrained(src).save_pretrained(out)
    if (src / "generation_config.json").is_file():
        shutil.copy(src / "generation_config.json", out / "generation_config.json")
    return {"source": f"{src.name} dequantized to fp32 (the GPTQ weights exactly; not a 4-bit kernel)"}
