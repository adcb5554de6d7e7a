"""An episode against a real vLLM server (the tiny random model: noise, but schema-valid tool
calls through tool_choice="required"): the loop, usage, server metrics and the context limit."""

from __future__ import annotations

import pytest

from agent_host.agent.episode import run_episode
from agent_host.config.actions import ACTIONS
from agent_host.config.records import StepRecord
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def test_episode_against_tiny_vllm(tiny_vllm, virtual_phone, virtual_profile, tmp_path):
    from agent_host.serving.models import tiny_random_build

    build = tiny_random_build()
    task = load_tasks(["wifi-on"])[0].model_copy(update={"max_steps": 3})
    rec = run_episode(task, Phone.connect(virtual_phone.serial), tiny_vllm.endpoint, out_dir=tmp_path,
                      profile=virtual_profile, sampling=build.sampling, seed=1, build_id=build.id,
                      screenshots=False)
    assert rec.outcome != "error", rec.error
    assert rec.build == "tiny-random" and rec.model == tiny_vllm.endpoint.model
    steps = [StepRecord.model_validate_json(x) for x in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert steps[0].step == 0 and len(steps) == rec.steps + 1
    assert rec.steps >= 1 and rec.usage.prompt_tokens > 1000
    for s in steps[1:]:
        assert s.raw_output, s
        assert s.usage.prompt_tokens > 0 and s.times.model > 0
        if s.action is not None:          # tool_choice=required: a schema-valid call
            assert s.action.name in ACTIONS
    # the tiny model's context window (or its 64-token reply cap, hit on both tries of a
    # step) ends the episode early as `exhausted`, without blaming the server or the model
    if rec.steps < 3 and rec.complete_step is None and rec.infeasible_step is None:
        assert rec.outcome == "exhausted" and rec.exhausted is not None, rec
        assert rec.reason and rec.reason.startswith(("context window exceeded", "reply token cap"))
    assert rec.server_metrics is not None
    assert rec.server_metrics.get("vllm:prompt_tokens_total", 0) >= rec.usage.prompt_tokens


def test_prefix_cached_share_is_recorded_and_high(tiny_vllm, virtual_phone, virtual_profile, tmp_path):
    """The same first prompt twice: the second is served from vLLM's prefix cache, and the step
    records say so (the server fills cached_tokens because the launcher asks it to)."""
    from agent_host.serving.models import tiny_random_build

    build = tiny_random_build()
    task = load_tasks(["wifi-on"])[0].model_copy(update={"max_steps": 2})
    steps = []
    for i in range(2):
        out = tmp_path / f"ep{i}"
        rec = run_episode(task, Phone.connect(virtual_phone.serial), tiny_vllm.endpoint, out_dir=out,
                          profile=virtual_profile, sampling=build.sampling, seed=1, build_id=build.id,
                          screenshots=False)
        assert rec.outcome != "error", rec.error
        steps.append([StepRecord.model_validate_json(x) for x in (out / "steps.jsonl").read_text().splitlines()][1:])
    for s in steps[0] + steps[1]:
        assert s.usage.cached_tokens is not None and s.cached_share is not None, s.usage
    second_first = steps[1][0]
    assert second_first.cached_share >= 0.9, second_first.usage
    for s in steps[0][1:] + steps[1][1:]:   # a step 2 that fit the context window extends step 1
        assert s.cached_share >= 0.6, s.usage
