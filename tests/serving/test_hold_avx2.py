"""AGENT_HOST_HOLD_AVX2=1: this machine seen and served as an AVX2-only one. agent-host drops
the AVX-512 and AMX flags it reads; a vLLM server it starts gets the environment that holds
ATen, MKL and oneDNN to AVX2 and serving/avx2_boot's sitecustomize, so vLLM loads `_C_AVX2`
(the only way to check that tier's real kernels on a wider CPU)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from agent_host.config import machine
from agent_host.config.machine import HOLD_AVX2_ENV, read_cpu_flags, read_host_facts, vllm_cpu_library
from agent_host.serving.kinds import vllm as vllm_kind
from fixtures_vllm import vllm_missing_reason

X86_AVX2 = platform.machine() in ("x86_64", "AMD64") and "avx2" in (machine.read_cpu_flags() or ())
needs_avx2 = pytest.mark.skipif(not X86_AVX2, reason="holding to AVX2 needs an x86-64 CPU with AVX2")


@needs_avx2
def test_held_machine_reads_as_avx2_only(monkeypatch):
    monkeypatch.setenv(HOLD_AVX2_ENV, "1")
    facts = read_host_facts()
    assert not [f for f in facts.cpu_flags if f.startswith(("avx512", "amx"))]
    assert "avx2" in facts.cpu_flags and read_cpu_flags() == facts.cpu_flags
    assert vllm_cpu_library(facts) == "_C_AVX2" and machine.cpu_dtype(facts)[0] == "float32"
    assert facts.amx_permitted is None
    monkeypatch.setenv(HOLD_AVX2_ENV, "0")
    assert machine.held_to_avx2() is False


@needs_avx2
@pytest.mark.skipif(vllm_missing_reason() is not None, reason=vllm_missing_reason() or "")
def test_held_server_plan_carries_the_hold_to_every_process(monkeypatch):
    """The hold's sitecustomize comes first on PYTHONPATH (Python imports only the first: it
    replaces amx_boot, whose AMX grant nothing held to AVX2 needs), with the ISA caps."""
    from agent_host.serving.models import tiny_random_build

    monkeypatch.setenv(HOLD_AVX2_ENV, "1")
    spec = vllm_kind.plan(tiny_random_build(), port=1, api_key="k", seed=0)
    for env in (spec.env, spec.env_set):
        assert env["PYTHONPATH"].split(os.pathsep)[0] == str(vllm_kind.AVX2_BOOT)
        assert str(vllm_kind.AMX_BOOT) not in env["PYTHONPATH"]
        assert {k: env[k] for k in machine.hold_avx2_env()} == machine.hold_avx2_env()


@needs_avx2
def test_boot_holds_torchs_cpu_checks_to_avx2():
    """What vLLM's import_kernels and kernel choices read (torch.cpu's checks), in a fresh
    process with the boot first on its path, as a server's processes have it."""
    pytest.importorskip("torch")
    code = ("import json, torch; c = torch.cpu; print(json.dumps([c._is_avx512_supported(), "
            "c._is_avx512_bf16_supported(), c._is_amx_tile_supported(), c._is_vnni_supported(), "
            "c._is_avx2_supported(), torch.backends.cpu.get_cpu_capability()]))")
    env = {**os.environ, **machine.hold_avx2_env(), "PYTHONPATH": str(vllm_kind.AVX2_BOOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == [False, False, False, False, True, "AVX2"]


def _vllm_libraries(pids) -> dict[int, list[str]]:
    """Which of vLLM's kernel libraries each process has mapped (/proc/PID/maps)."""
    out = {}
    for pid in pids:
        try:
            maps = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
        out[pid] = sorted({line.rsplit("/", 1)[-1] for line in maps.splitlines()
                           if "/vllm/_C" in line and line.endswith(".so")})
    return out


@needs_avx2
@pytest.mark.slow
@pytest.mark.vllm
def test_w8a8_is_served_by_vllms_avx2_library_in_fp32(monkeypatch, tmp_path):
    """GPTQ W8A8 of the tiny model, calibrated and served in fp32 as on an AVX2-only machine:
    every vLLM process maps `_C_AVX2` (no other kernel library), the int8 layers run
    CPUInt8ScaledMMLinearKernel (oneDNN: AMX held off), and it answers a schema-valid tool call."""
    if vllm_missing_reason():
        pytest.skip(vllm_missing_reason())
    from agent_host.serving.quantize import quantize_env_missing
    if quantize_env_missing():
        pytest.skip(quantize_env_missing())
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema comes with the vllm extra")
    import httpx

    from agent_host.config import hosts
    from agent_host.config.hosts import embedded_build, hardware_problems
    from agent_host.serving import models, procs
    from agent_host.serving.quantize import QUANT_FACTS
    from agent_host.serving.server import start
    from fixtures_tools import SCHEMAS, TAP, TASK_COMPLETE

    monkeypatch.setenv(HOLD_AVX2_ENV, "1")
    monkeypatch.setattr(hosts, "_facts_here", [read_host_facts()])    # read held, not cached
    model = models.ensure_model("tiny-random-w8a8")
    assert json.loads((model / QUANT_FACTS).read_text())["dtype"] == "float32"
    build = embedded_build("tiny-random-w8a8")
    assert build.args[build.args.index("--dtype") + 1] == "float32" and not hardware_problems(build)
    with start(build, log_dir=tmp_path, startup_timeout=600) as srv:
        libs = _vllm_libraries([srv.pid, *procs.group_members(srv.pid)])
        ep = srv.endpoint
        r = httpx.post(ep.base_url + "/chat/completions", timeout=300,
                       headers={"Authorization": f"Bearer {ep.api_key}"},
                       json={"model": ep.model, "max_tokens": 64, "temperature": 0,
                             "tools": [TAP, TASK_COMPLETE], "tool_choice": "required",
                             "parallel_tool_calls": False,
                             "messages": [{"role": "user", "content": "Goal: turn on Wi-Fi.\n[0] Wi-Fi"}]})
    assert r.status_code == 200, r.text
    calls = r.json()["choices"][0]["message"]["tool_calls"]
    assert len(calls) == 1 and calls[0]["function"]["name"] in SCHEMAS
    jsonschema.validate(json.loads(calls[0]["function"]["arguments"]), SCHEMAS[calls[0]["function"]["name"]])
    mapped = [ls for ls in libs.values() if ls]
    assert len(mapped) >= 2 and all(ls == ["_C_AVX2.abi3.so"] for ls in mapped), libs   # API server, engine core
    log = (tmp_path / f"{build.id}.server.log").read_text()
    assert "Selected CPUInt8ScaledMMLinearKernel for CompressedTensorsW8A8Int8" in log
    assert "ONEDNN_MAX_CPU_ISA=AVX2" in log and "ATEN_CPU_CAPABILITY=avx2" in log
