"""Replay against a real vLLM server (the tiny random model): the reference's requests, sent
again byte for byte, get the reference's own answers back, and vLLM's prompt logprobs score the
reference's reply the same on a second pass (gap 0), from a recorded run directory."""

from __future__ import annotations

import contextlib

import pytest

from agent_host.agent.episode import run_episode
from agent_host.config.records import EpisodeIdentity
from agent_host.config.replay_log import ReplayLog
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone
from agent_host.report.replay import write_summary
from agent_host.runs.replay import replay_run
from agent_host.runs.store import RunStore
from agent_host.config.manifest import RunManifest

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def test_the_reference_replayed_on_itself_agrees_and_scores_the_same(tiny_vllm, virtual_phone, virtual_profile,
                                                                     tmp_path):
    from agent_host.serving.models import tiny_random_build

    build = tiny_random_build()
    run = tmp_path / "run"
    store = RunStore(run)
    store.create(RunManifest.model_validate({"run_id": "t", "builds": [build.model_dump(mode="json")], "tasks": []}))
    for r, key in enumerate(["wifi-on", "dark-theme-on"]):
        task = load_tasks([key])[0].model_copy(update={"max_steps": 2})
        ident = EpisodeIdentity.of(build.id, task, r, seed=r)
        rec = run_episode(task, Phone.connect(virtual_phone.serial), tiny_vllm.endpoint,
                          out_dir=store.episodes_dir / ident.episode_id, profile=virtual_profile,
                          sampling=build.sampling, identity=ident, screenshots=False)
        assert rec.outcome != "error", rec.error
        store.append(rec)

    @contextlib.contextmanager
    def served(b, **kw):          # the session's server for both passes (one vLLM at a time)
        yield tiny_vllm

    out = replay_run(run, build, [build], served=served)
    lines = ReplayLog(out).read()
    assert {x["pass"] for x in lines} == {"@reference", "tiny-random"}
    assert all("error" not in x for x in lines), [x.get("error") for x in lines]
    assert all(x["reply_tokens"] > 0 and x["logprob"] < 0 for x in lines)
    data = write_summary(out)
    c = data["candidates"]["tiny-random"]
    assert c["requests"] == len(lines) // 2 >= 2
    assert c["matches"]["same_action"] == c["requests"]          # greedy, the same server
    assert c["logprob_gap"]["n"] == c["requests"] and c["logprob_gap"]["max_abs"] == 0.0
