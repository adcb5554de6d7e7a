"""The run manifest says what was compared: the host's facts and each build's checkpoint."""

from __future__ import annotations

import hashlib
import json

from agent_host.config import machine
from agent_host.config.builds import Build
from agent_host.runs.manifest import build_manifest
from agent_host.serving.checkpoint import checkpoint_facts, content_hash
from agent_host.config.manifest import RunManifest


def test_manifest_facts_of_a_host():
    facts = machine.HostFacts(arch="x86_64", cpu_model="Xeon", cores=8, usable_cores=6,
                              cpu_flags=frozenset({"avx2", "avx512f", "amx_tile", "amx_bf16"}))
    m = machine.manifest_facts(facts)
    assert m["cpu_model"] == "Xeon" and m["threads"] == 6 and m["hardware_class"] == "x86-amx"
    assert m["cpu_flags"] == {"amx_tile": True, "amx_bf16": True, "avx512f": True,
                              "avx512_bf16": False, "avx2": True}


def test_checkpoint_hash_covers_config_and_weights(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text("{}")
    (d / "model.safetensors").write_bytes(b"abc")
    (d / "README.md").write_text("not hashed")
    h = content_hash(d)
    assert h == hashlib.sha256(b"config.json\0{}model.safetensors\0abc").hexdigest()
    (d / "model.safetensors").write_bytes(b"abd")
    assert content_hash(d) != h


def test_manifest_records_host_and_checkpoints(tmp_path):
    d = tmp_path / "q"
    d.mkdir()
    (d / "config.json").write_text("{}")
    (d / "model.safetensors").write_bytes(b"w")
    (d / "agent-host-quantize.json").write_text(json.dumps({"weights": "w4a16", "group_size": 64}))
    local = Build(id="local", weight_path="w4a16", server="vllm", model=str(d))
    remote = Build(id="remote", weight_path="x", server="openai", base_url="http://h/v1", model="m")
    m = build_manifest(run_id="r", builds=[local, remote], tasks=[], repeats=1, seed=0, phones=[],
                       command=["x"])
    assert m.host["threads"] >= 1 and set(m.host["cpu_flags"]) == set(machine.MANIFEST_FLAGS)
    assert m.checkpoints["local"] == {"path": str(d), "sha256": content_hash(d),
                                         "quantization": {"weights": "w4a16", "group_size": 64}}
    assert "no local checkpoint" in m.checkpoints["remote"]["note"]
    assert "path" in checkpoint_facts(Build(id="e", weight_path="fp32", server="vllm", model="tiny-random"))


def test_a_build_whose_role_is_reference_is_the_reports_baseline(tmp_path):
    """A run of embedded-w4a16 and embedded-bf16 (listed in that order, no --baseline) is
    compared against the 16-bit reference, not against whichever build came first."""
    from agent_host.config.hosts import find_build
    from agent_host.report.load import Run

    # A report reads a run made on whatever machine ran it: whether this machine's vLLM tier
    # serves the builds (AVX2's has no 4-bit kernel) is beside the point.
    builds = [find_build(b, check_machine=False) for b in ("embedded-w4a16", "embedded-bf16")]
    run = Run(tmp_path, RunManifest(builds=[b.model_dump(mode="json") for b in builds]), [])
    assert run.reference_build() == "embedded-bf16"
