"""`tiny-vlm`: a random-weight vision-language model made offline, for tests of the image path.

Idefics3-shaped (the architecture of SmolVLM v1): a SigLIP-style vision tower (1 layer, hidden
64, patches of 16 px on 224 px tiles), the pixel-shuffle connector (scale 2: 49 tokens a tile)
and a Llama text model like tiny-random's (2 layers, hidden 64, head_dim 32), with tiny-random's
byte-level BPE tokenizer trained here again with Idefics3's image tokens added. Its processor
(Idefics3Processor over the PIL image processor: no torchvision needed) splits an image whose
long side is resized to 448 px into 224 px tiles plus a global view, so a 1080x2400 phone
screenshot is 2 tiles + 1 global = 147 image tokens, 157 with their markers.

Why Idefics3: vLLM 0.32 serves it on the CPU and transformers builds its processor offline
without torchvision; Qwen2-VL / Qwen2.5-VL processors cannot be made without torchvision
(their video processor is required), and this venv has none. Its answers are noise; tool calls
are schema-valid under tool_choice="required" (the builds' xgrammar structured outputs).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent_host.errors import UserError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

TILE = 224            # px: the vision tower's image size, and the processor's tile
LONG_SIDE = 2 * TILE  # px: the processor resizes an image's long side to this before tiling
PATCH = 16
SCALE = 2             # pixel shuffle: (TILE/PATCH)^2 / SCALE^2 = 49 tokens a tile
# tokens: a task's 12 steps of tools, one screenshot, a random reply of up to 512 tokens and its
# history fit (at 4096, episodes ran out of context after about three steps and ended `exhausted`)
CONTEXT = 16384
IMAGE_TOKENS = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>",
                *[f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]]


def tokens_per_tile() -> int:
    return (TILE // PATCH) ** 2 // SCALE ** 2


def _one_id(tok: PreTrainedTokenizerFast, token: str) -> int:
    """The id of one token (the stub's `int | list[int]` is for a list of tokens)."""
    i = tok.convert_tokens_to_ids(token)
    assert isinstance(i, int), token
    return i


def build(out: Path, tok: PreTrainedTokenizerFast, *, seed: int, chat_template: str) -> int:
    """Write the model and its processor into `out`, around `tok` (tiny-random's tokenizer
    trained with IMAGE_TOKENS as special tokens, one id each, never split: the processor would
    otherwise add them past the model's vocabulary); its parameter count."""
    try:
        import torch
        from transformers import GenerationConfig, Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
        from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil
    except ImportError as exc:
        raise UserError(f"building tiny-vlm needs transformers, tokenizers, pillow and torch "
                        f"(the vllm extra; run `make setup`): {exc}") from None
    eos, pad, image = (_one_id(tok, t) for t in ("<|im_end|>", "<|endoftext|>", "<image>"))
    config = Idefics3Config(
        text_config={"model_type": "llama", "vocab_size": (len(tok) + 63) // 64 * 64, "hidden_size": 64,
                     "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
                     "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": CONTEXT,
                     "rms_norm_eps": 1e-5, "tie_word_embeddings": True,
                     "bos_token_id": pad, "eos_token_id": eos, "pad_token_id": pad},
        # head_dim 32 in the tower too: vLLM's CPU attention needs head_dim >= 32
        vision_config={"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "patch_size": PATCH, "image_size": TILE},
        scale_factor=SCALE, image_token_id=image,
        tie_word_embeddings=True, pad_token_id=pad)
    torch.manual_seed(seed)
    # transformers' stub wraps .to oddly (it expects a model, not a dtype)
    model = Idefics3ForConditionalGeneration(config).to(torch.float32)  # type: ignore[arg-type]
    with torch.no_grad():  # as tiny-random: larger weights than the default init, less uniform output
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.2)
    model.save_pretrained(out, safe_serialization=True)
    GenerationConfig(eos_token_id=eos, pad_token_id=pad).save_pretrained(out)
    images = Idefics3ImageProcessorPil(size={"longest_edge": LONG_SIDE}, max_image_size={"longest_edge": TILE})
    Idefics3Processor(image_processor=images, tokenizer=tok, image_seq_len=tokens_per_tile(),
                      chat_template=chat_template).save_pretrained(out)
    return sum(p.numel() for p in model.parameters())
