"""Builds that see the screen, end to end through the real vLLM server (issue 33): a `screenshot`
build and a `som` build of the tiny vision model play four tasks on the virtual phone through
`agent-host run`; every step's reply is a parsed call, every episode has a label (none runs out
of context), the screenshots it was sent are in its folder and referenced from requests.json, the
viewer data names them; `agent-host replay` then re-sends the screenshot build's requests, images
and all, to the model's bf16 twin and reports per-step agreement. The model's answers are noise:
the plumbing is what is checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_host.cli import main
from agent_host.config.records import iter_episode_log, read_step_log
from agent_host.config.requests import load_request_log
from fixtures_report import viewer_of

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

TASKS = "wifi-on,bluetooth-on,dark-theme-on,auto-rotate-off"
LABELS = {"success", "premature", "undone", "collateral", "unrecognised", "infeasible_claimed", "nav_fail",
          "exhausted"}
TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"


def short_tasks(folder: Path) -> str:
    """The four tasks with each step budget cut to its solution's length (4-6 steps, not 10-14):
    a random model spends every step it is given, and the plumbing is the same at step 5 as
    at step 12."""
    import yaml

    folder.mkdir()
    for name in TASKS.split(","):
        task = yaml.safe_load((TASKS_DIR / f"{name}.yaml").read_text())
        task["max_steps"] = len(task["solution"])
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    return str(folder)


def test_screenshot_and_som_builds_run_label_keep_their_images_and_replay(virtual_phone, tmp_path, capsys):
    from fixtures_vllm import vllm_missing_reason
    if vllm_missing_reason():
        pytest.skip(vllm_missing_reason())
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text("id: vlm\ndescription: the tiny vision model's builds\nhardware_class: x86-amx\n"
                     "embedded: [tiny-vlm, tiny-vlm-som, tiny-vlm-bf16]\nbuilds: []\n")
    run = tmp_path / "run"
    assert main(["run", "--builds", "tiny-vlm,tiny-vlm-som", "--host-profile", str(hosts),
                 "--tasks", short_tasks(tmp_path / "tasks"), "--phones", virtual_phone.serial,
                 "--vary", "none", "--out", str(run), "--quiet"]) == 0
    recs = list(iter_episode_log(run / "episodes.jsonl"))
    assert sorted(r.build for r in recs) == ["tiny-vlm"] * 4 + ["tiny-vlm-som"] * 4
    calls = {"tiny-vlm": 0, "tiny-vlm-som": 0}
    for r in recs:
        # a label each: no error, and not `exhausted` (its 16384-token window holds a whole episode)
        assert r.outcome in LABELS - {"exhausted"}, (r.episode_id, r.outcome, r.error)
        ep = run / "episodes" / r.episode_id
        steps = [s for s in read_step_log(ep) if s.step > 0]
        assert steps, (r.episode_id, r.outcome)
        # every step's reply is a tool call the build's parser read (its index or point may still
        # miss: a random model's error, fed back, with the step's action None)
        assert all((s.raw_output or {}).get("tool_calls") for s in steps), r.episode_id
        calls[r.build] += sum(1 for s in steps if s.action is not None)
        log = load_request_log(ep)               # rebuilt byte for byte, each image checked by its hash
        images = sorted((ep / "images").glob("*.png"))
        assert log.requests and images, (r.episode_id, r.outcome, r.reason, len(log.requests))
        assert 0 < (r.usage.image_tokens or 0) < r.usage.prompt_tokens   # vLLM counted the images' share
        sent = json.dumps(log.model_dump(mode="json"))
        assert all(p.stem in sent for p in images)            # referenced by content, stored once
    assert all(n >= 1 for n in calls.values()), calls   # and some were valid actions, performed
    speed = {b["build"]: b["speed"] for b in json.loads((run / "results.json").read_text())["builds"]}
    assert all(0 < sp["image_tokens_per_step"] < sp["prompt_tokens_per_step"] for sp in speed.values()), speed
    assert "image tok / step" in (run / "report.md").read_text()
    # the viewer shows each step's sent image (the screenshot shrunk to 448 px long, marks and all
    # for som) beside the phone's own
    for ep in viewer_of(run / "report.html")["episodes"]:
        sent = [s["sent"]["shot"] for s in ep["steps"] if s.get("sent")]
        assert sent and all(max(x["w"], x["h"]) == 448 for x in sent), ep.get("id")
        assert all(ep["shots"][x["i"]].startswith("data:image/") for x in sent)

    capsys.readouterr()
    assert main(["replay", str(run), "--reference", "tiny-vlm", "--builds", "tiny-vlm-bf16",
                 "--host-profile", str(hosts)]) == 0
    summary = json.loads((run / "replay" / "tiny-vlm" / "replay.json").read_text())
    cand = summary["candidates"]["tiny-vlm-bf16"]
    assert cand["requests"] >= 4 and cand["errors"] == 0          # every recorded step asked again
    assert 0 <= cand["agreement"]["mean"] <= 1                      # per-step agreement, tasks as the unit
