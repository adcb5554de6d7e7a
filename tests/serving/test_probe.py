"""`agent-host probe`: classification from synthetic facts (every class) and this machine."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest

from agent_host.config.machine import (
    Gpu, HostFacts, classify, gpu_has_bf16, parse_cpuinfo, parse_nvidia_smi, read_host_facts,
)
from agent_host.serving.probe import recommend

BASE = {"fpu", "sse2", "avx", "fma"}


def x86(*flags: str, **kw) -> HostFacts:
    return HostFacts(arch="x86_64", cpu_model="test CPU", cpu_flags=frozenset(BASE | set(flags)),
                     cores=8, usable_cores=8, memory_gib=32.0, **kw)


def test_x86_amx():
    c = classify(x86("avx2", "avx512f", "amx_tile", "amx_bf16", "amx_int8"))
    assert c.hardware_class == "x86-amx"
    assert c.description == "x86-64 with AMX (amx_tile, amx_bf16) and AVX-512"


def test_x86_avx512():
    c = classify(x86("avx2", "avx512f"))
    assert (c.hardware_class, c.description) == ("x86-avx512", "x86-64 with AVX-512, no AMX")
    c = classify(x86("avx2", "avx512f", "avx512_bf16", "amx_tile"))  # AMX without amx_bf16
    assert c.hardware_class == "x86-avx512"
    assert c.description == "x86-64 with AVX-512 (with avx512_bf16), incomplete AMX (amx_tile only)"


def test_x86_avx2_says_exactly_that():
    c = classify(x86("avx2"))
    assert (c.hardware_class, c.description) == ("x86-avx2", "x86-64 with AVX2, no AMX, no AVX-512")


def test_x86_without_avx2_has_no_profile():
    c = classify(x86())
    assert c.hardware_class is None and "AVX2" in c.description
    a = recommend(x86(), "fidelity")
    assert a.build is None and "no host profile fits" in a.why


def test_arm64():
    f = HostFacts(arch="aarch64", cpu_flags=frozenset({"fp", "asimd", "sve", "bf16"}))
    c = classify(f)
    assert (c.hardware_class, c.description) == ("arm64", "arm64 (aarch64) CPU with sve, bf16")
    a = recommend(f, "speed")
    assert a.build.weight_path == "w4a16-tinygemm" and not a.verified


def test_cuda_beats_the_cpu_class():
    f = x86("avx2", "avx512f", "amx_tile", "amx_bf16", gpus=(Gpu("NVIDIA A100-SXM4-80GB", 80.0, 8.0),))
    c = classify(f)
    assert c.hardware_class == "cuda"
    assert c.description == "NVIDIA GPU: NVIDIA A100-SXM4-80GB (compute capability 8, 80 GiB)"
    assert c.cpu_description.startswith("x86-64 with AMX")
    assert recommend(f, "speed").build.id == "bf16"


def test_cuda_without_bf16_gets_fp16():
    f = x86("avx2", gpus=(Gpu("Tesla T4", 15.0, 7.5),))
    a = recommend(f, "fidelity")
    assert a.build.id == "fp16" and "no bf16" in a.why


def test_jetson():
    f = HostFacts(arch="aarch64", cpu_flags=frozenset({"asimd"}), jetson_model="NVIDIA Jetson AGX Orin Developer Kit")
    c = classify(f)
    assert (c.hardware_class, c.description) == ("jetson", "NVIDIA Jetson: NVIDIA Jetson AGX Orin Developer Kit")
    assert c.cpu_description == "arm64 (aarch64) CPU"
    assert gpu_has_bf16(f) is True and recommend(f).build.id == "bf16"
    xavier = HostFacts(arch="aarch64", jetson_model="NVIDIA Jetson Xavier NX")
    assert recommend(xavier).build.id == "fp16"


def test_unknown_arch():
    c = classify(HostFacts(arch="riscv64"))
    assert c.hardware_class is None and "riscv64" in c.reasons[0]


def test_amx_speed_picks_w4a8_and_fidelity_keeps_bf16_activations():
    f = x86("avx2", "avx512f", "amx_tile", "amx_bf16")
    speed, fid = recommend(f, "speed"), recommend(f, "fidelity")
    assert speed.build.id == "w4a8-amx" and speed.verified
    assert fid.build.id == "w4a16-tinygemm" and fid.verified and fid.build.activations == "bf16"
    assert "8% slower" in fid.why and "agentic" in fid.why
    assert fid.other["build"] == "w4a8-amx" and speed.other["build"] == "w4a16-tinygemm"


def test_no_amx_never_recommends_w4a8():
    for flags in (("avx2",), ("avx2", "avx512f")):
        for prio in ("speed", "fidelity"):
            a = recommend(x86(*flags), prio)
            assert a.build.id == "w4a16-tinygemm" and not a.verified


def test_unknown_priority():
    from agent_host.errors import UserError

    with pytest.raises(UserError, match="unknown priority"):
        recommend(x86("avx2"), "cheap")


def test_parse_cpuinfo():
    model, flags = parse_cpuinfo("processor\t: 0\nmodel name\t: Xeon\nflags\t\t: fpu avx2 amx_tile\n"
                                 "processor\t: 1\nmodel name\t: Xeon\nflags\t\t: fpu avx2 amx_tile\n")
    assert model == "Xeon" and flags == {"fpu", "avx2", "amx_tile"}
    _, arm = parse_cpuinfo("processor\t: 0\nFeatures\t: fp asimd sve\nCPU part\t: 0xd40\n")
    assert arm == {"fp", "asimd", "sve"}


def test_parse_nvidia_smi():
    gpus = parse_nvidia_smi("NVIDIA A100-SXM4-80GB, 81920, 8.0\nTesla T4, 15360, 7.5\n")
    assert gpus == (Gpu("NVIDIA A100-SXM4-80GB", 80.0, 8.0), Gpu("Tesla T4", 15.0, 7.5))
    assert parse_nvidia_smi("Tesla T4, 15360\n") == (Gpu("Tesla T4", 15.0, None),)


# ---------------------------------------------------------------------- this machine

def _flags_by_hand() -> set[str]:
    """The flags line of /proc/cpuinfo, read here; held to AVX2 (AGENT_HOST_HOLD_AVX2=1, as the
    whole suite can run) through machine.py's own hold, which test_hold_avx2.py checks."""
    from agent_host.config.machine import _held

    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(_held(frozenset(line.split(":", 1)[1].split())))
    return set()


@pytest.mark.skipif(platform.machine() != "x86_64" or not Path("/proc/cpuinfo").exists(),
                    reason="needs an x86-64 Linux machine")
def test_this_machine(capsys, request):
    if request.config.getoption("--fake-tier"):
        pytest.skip("--fake-tier shows agent-host another machine: this test reads the real one")
    from agent_host.cli import main

    flags = _flags_by_hand()
    facts = read_host_facts()
    assert facts.cpu_flags == flags and facts.cores >= 1 and facts.memory_gib > 0
    if {"amx_tile", "amx_bf16"} <= flags:
        want = "x86-amx"
    elif "avx512f" in flags:
        want = "x86-avx512"
    elif "avx2" in flags:
        want = "x86-avx2"
    else:
        want = None
    if facts.gpus or facts.jetson_model:
        pytest.skip("a GPU host: the CPU check above is all")
    assert classify(facts).hardware_class == want
    if want == "x86-avx2":
        assert classify(facts).description == "x86-64 with AVX2, no AMX, no AVX-512"
    assert main(["probe"]) == 0
    text = capsys.readouterr().out
    assert f"This machine: {classify(facts).description}" in text
    assert "recommended for agentic work" in text
    assert ("no AMX" in text) == (want != "x86-amx")
    from agent_host.config.hosts import load_host_profile

    profile = load_host_profile(want)
    assert main(["probe", "--priority", "speed", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["hardware_class"] == want and data["priority"] == "speed"
    pick = profile.build(profile.recommend["speed"].build)
    assert data["recommendation"]["build"] == pick.id
    assert data["recommendation"]["verified"] is pick.verified


def test_amx_flags_the_kernel_does_not_grant_are_no_amx():
    """A hypervisor can show amx_tile in cpuinfo and still fault every tile instruction."""
    flags = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")
    assert classify(x86(*flags)).hardware_class == "x86-amx"
    assert classify(x86(*flags, amx_permitted=True)).hardware_class == "x86-amx"
    denied = classify(x86(*flags, amx_permitted=False))
    assert denied.hardware_class == "x86-avx512" and "grants no AMX tile state" in denied.description


@pytest.mark.skipif(not {"amx_tile", "amx_bf16"} <= _flags_by_hand() if Path("/proc/cpuinfo").exists() else True,
                    reason="needs a CPU with AMX flags")
def test_vllm_server_processes_are_granted_amx_tile_state():
    """vLLM's AMX kernels never ask Linux for tile state, so on an AMX CPU the W4A16 server's
    engine core died with SIGILL on its first request (CI, this machine). Every process started
    with the server's PYTHONPATH holds the permission from its first line on."""
    import subprocess
    import sys

    from agent_host.config.builds import Build
    from agent_host.serving.kinds.vllm import AMX_BOOT

    ask = ("import ctypes; m = ctypes.c_uint64(); "
           "ctypes.CDLL(None).syscall(158, 0x1022, ctypes.byref(m)); print(m.value >> 18 & 1)")
    def granted(env):
        return subprocess.run([sys.executable, "-c", ask], env=env, capture_output=True, text=True,
                              check=True).stdout.strip()
    import os
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    assert granted(bare) == "0"
    assert granted({**bare, "PYTHONPATH": str(AMX_BOOT)}) == "1"
    from agent_host.config.hosts import embedded_build
    from agent_host.serving.kinds import vllm as kind

    build = embedded_build("tiny-random-w4a16")
    assert isinstance(build, Build)
    from agent_host.errors import UserError
    try:
        spec = kind.plan(build, port=1, api_key="k", seed=0)
    except UserError as e:  # vLLM absent: the model cannot be resolved, the env is all we test
        pytest.skip(f"cannot plan the build here: {e}")
    assert spec.env["PYTHONPATH"].split(os.pathsep)[0] == str(AMX_BOOT)


def test_runs_now_lists_every_embedded_build_that_can_start():
    """Issue 14: `probe` listed embedded-default as runnable here but not tiny-random, which
    is built offline in seconds and starts wherever embedded-default does."""
    import importlib.util

    advice = recommend(x86("avx2", "avx512f"), "fidelity")
    if importlib.util.find_spec("vllm") is None:
        assert "tiny-random" not in advice.runs_now
        pytest.skip("vLLM is not installed: no embedded build can start")
    assert {"embedded-default", "tiny-random"} <= set(advice.runs_now)
    assert len(advice.runs_now) == len(set(advice.runs_now))
    assert advice.to_json()["runs_now"] == advice.runs_now
