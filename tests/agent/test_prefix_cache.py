"""Prefix reuse: each step's share of prompt tokens served from the server's prefix cache is in
the step and episode records (from the responses' cached-token counts, else /metrics)."""

from __future__ import annotations

import pytest

from agent_host.agent.episode import episode_cached_share, run_episode
from agent_host.config.records import StepRecord, Usage
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone


def _steps(out) -> list[StepRecord]:
    return [StepRecord.model_validate_json(x) for x in (out / "steps.jsonl").read_text().splitlines()]


def test_cached_share_in_step_and_episode_records(virtual_phone, policy_server, virtual_profile, tmp_path):
    task = load_tasks(["wifi-on"], ["base"])[0]
    server = policy_server(task.solution)     # counts cached tokens from the prefix shared with earlier requests
    rec = run_episode(task, Phone.connect(virtual_phone.serial), server.endpoint(), out_dir=tmp_path,
                      profile=virtual_profile, screenshots=False)
    steps = _steps(tmp_path)[1:]
    assert len(steps) == 5
    for s in steps:
        assert s.cached_share == pytest.approx(s.usage.cached_tokens / s.usage.prompt_tokens, abs=1e-4)
    # append-only: from step 2 on, every request extends the last, so most of it is cached
    assert all(s.cached_share > 0.6 for s in steps[1:]), [s.cached_share for s in steps]
    later = steps[1:]
    assert rec.cached_share_source == "usage"
    assert rec.cached_share == pytest.approx(
        sum(s.usage.cached_tokens for s in later) / sum(s.usage.prompt_tokens for s in later), abs=1e-4)


def test_episode_share_falls_back_to_the_metrics_delta():
    metrics = {"vllm:prefix_cache_queries_total": 4000.0, "vllm:prefix_cache_hits_total": 3000.0}
    assert episode_cached_share(Usage(prompt_tokens=900), metrics) == (0.75, "metrics")
    assert episode_cached_share(Usage(prompt_tokens=900, cached_tokens=810), metrics) == (0.9, "usage")
    assert episode_cached_share(Usage(), None) == (None, None)
