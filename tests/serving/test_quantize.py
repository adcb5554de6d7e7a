"""`agent-host quantize`: checks before any work (one-line errors, nothing left behind), and the
real thing: GPTQ of the tiny random model in the quantize environment, served by vLLM CPU
through its 4-bit kernel."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent_host.serving import quantize as q
from fixtures_cli import agent_host, assert_user_error, tree

TINY_CONFIG = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
               "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 32, "num_hidden_layers": 2,
               "vocab_size": 2048, "tie_word_embeddings": True}


def fake_model(root: Path, **over) -> Path:
    d = root / "model"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({**TINY_CONFIG, **over}))
    (d / "model.safetensors").write_bytes(b"not really")
    return d


def test_group_size_default_is_the_largest_dividing_every_input():
    assert q.choose_group_size([576, 1536])[0] == 64            # SmolLM2: 128 does not divide 576
    assert q.choose_group_size([64, 128])[0] == 64
    assert q.choose_group_size([2048, 8192])[0] == 128
    assert q.choose_group_size([96])[0] == 32
    g, why = q.choose_group_size([80])
    assert g is None and "80" in why


def test_plan_of_the_tiny_model_fits_the_kernel(tmp_path):
    """The tiny model tests/fixtures_vllm.py serves: every linear size a multiple of 32."""
    p = q.plan(fake_model(tmp_path), q.Options())
    assert p.group_size == 64 and "largest of 128/64/32" in p.group_reason
    assert all(i % 32 == 0 and o % 32 == 0 for i, o in p.linear.values())
    assert p.tied and "kept in 16 bits" in p.notes[0]
    assert "untied" in q.plan(p.model, q.Options(head="quantize")).notes[0]


@pytest.mark.parametrize("case, args, names", [
    ("nodir", [], ["no such model directory"]),
    ("nosafetensors", [], ["no *.safetensors"]),
    ("arch", [], ["GPT2LMHeadModel is not one agent-host can quantize"]),
    ("sizes", [], ["multiples of 32", "o_proj"]),
    ("undivided", ["--group-size", "128"], ["--group-size 128 does not divide", "64"]),
    ("odd", ["--group-size", "33"], ["even group size"]),
    ("exists", [], ["already exists"]),
    ("calib", ["--calibration", "CALIB"], ["calib.jsonl:2: not JSON"]),
])
def test_bad_input_is_one_line_and_leaves_nothing(tmp_path, case, args, names):
    work = tmp_path / "work"
    work.mkdir()
    model = work / "none"
    if case != "nodir":
        over = {"arch": {"architectures": ["GPT2LMHeadModel"]},
                "sizes": {"num_attention_heads": 3, "head_dim": 20}}.get(case, {})
        model = fake_model(work, **over)
        if case == "nosafetensors":
            (model / "model.safetensors").unlink()
    out = work / "out"
    if case == "exists":
        out.mkdir()
    calib = work / "calib.jsonl"
    calib.write_text('{"text": "ok"}\n{broken\n')
    args = [str(calib) if a == "CALIB" else a for a in args]
    before = tree(work)
    res = agent_host("quantize", str(model), str(out), *args, cwd=tmp_path, tmpdir=tmp_path / "tmp")
    assert_user_error(res, *names)
    assert tree(work) == before and tree(tmp_path / "tmp") == []


def test_missing_quantize_environment_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_HOST_QUANTIZE_PYTHON", str(tmp_path / "nope" / "python"))
    with pytest.raises(q.UserError, match="quantize environment is not set up"):
        q.quantize(fake_model(tmp_path), tmp_path / "out", q.Options(), [{"text": "x"}])
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------- the real thing (slow)

def quantize_env_reason() -> str | None:
    return q.quantize_env_missing()


needs_quantize_env = pytest.mark.skipif(quantize_env_reason() is not None,
                                        reason=str(quantize_env_reason()))


@needs_quantize_env
@pytest.mark.slow
def test_worker_failure_leaves_nothing(tmp_path):
    """llmcompressor failing (weights that are not safetensors) is one line and no output."""
    model = fake_model(tmp_path)
    with pytest.raises(q.UserError, match=r"quantizing .* failed: .+"):
        q.quantize(model, tmp_path / "out", q.Options(), [{"text": "hello"}])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


@needs_quantize_env
@pytest.mark.slow
@pytest.mark.vllm
def test_quantize_tiny_and_serve_with_the_4bit_kernel(tmp_path, capsys):
    """GPTQ W4A16 of the tiny random model (symmetric, head kept; asymmetric with the head
    untied and quantized), each served by vLLM CPU through CPUWNA16LinearKernel; and W8A8
    through CPUInt8ScaledMMLinearKernel."""
    import platform

    from fixtures_vllm import vllm_missing_reason

    if vllm_missing_reason():
        pytest.skip(vllm_missing_reason())
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip(f"vLLM's CPU 4-bit kernel (CPUWNA16LinearKernel) is measured on x86-64 only, "
                    f"not {platform.machine()}")
    import httpx

    from agent_host.cli import main
    from agent_host.serving.models import ensure_model, tiny_random_build
    from agent_host.serving.server import start

    tiny = ensure_model("tiny-random")
    outs = {}
    for name, extra in (("sym", []), ("asym-head", ["--asymmetric", "--head", "quantize"]),
                        ("w8a8", ["--scheme", "w8a8", "--samples", "2"])):
        out = tmp_path / name
        if name == "sym":  # through the API, to see the progress events
            from agent_host.cli.quantize import agent_samples

            seen: list[tuple[int, int, str]] = []
            facts = q.quantize(tiny, out, q.Options(seed=3), agent_samples(),
                               progress=lambda d, t, w: seen.append((d, t, w)))
            assert seen[0] == (0, 14, "loading") and seen[-1] == (14, 14, "saving")
            gptq = [d for d, _, w in seen if w == "GPTQ"]
            assert gptq == sorted(gptq) and gptq[-1] == 14      # 2 layers x 7 linear
        else:
            assert main(["quantize", str(tiny), str(out), "--json", "--seed", "3"] + extra) == 0
            facts = json.loads(capsys.readouterr().out)
        assert facts == json.loads((out / q.QUANT_FACTS).read_text())
        assert facts["weights"] == ("w8a8" if name == "w8a8" else "w4a16")
        assert facts["group_size"] == (None if name == "w8a8" else 64)
        # all 12 where this CPU calibrates in bf16, FP32_SAMPLES where in fp32; --samples 2 for w8a8
        taken = 2 if name == "w8a8" else q.Options().samples or 12
        assert facts["calibration"]["samples"] == taken and len(facts["calibration"]["sha256"]) == 64
        assert facts["calibration"]["seed"] == 3
        assert facts["versions"]["llmcompressor"] and facts["seconds"] > 0
        cfg = json.loads((out / "config.json").read_text())
        assert cfg["quantization_config"]["format"] == ("int-quantized" if name == "w8a8" else "pack-quantized")
        outs[name] = (out, facts, cfg)
    assert outs["sym"][1]["symmetric"] is True and outs["asym-head"][1]["symmetric"] is False
    assert outs["sym"][1]["calibration"]["sha256"] == outs["asym-head"][1]["calibration"]["sha256"]
    assert outs["sym"][1]["head"]["quantized"] is False and outs["sym"][2]["tie_word_embeddings"] is True
    head = outs["asym-head"]
    assert head[1]["head"] == {"quantized": True, "untied": True, "tied_in_source": True,
                               "notes": head[1]["head"]["notes"]}
    assert head[2]["tie_word_embeddings"] is False
    assert "lm_head" not in head[2]["quantization_config"]["ignore"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]   # no temporary left

    from agent_host.config.hosts import hardware_problems
    from agent_host.config.machine import cpu_dtype, read_host_facts, vllm_cpu_library

    base = tiny_random_build()
    args = list(base.args)
    args[args.index("--dtype") + 1] = cpu_dtype(read_host_facts())[0]   # bf16 only where it is fast
    ops = {"sym": ["cpu_gemm_wna16"], "asym-head": ["cpu_gemm_wna16"], "w8a8": ["onednn_scaled_mm"]}
    served = 0
    for name, (out, _, _) in outs.items():
        build = base.model_copy(update={"id": f"tiny-{name}", "model": str(out), "args": args,
                                        "requires_vllm_ops": ops[name]})
        if hardware_problems(build):   # this tier's kernel library lacks the op: refused, not started
            with pytest.raises(q.UserError, match=f"vLLM's {vllm_cpu_library(read_host_facts())} library"):
                start(build, log_dir=tmp_path / "logs", startup_timeout=600)
            continue
        served += 1
        with start(build, log_dir=tmp_path / "logs", startup_timeout=600) as srv:
            ep = srv.endpoint
            r = httpx.post(ep.base_url + "/chat/completions", timeout=120,
                           headers={"Authorization": f"Bearer {ep.api_key}"},
                           json={"model": ep.model, "max_tokens": 8, "temperature": 0,
                                 "messages": [{"role": "user", "content": "open settings"}]})
            assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] > 0
        log = (tmp_path / "logs" / f"tiny-{name}.server.log").read_text()
        assert ("Selected CPUInt8ScaledMMLinearKernel for CompressedTensorsW8A8Int8" if name == "w8a8"
                else "Using CPUWNA16LinearKernel for CompressedTensorsWNA16") in log
    assert served    # W8A8's oneDNN int8 ops are in every x86 tier's library
    shutil.rmtree(tmp_path / "logs", ignore_errors=True)


def test_shipped_calibration_is_what_the_agent_sends():
    """The embedded builds calibrate on serving/data/calibration.jsonl (serving cannot import
    the agent); it must stay equal to the agent's own first turns."""
    from agent_host.cli.quantize import agent_samples
    from agent_host.serving.models import calibration_samples

    assert calibration_samples() == json.loads(json.dumps(agent_samples()))


def test_quantized_models_are_keyed_by_their_inputs(monkeypatch, tmp_path):
    from agent_host.serving import models

    keys = {n: models._quantized_key(n) for n in models.QUANTIZED}
    assert len(set(keys.values())) == len(keys)
    assert keys == {n: models._quantized_key(n) for n in models.QUANTIZED}      # stable
    calib = tmp_path / "c.jsonl"
    calib.write_text(models.CALIBRATION.read_text() + '{"text": "one more"}\n')
    monkeypatch.setattr(models, "CALIBRATION", calib)
    assert models._quantized_key("smollm2-135m-w4a16") != keys["smollm2-135m-w4a16"]


def _needs_quantizing(build) -> bool:
    """Whether the build's model is made by GPTQ (a dequantized one from its GPTQ model)."""
    from agent_host.serving import models

    return models.DEQUANTIZED.get(build.model, build.model) in models.QUANTIZED


def test_a_quantized_build_without_the_quantize_environment_is_refused_up_front(tmp_path, monkeypatch,
                                                                                each_tier):
    """On every vLLM CPU tier, each quantized build that tier serves: W8A8 and the dequantized
    W4A16 everywhere, the 4-bit W4A16 where the tier's library has its kernel (AVX2's refuses
    it first, for the kernel: test_tiers)."""
    from agent_host.config import machine
    from agent_host.config.hosts import embedded_builds, find_build, hardware_problems
    from agent_host.serving.launch import preflight

    monkeypatch.setenv("AGENT_HOST_CACHE", str(tmp_path / "cache"))          # nothing made yet
    monkeypatch.setenv("AGENT_HOST_QUANTIZE_PYTHON", str(tmp_path / "none"))
    served = [b for b in embedded_builds().values() if _needs_quantizing(b) and not hardware_problems(b)]
    ids = {b.id for b in served}
    ops = machine.vllm_library_ops(machine.vllm_cpu_library(each_tier))    # None: vLLM not installed
    assert {"embedded-w8a8", "embedded-w4a16-dequant"} <= ids
    assert ("embedded-w4a16" in ids) == (ops is None or "cpu_gemm_wna16" in ops)
    for b in served:
        with pytest.raises(q.UserError, match=f"{b.id}: model {b.model} is not made yet and "
                                              "the quantize environment is not set up"):
            preflight(find_build(b.id))
    preflight(find_build("embedded-bf16"))        # made from the package, no quantize environment


def test_ensure_model_clears_temporaries_of_a_killed_build(tmp_path, monkeypatch):
    """A build killed by SIGTERM leaves its temporary directory; the next build of that model
    removes it (under the model's lock, so it is nobody's work in progress)."""
    from agent_host.serving import models

    monkeypatch.setenv("AGENT_HOST_CACHE", str(tmp_path))
    monkeypatch.setitem(models.KNOWN, "fake", ("v1", lambda out, progress=None: {"source": "test"}))
    stale = models.models_dir() / ".fake-v1.abcd1234"
    (stale / "checkpoint").mkdir(parents=True)
    other = models.models_dir() / ".fake-v10.keep"
    other.mkdir()
    path = models.ensure_model("fake")
    assert models.is_made("fake") and path.name == "fake-v1"
    assert not stale.exists() and other.exists()


def test_the_worker_runs_without_tqdm_bars(tmp_path, monkeypatch):
    """Its progress comes as JSON lines; tqdm's carriage returns only filled its stderr log,
    whose last line is a failure's message."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho '{\"event\": \"error\", \"message\": \"TQDM_DISABLE='\"$TQDM_DISABLE\"'\"}'\n"
                    "exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("AGENT_HOST_QUANTIZE_PYTHON", str(fake))
    with pytest.raises(q.UserError, match="TQDM_DISABLE=1"):
        q.quantize(fake_model(tmp_path), tmp_path / "out", q.Options(dtype="float32"), [{"text": "hello"}])


def test_a_model_build_draws_no_tqdm_bar(tmp_path, monkeypatch):
    """transformers' GGUF conversion draws a tqdm bar that disable_progress_bar does not reach:
    off a terminal its carriage returns made one 3 KB line of a redirected `make demo`. The
    build's own progress is the step's bar or plain lines."""
    import io

    from tqdm.auto import tqdm

    from agent_host.serving import models

    drawn = io.StringIO()

    def build(out, progress=None):
        for _ in tqdm(range(50), desc="Converting and de-quantizing GGUF tensors...", file=drawn):
            pass
        return {"source": "test"}

    monkeypatch.setenv("AGENT_HOST_CACHE", str(tmp_path))
    monkeypatch.setitem(models.KNOWN, "fake", ("v1", build))
    models.ensure_model("fake")
    assert drawn.getvalue() == ""
    for _ in tqdm(range(3), file=drawn):   # and tqdm is itself again afterwards
        pass
    assert "\r" in drawn.getvalue()


def test_the_calibration_is_sized_by_its_dtype_unless_given():
    assert q.Options(dtype="bfloat16").samples is None                 # all the samples
    assert q.Options(dtype="float32").samples == q.FP32_SAMPLES < 12     # fp32 calibrates a few
    assert q.Options(dtype="float32", samples=7).samples == 7
    assert q.Options(dtype="bfloat16", samples=None).samples is None
