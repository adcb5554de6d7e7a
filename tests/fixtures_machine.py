"""Fixtures: the machine agent-host sees. vLLM's x86 CPU wheel loads one kernel library per
tier (`_C`, `_C_AVX512`, `_C_AVX2`) and refuses builds whose kernel that library lacks, so a
test that resolves or plans a build depends on the tier of the machine it runs on. These make
agent-host see a chosen tier instead, whatever the machine is:

    def test_something(fake_tier):
        fake_tier("_C_AVX2")             # or a HostFacts; agent-host now reads this tier

    def test_on_every_tier(each_tier):   # runs once per vLLM CPU library, already faked
        ...

`pytest --fake-tier=_C_AVX2` fakes one tier for the whole session, to check on one machine
that the suite passes on another tier; tests that start a real vLLM server are skipped then.

Only agent-host's choices are faked: a server still starts on this machine with its real vLLM,
so serving/kinds/vllm.py's AMX grant keeps reading the real flags (a server on an AMX CPU needs
it whatever tier agent-host is shown; that module imports read_cpu_flags by name, and would
take the fake if first imported under it).
"""

from __future__ import annotations

import dataclasses
import functools

import pytest

from agent_host.config import hosts, machine
from agent_host.config.machine import HostFacts
from agent_host.serving.kinds import vllm as vllm_kind

COMMON = {"fpu", "sse2", "avx", "fma", "avx2"}
AVX2 = HostFacts(arch="x86_64", cpu_model="an AVX2 EPYC", cpu_flags=frozenset(COMMON))
AVX512 = HostFacts(arch="x86_64", cpu_flags=frozenset(COMMON | {"avx512f", "avx512bw", "avx512vl"}))
AVX512_BF16 = HostFacts(arch="x86_64", cpu_flags=AVX512.cpu_flags | {"avx512_bf16"})
AMX = HostFacts(arch="x86_64", cpu_flags=AVX512_BF16.cpu_flags | {"amx_tile", "amx_bf16", "amx_int8"},
                amx_permitted=True)
AMX_DENIED = HostFacts(arch="x86_64", cpu_flags=AVX512.cpu_flags | {"amx_tile", "amx_bf16"},
                       amx_permitted=False)
# Each of vLLM's CPU libraries, by a machine that loads it (no AMX: `_C` without it is the
# narrower case, and AMX only adds the W4A8 kernel).
CPU_TIERS = {"_C": AVX512_BF16, "_C_AVX512": AVX512, "_C_AVX2": AVX2}


# taken before any test replaces them
_read_facts, _read_cpu_flags = machine.read_host_facts, machine.read_cpu_flags


@functools.cache
def _real_facts() -> HostFacts:
    return _read_facts()


def fake_machine(monkeypatch, tier: str | HostFacts) -> HostFacts:
    """Make every read of this machine's CPU (machine.read_host_facts, read_cpu_flags,
    read_amx_permitted, hosts' cached facts) answer `tier`'s; cores and memory stay real. An
    x86 CPU without GPU: a GPU host's server would not use the CPU tier at all."""
    real = _real_facts()
    tier = CPU_TIERS[tier] if isinstance(tier, str) else tier
    facts = dataclasses.replace(real, arch=tier.arch, cpu_model=tier.cpu_model or real.cpu_model,
                                cpu_flags=tier.cpu_flags, amx_permitted=tier.amx_permitted,
                                gpus=(), jetson_model=None)
    monkeypatch.setattr(machine, "read_host_facts", lambda: facts)
    monkeypatch.setattr(machine, "read_cpu_flags", lambda: facts.cpu_flags)
    monkeypatch.setattr(machine, "read_amx_permitted", lambda: facts.amx_permitted)
    monkeypatch.setattr(hosts, "_facts_here", [facts])
    monkeypatch.setattr(vllm_kind, "read_cpu_flags", _read_cpu_flags)
    return facts


@pytest.fixture
def fake_tier(monkeypatch):
    """fake_tier("_C_AVX2") (or a HostFacts): agent-host sees that machine until the test ends."""
    return lambda tier: fake_machine(monkeypatch, tier)


@pytest.fixture(params=sorted(CPU_TIERS))
def each_tier(request, monkeypatch) -> HostFacts:
    """The test once per vLLM CPU library, with agent-host seeing a machine that loads it."""
    return fake_machine(monkeypatch, request.param)


def pytest_addoption(parser):
    parser.addoption("--fake-tier", choices=sorted(CPU_TIERS), default=None,
                     help="make agent-host see a machine that loads this vLLM CPU library, in "
                          "every test: the suite's result on that tier, from this machine")


@pytest.fixture(autouse=True)
def _session_tier(request, monkeypatch):
    if (tier := request.config.getoption("--fake-tier")) is not None:
        fake_machine(monkeypatch, tier)


def pytest_collection_modifyitems(config, items):
    """Under --fake-tier, a test that starts a real vLLM server is skipped: the server would
    load this machine's kernel library with the faked tier's choices, a machine that exists
    nowhere (seen: W8A8 in the fp32 an AVX2 CPU gets, through this AMX machine's
    int8_scaled_mm_with_quant, which takes bf16 only, died at its first request). A real
    server on `_C_AVX2` from a wider CPU: AGENT_HOST_HOLD_AVX2=1 (tests/serving/test_hold_avx2.py)."""
    if (tier := config.getoption("--fake-tier")) is None:
        return
    skip = pytest.mark.skip(reason=f"--fake-tier={tier}: a real vLLM server runs this machine's "
                                   "tier, not the faked one")
    for item in items:
        if item.get_closest_marker("vllm") or "tiny_vllm" in getattr(item, "fixturenames", ()):
            item.add_marker(skip)
