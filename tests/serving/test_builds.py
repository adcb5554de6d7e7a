"""Host profiles, the domain facts they encode, find_build, model names, `agent-host builds`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agent_host.config import hosts
from agent_host.config.builds import model_env_var, model_location, resolve_model_name
from agent_host.config.hosts import all_host_profiles, find_build, load_host_profile
from agent_host.errors import ConfigError, UserError

CPU_PROFILES = ("x86-amx", "x86-avx512", "x86-avx2", "arm64")
AMX = frozenset({"avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"})  # every AMX Xeon has avx512_bf16


def test_the_seven_profiles_load():
    profiles = {p.id: p for p in all_host_profiles()}
    assert set(profiles) == {"x86-amx", "x86-avx512", "x86-avx2", "arm64", "cuda", "jetson", "phone-npu"}
    for pid, p in profiles.items():
        assert p.hardware_class == pid
        assert p.builds


def test_w4a8_amx_facts():
    b = load_host_profile("x86-amx").build("w4a8-amx")
    assert b.server == "vllm" and b.weight_path == "w4a8-amx"
    assert b.env["VLLM_CPU_INT4_W4A8"] == "1"
    assert b.env["VLLM_OMNI_CPU_FUSED_NORMS"] == "0"
    assert b.kernel == "int4_scaled_mm_cpu" and b.activations == "bf16"
    assert b.group_size == 128 and b.bits_per_weight == 4.25
    c = b.checkpoint
    assert (c.format, c.bits, c.symmetric, c.lm_head_quantized, c.tied_embeddings) == ("gptq", 4, True, True, False)
    assert set(b.requires_cpu_flags) == {"amx_tile", "amx_bf16"}
    m = b.measured
    assert (m.decode_tok_s, m.threads, m.model) == (86.6, 24, "Spark-X2.5-1.7B") and "8480C" in m.machine
    assert b.verified and b.runnable


def test_w4a16_paths_are_separate_builds():
    p = load_host_profile("x86-amx")
    tiny, wna = p.build("w4a16-tinygemm"), p.build("w4a16-wna16")
    assert tiny.measured.decode_tok_s == 80.0
    assert "vllm-omni" in tiny.requires_packages and "cpu_int4" in tiny.args
    assert "VLLM_CPU_INT4_W4A8" not in tiny.env
    assert wna.env["VLLM_CPU_INT4_W4A8"] == "0" and wna.kernel == "cpu_gemm_wna16"
    assert "cpu_int4" not in wna.args
    assert (wna.measured.relative_to, wna.measured.slowdown) == ("w4a16-tinygemm", 2.2)
    assert tiny.bits_per_weight == wna.bits_per_weight == 4.25 == 4 + 32 / 128


def test_reference_and_bar():
    p = load_host_profile("x86-amx")
    bf16, bar = p.build("bf16"), p.build("llama.cpp-q4_k_m")
    assert p.reference() is bf16 and bf16.measured.decode_tok_s == 41.0 and bf16.bits_per_weight == 16
    assert bar.role == "bar" and bar.server == "llama.cpp"
    assert bar.measured.decode_tok_s == 90.0 and bar.bits_per_weight == 4.5
    assert p.recommend["speed"].build == "w4a8-amx"
    assert p.recommend["fidelity"].build == "w4a16-tinygemm"
    assert "8%" in p.recommend["fidelity"].why and "agentic" in p.recommend["fidelity"].why


def test_fused_norms_off_on_every_cpu_vllm_build_and_only_there():
    """On the profile's own builds (vllm-omni's fused norms); the embedded builds run upstream
    vLLM's kernels."""
    from agent_host.config.hosts import embedded_builds

    for pid in CPU_PROFILES:
        for b in load_host_profile(pid).builds:
            if b.server == "vllm" and b.id not in embedded_builds():
                assert b.env.get("VLLM_OMNI_CPU_FUSED_NORMS") == "0", (pid, b.id)
    for pid in ("cuda", "jetson"):
        for b in load_host_profile(pid).builds:
            assert not any(k.startswith(("VLLM_CPU_", "VLLM_OMNI_CPU")) for k in b.env), (pid, b.id)


def test_no_amx_profiles_have_no_w4a8_and_arm_is_unverified():
    for pid in ("x86-avx512", "x86-avx2", "arm64"):
        p = load_host_profile(pid)
        assert p.build("w4a8-amx") is None
        assert not any(b.env.get("VLLM_CPU_INT4_W4A8") == "1" for b in p.builds)
        assert p.recommend["fidelity"].build == "w4a16-tinygemm"
    arm = load_host_profile("arm64")
    assert not any(b.verified for b in arm.builds if b.role != "default")


def test_gpu_profiles_are_bf16_or_fp16_and_npu_is_not_runnable():
    for pid in ("cuda", "jetson"):
        p = load_host_profile(pid)
        vllm = [b for b in p.builds if b.server == "vllm"]
        assert {b.weight_path for b in vllm} == {"bf16", "fp16"}
        assert p.recommend["fidelity"].build == "bf16"
    npu = load_host_profile("phone-npu")
    assert [b.runnable for b in npu.builds] == [False]
    assert npu.builds[0].checkpoint.calibration == "w8a16" and npu.builds[0].server != "vllm"


def test_embedded_builds_are_listed_with_their_profile():
    p = load_host_profile("x86-avx2")
    b = p.build("embedded-default")
    assert b is not None and b.role == "default" and b.model == "smollm2-135m"


def test_find_build_forms(monkeypatch):
    monkeypatch.setattr(hosts, "local_host_profile_id", lambda: "x86-avx2")
    assert find_build("embedded-default").model == "smollm2-135m"
    assert find_build("tiny-random").model == "tiny-random"
    # unique across profiles
    assert find_build("w4a8-amx", check_machine=False).kernel == "int4_scaled_mm_cpu"
    # qualified and by profile
    assert find_build("cuda/bf16").kernel == "cuBLAS bf16"
    assert find_build("bf16", "x86-amx").kernel == "oneDNN bf16 GEMM (AMX)"
    # ambiguous: this machine's profile decides
    assert find_build("bf16").kernel == load_host_profile("x86-avx2").build("bf16").kernel


def test_find_build_errors(monkeypatch):
    monkeypatch.setattr(hosts, "local_host_profile_id", lambda: None)
    with pytest.raises(UserError, match=r"several host profiles.*x86-amx/bf16"):
        find_build("bf16")
    with pytest.raises(UserError, match=r"unknown build 'nope' \(known: .*w4a8-amx"):
        find_build("nope")
    with pytest.raises(UserError, match=r"unknown build 'w4a8-amx' in host profile cuda \(known: .*bf16"):
        find_build("w4a8-amx", "cuda")
    with pytest.raises(ConfigError, match="unknown host profile 'mars'"):
        find_build("bf16", "mars")


def test_w4a8_is_refused_without_amx(monkeypatch):
    from agent_host.config import machine

    monkeypatch.setattr(machine, "read_cpu_flags", lambda: frozenset({"avx2", "avx512f"}))
    with pytest.raises(UserError, match="amx_tile, amx_bf16.*int4_scaled_mm_cpu"):
        find_build("w4a8-amx")
    with pytest.raises(UserError, match="embedded-w4a8: needs CPU flags amx_tile, amx_bf16"):
        find_build("embedded-w4a8")
    monkeypatch.setattr(machine, "read_cpu_flags", lambda: AMX)
    # an AMX CPU whose kernel grants tile state, whatever this machine is (on an AMD EPYC the
    # real arch_prctl answers "not granted", and the build was refused)
    monkeypatch.setattr(machine, "read_amx_permitted", lambda: True)
    assert find_build("w4a8-amx").id == "w4a8-amx"
    w4a8 = find_build("embedded-w4a8")
    assert w4a8.env["VLLM_CPU_INT4_W4A8"] == "1" and w4a8.model == find_build("embedded-w4a16").model
    assert find_build("embedded-w4a16").env["VLLM_CPU_INT4_W4A8"] == "0"
    assert find_build("w4a16-wna16", "x86-amx").id == "w4a16-wna16"  # no flags needed


# ------------------------------------------------------------------ malformed profiles

def _cli(*args):
    """The CLI in a subprocess, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "agent_host", *args], capture_output=True, text=True)


def _main(capsys, *args) -> tuple[int, str, str]:
    """The CLI in process (fast)."""
    from agent_host.cli import main

    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


GOOD_BUILD = "  - id: b1\n    weight_path: bf16\n    server: vllm\n    model: m\n"


@pytest.mark.parametrize("body, where", [
    ("builds:\n" + GOOD_BUILD + "    bits_per_weight: -1\n", ":9: builds[0].bits_per_weight: Input should be greater than 0"),
    ("builds:\n" + GOOD_BUILD + "    sampling: {temprature: 0}\n", ":9: builds[0].sampling.temprature: Extra inputs"),
    ("builds:\n" + GOOD_BUILD + GOOD_BUILD, ":4: builds: Value error, build id 'b1' appears twice"),
    ("recommend:\n  speed: {build: nope, why: x}\nbuilds:\n" + GOOD_BUILD, ":5: recommend.speed.build: no build 'nope'"),
    ("embedded: [mystery]\nbuilds:\n" + GOOD_BUILD, ":4: embedded[0]: unknown embedded build 'mystery'"),
    ("builds:\n" + GOOD_BUILD + "    measured: {relative_to: zzz, slowdown: 2}\n", ":9: builds[0].measured.relative_to: no build 'zzz'"),
    ("builds:\n" + GOOD_BUILD + "    env: {'BAD NAME': '1'}\n", ":9: builds[0].env: Value error, 'BAD NAME'"),
])
def test_malformed_host_profile_names_file_line_and_field(tmp_path, capsys, body, where):
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: bad\ndescription: d\nhardware_class: x86-avx2\n" + body)
    rc, out, err = _main(capsys, "builds", "--host-profile", str(bad))
    assert rc == 2, out
    assert err.startswith(f"error: {bad}{where}"), err


def test_malformed_host_profile_through_the_real_cli(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: bad\ndescription: d\nhardware_class: x86-avx2\nbuilds:\n" + GOOD_BUILD
                   + "    server_args: [--x]\n")
    out = _cli("builds", "--host-profile", str(bad))
    assert out.returncode == 2
    assert out.stderr == f"error: {bad}:9: builds[0].server_args: Extra inputs are not permitted\n"


def test_profile_id_must_match_file_name_in_the_hosts_dir(tmp_path, monkeypatch):
    d = tmp_path / "cfg" / "hosts"
    d.mkdir(parents=True)
    (d / "mine.yaml").write_text("id: other\ndescription: d\nhardware_class: x86-avx2\nbuilds:\n" + GOOD_BUILD)
    monkeypatch.setenv("AGENT_HOST_CONFIG", str(tmp_path / "cfg"))
    with pytest.raises(ConfigError, match=r"mine.yaml:1: id: 'other' must match the file name"):
        load_host_profile("mine")


def test_user_hosts_dir_adds_and_overrides(tmp_path, monkeypatch):
    d = tmp_path / "cfg" / "hosts"
    d.mkdir(parents=True)
    (d / "cuda.yaml").write_text("id: cuda\ndescription: my GPU box\nhardware_class: cuda\nbuilds:\n" + GOOD_BUILD)
    monkeypatch.setenv("AGENT_HOST_CONFIG", str(tmp_path / "cfg"))
    assert load_host_profile("cuda").description == "my GPU box"
    assert find_build("cuda/b1").model == "m"


# ------------------------------------------------------------------------- model names

def test_model_env_var_name():
    assert model_env_var("spark-x2.5-1.7b-gptq-int4") == "AGENT_HOST_MODEL_SPARK_X2_5_1_7B_GPTQ_INT4"


def test_model_names_resolve_env_first_then_models_yaml(tmp_path, monkeypatch):
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    monkeypatch.setenv("AGENT_HOST_CONFIG", str(cfg))
    monkeypatch.delenv("AGENT_HOST_MODEL_SPARK_X2_5_1_7B", raising=False)
    assert resolve_model_name("spark-x2.5-1.7b") is None
    (cfg / "models.yaml").write_text(f"spark-x2.5-1.7b: {tmp_path}/bf16\n")
    assert resolve_model_name("spark-x2.5-1.7b") == (f"{tmp_path}/bf16", str(cfg / "models.yaml"))
    monkeypatch.setenv("AGENT_HOST_MODEL_SPARK_X2_5_1_7B", "/env/path")
    assert resolve_model_name("spark-x2.5-1.7b") == ("/env/path", "$AGENT_HOST_MODEL_SPARK_X2_5_1_7B")
    b = load_host_profile("x86-amx").build("bf16")
    path, where = model_location(b)
    assert path == "/env/path" and "(missing)" in where
    (tmp_path / "bf16").mkdir()
    monkeypatch.delenv("AGENT_HOST_MODEL_SPARK_X2_5_1_7B")
    assert model_location(b) == (f"{tmp_path}/bf16", f"{tmp_path}/bf16 via {cfg / 'models.yaml'}")


def test_bad_models_yaml(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_HOST_CONFIG", str(tmp_path))
    (tmp_path / "models.yaml").write_text("a: /x\nb: [1, 2]\n")
    with pytest.raises(ConfigError, match=r"models.yaml:2: b: expected a local path"):
        resolve_model_name("a")


# ------------------------------------------------------------------------ the builds CLI

def test_builds_cli_table_and_json(capsys):
    rc, out, err = _main(capsys, "builds", "--host-profile", "x86-amx")
    assert rc == 0, err
    for text in ("w4a8-amx", "int4_scaled_mm_cpu", "86.6", "80.0", "41.0", "90.0", "4.25", "4.5",
                 "2.2x", "speed pick", "fidelity pick", "embedded-default", "embedded-w4a8",
                 "embedded reference: embedded-bf16 (bf16)"):
        assert text in out, text
    rc, out, _ = _main(capsys, "builds", "--json")
    data = json.loads(out)
    assert len(data) == 7
    amx = next(p for p in data if p["id"] == "x86-amx")
    w4a8 = next(b for b in amx["builds"] if b["id"] == "w4a8-amx")
    assert w4a8["measured"]["decode_tok_s"] == 86.6 and "model_location" in w4a8
