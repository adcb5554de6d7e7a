"""The teach verbs end to end on the tiny random model: a dataset from three tasks on the virtual
phone, a few LoRA steps, the merge, and the merged checkpoint served by the real vLLM answering
a held-out request as the harness sends it."""

from __future__ import annotations

import json

import pytest

from agent_host.cli import main
from agent_host.teach.dataset import HELD_OUT, read_examples
from fixtures_vllm import vllm_missing_reason

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


def test_a_merged_adapter_is_served_by_vllm(virtual_phone, tmp_path, capsys):
    reason = vllm_missing_reason()
    if reason:
        pytest.skip(reason)
    import httpx

    from agent_host.serving.models import tiny_random_build
    from agent_host.serving.server import start

    data, adapter, merged = tmp_path / "data", tmp_path / "adapter", tmp_path / "merged"
    assert main(["teach", "dataset", "wifi-on", "alarm-set", "contact-add", "--phone", virtual_phone.serial,
                 "--out", str(data)]) == 0
    assert main(["teach", "train", str(data), "--base", "tiny-random", "--out", str(adapter),
                 "--max-steps", "3", "--batch", "2", "--seed", "1"]) == 0
    record = json.loads((adapter / "training.json").read_text())
    assert record["steps"] == 3 and len(record["loss_curve"]) == 3 and record["tokens_per_s"] > 0
    assert record["data"]["sha256"] == json.loads((data / "split.json").read_text())["data"]["train.jsonl"]
    assert (adapter / "adapter_model.safetensors").stat().st_size > 0 and (adapter / "loss.png").is_file()
    assert main(["teach", "merge", str(adapter), "--out", str(merged)]) == 0
    taught = json.loads((merged / "agent-host-taught.json").read_text())
    assert taught["base"] == "tiny-random" and len(taught["adapter_sha256"]) == 64
    capsys.readouterr()

    example = min(read_examples(data / HELD_OUT), key=lambda e: len(json.dumps(e["messages"])))   # within 4096 tokens
    build = tiny_random_build().model_copy(update={"id": "tiny-taught", "model": str(merged)})
    with start(build, log_dir=tmp_path / "logs", startup_timeout=600) as srv:
        ep = srv.endpoint
        body = {"model": ep.model, "messages": example["messages"][:-1], "tools": example["tools"],
                "tool_choice": "required", "temperature": 0, "max_tokens": 48}
        r = httpx.post(ep.base_url + "/chat/completions", json=body, timeout=300,
                       headers={"Authorization": f"Bearer {ep.api_key}"})
    assert r.status_code == 200, r.text[:500]
    answer = r.json()
    assert answer["model"] == "tiny-taught" and answer["usage"]["completion_tokens"] > 0
    # random weights: a call is not promised within max_tokens, but any call made is one of the tools
    calls = answer["choices"][0]["message"].get("tool_calls") or []
    assert all(c["function"]["name"] in {t["function"]["name"] for t in example["tools"]} for c in calls)
    assert str(merged) in (tmp_path / "logs" / "tiny-taught.server.log").read_text()
