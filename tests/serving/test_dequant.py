"""The AVX2 demo's 4-bit side: a GPTQ checkpoint's weights dequantized into a dense one hold
exactly scale x (code - 8) of the packed int4 codes, group by group; the rest is unchanged."""

from __future__ import annotations

import pytest

from agent_host.serving.quantize import quantize_env_missing


@pytest.mark.slow
def test_dequantized_weights_are_the_gptq_weights_exactly():
    if quantize_env_missing():
        pytest.skip(quantize_env_missing())
    pytest.importorskip("transformers")
    import torch
    from safetensors.torch import load_file

    from agent_host.config.hosts import embedded_build
    from agent_host.serving import models

    q = models.ensure_model("tiny-random-w4a16")
    d = models.ensure_model("tiny-random-w4a16-dequant")
    packed = {}
    for f in q.glob("*.safetensors"):
        packed.update(load_file(f))
    dense = {}
    for f in d.glob("*.safetensors"):
        dense.update(load_file(f))
    n = 0
    for key, w in dense.items():
        base = key.removesuffix(".weight")
        if base + ".weight_packed" not in packed:
            if key in packed:
                assert torch.equal(w, packed[key].to(w.dtype)), key       # norms, embedding: as they were
            continue
        codes = torch.stack([(packed[base + ".weight_packed"] >> (4 * i)) & 15 for i in range(8)], -1)
        codes = codes.reshape(w.shape[0], -1)[:, : w.shape[1]].to(torch.float32) - 8
        scale = packed[base + ".weight_scale"].to(torch.float32)
        group = w.shape[1] // scale.shape[1]
        want = codes * scale.repeat_interleave(group, dim=1)
        assert torch.allclose(w, want, rtol=0, atol=1e-6), key
        n += 1
    assert n == 14                                                   # 2 layers x 7 linear
    b = embedded_build("tiny-random-w4a16-dequant")
    assert "--dtype" in b.args and not b.requires_vllm_ops         # runs on every tier
