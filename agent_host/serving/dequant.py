"""A GPTQ checkpoint's weights dequantized into a dense fp32 checkpoint: the same 4-bit
weights' effect on behaviour exactly, served by an ordinary GEMM (so its speed is not a 4-bit
speed). The demo's 4-bit side on a CPU whose vLLM library has no 4-bit kernel (AVX2)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from agent_host.errors import UserError

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig, PreTrainedTokenizerBase

# compressed-tensors' per-module parameters, beside the dequantized `weight`
QUANT_PARAMS = ("weight_scale", "weight_shape", "weight_zero_point", "weight_g_idx",
                "weight_global_scale", "input_scale", "input_zero_point")


def save_dense(config: PretrainedConfig, state: dict[str, torch.Tensor], out: Path, what: str,
               tok: PreTrainedTokenizerBase | None = None) -> int:
    """A plain fp32 model of `config` holding `state` (what a quantized loader dequantized),
    saved to `out` (its parameter count returned): transformers keeps a quantizer attached to what it loaded and will not save
    through it, so the weights are copied into a fresh model first."""
    import torch
    from transformers import AutoModelForCausalLM

    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if "lm_head" not in k]:
        raise UserError(f"{what}: weights do not match the model: missing {missing[:5]}, "
                        f"unexpected {unexpected[:5]}")
    if missing:  # a tied lm_head
        model.tie_weights()
    model.save_pretrained(out, safe_serialization=True)
    if tok is not None:
        tok.save_pretrained(out)
    parameters: int = sum(p.numel() for p in model.parameters())
    return parameters


def dequantize(src: Path, out: Path) -> str:
    """`src` dequantized into `out`; what `out` is made from (its model marker's `source`)."""
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
    del loaded
    save_dense(config, state, out, f"{src} dequantized", AutoTokenizer.from_pretrained(src))
    if (src / "generation_config.json").is_file():
        shutil.copy(src / "generation_config.json", out / "generation_config.json")
    return f"{src.name} dequantized to fp32 (the GPTQ weights exactly; not a 4-bit kernel)"
