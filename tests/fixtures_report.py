"""A hand-made run directory for the report tests (no phone, no server).

3 task instances x 2 builds x 3 repeats; the outcomes are chosen so every statistic can be
computed by hand (see test_report_stats.py for the arithmetic):

unit (sorted)    infeasible  w4a16 (baseline)                  w4a8
impossible       yes         infeasible_claimed, premature,    nav_fail, premature,
                             nav_fail            -> 1/3        error (2 attempts) -> 0/2
wifi-on          no          success, success, nav_fail -> 2/3 nav_fail, error then
                                                               unrecognised, nav_fail -> 0/3
wifi-on@verify   no          success, undone, success -> 2/3   success x3 -> 3/3
"""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

from agent_host.config.records import Action, EpisodeRecord, PhaseTimes, StepRecord, Usage

XSS = "<script>alert(1)</script>"
BASE, OTHER = "w4a16", "w4a8"
FILLER = "".join(f'\n[{i}] TextView "row {i}"' for i in range(4, 40))   # a screen-long observation

PLAN = {
    BASE: {
        ("impossible", "base"): ["infeasible_claimed", "premature", "nav_fail"],
        ("wifi-on", "base"): ["success", "success", "nav_fail"],
        ("wifi-on", "verify"): ["success", "undone", "success"],
    },
    OTHER: {
        ("impossible", "base"): ["nav_fail", "premature", ["error", "error"]],
        ("wifi-on", "base"): ["nav_fail", ["error", "unrecognised"], "nav_fail"],
        ("wifi-on", "verify"): ["success", "success", "success"],
    },
}


def seed_of(task: str, variant: str, repeat: int) -> int:
    return 1000 + 10 * repeat + (len(task) + (variant == "verify"))


def _goal_fields(outcome: str, verify: bool, infeasible: bool) -> dict:
    g0 = verify
    if infeasible:
        return dict(goal_initial=False, goal_first_step=None, goal_final=False)
    if outcome == "success":
        return dict(goal_initial=g0, goal_first_step=None if g0 else 2, goal_final=True, complete_step=3 if not g0 else 1)
    if outcome == "undone":
        return dict(goal_initial=g0, goal_first_step=None if g0 else 1, goal_lost_step=2, goal_final=False)
    if outcome == "unrecognised":
        return dict(goal_initial=g0, goal_first_step=None if g0 else 2, goal_final=True)
    if outcome == "premature":
        return dict(goal_initial=g0, goal_final=False, complete_step=1)
    return dict(goal_initial=g0, goal_final=g0)


def _png(path: Path, colour: tuple[int, int, int]) -> None:
    Image.new("RGB", (108, 240), colour).save(path)


def _steps(folder: Path, outcome: str, verify: bool, xss: bool) -> list[StepRecord]:
    text = XSS if xss else "Settings"
    goal_by_step = {"success": [False, True, True], "undone": [True, False, False],
                    "unrecognised": [False, True, True]}.get(outcome, [verify] * 3)
    if verify and outcome == "success":
        goal_by_step = [True, True, True]
    steps = []
    actions = [Action(name="tap", args={"index": 3}, point=(54, 60)),
               Action(name="swipe", args={"direction": "up"}, point=(54, 200), to=(54, 40)),
               Action(name="task_complete", args={"reason": text})]
    for i in range(1, 4):
        name = f"step-{i:03d}.png"
        _png(folder / name, (30 * i, 120, 200))
        steps.append(StepRecord(
            step=i, observation=f'[0] FrameLayout\n[3] TextView "{text}" clickable' + FILLER, package="com.android.settings",
            screenshot=name, usage=Usage(prompt_tokens=1000 * i, completion_tokens=20),
            raw_output={"content": f"</script><b>{text}</b>", "tool_calls": [{"name": actions[i - 1].name}]},
            action=actions[i - 1], times=PhaseTimes(observe=0.1, model=0.5, act=0.05, settle=0.2, judge=0.01),
            goal=goal_by_step[i - 1], check_detail={"value": text}))
    _png(folder / "step-000.png", (0, 0, 0))
    return steps


def make_run(root: Path, *, xss: bool = True, planned: int | None = 18) -> Path:
    run = root / "run-fixture"
    (run / "episodes").mkdir(parents=True)
    (run / "servers").mkdir()
    manifest = {
        "run_id": "run-fixture", "created_at": "2026-11-30T12:00:00+00:00", "command": ["agent-host", "run"],
        "agent_host_version": "0.1.0", "versions": {"vllm": None, "adbutils": "2.12.0"},
        "git": {"revision": "abc123", "dirty": True},
        "builds": [{"id": BASE, "weight_path": "w4a16-wna16", "server": "vllm", "env": {"VLLM_CPU_INT4_W4A8": "0"}},
                   {"id": OTHER, "weight_path": "w4a8-amx", "server": "vllm", "env": {"VLLM_CPU_INT4_W4A8": "1"}}],
        "tasks": [], "task_files": {"tasks/wifi-on.yaml": "deadbeef"}, "repeats": 3, "seed": 7,
        "phones": [{"serial": "vphone-1", "model": XSS if xss else "VirtualPhone"}],
        "episodes_planned": planned, "some_future_key": {"x": 1},
    }
    (run / "manifest.json").write_text(json.dumps(manifest))
    lines = []
    for build, tasks in PLAN.items():
        for (task, variant), outs in tasks.items():
            infeasible = task == "impossible"
            for repeat, spec in enumerate(outs):
                attempts = spec if isinstance(spec, list) else [spec]
                eid = f"{build}__{task}__{variant}__r{repeat}"
                for attempt, outcome in enumerate(attempts, 1):
                    goal = _goal_fields(outcome, variant == "verify", infeasible) if outcome != "error" else {}
                    rec = EpisodeRecord(
                        episode_id=eid, run_id="run-fixture", build=build, model="m", task=task,
                        variant=variant, infeasible=infeasible, repeat=repeat,
                        seed=seed_of(task, variant, repeat), phone="vphone-1", attempt=attempt,
                        outcome=outcome, error="adb: device offline" if outcome == "error" else None,
                        steps=3, max_steps=10, wall_s=3.0 if build == BASE else 6.0,
                        times=PhaseTimes(model=1.5 if build == BASE else 3.0),
                        usage=Usage(prompt_tokens=6000, completion_tokens=60),
                        server_metrics=({"vllm:generation_tokens_total{model_name=\"m\"}": 60.0,
                                         "vllm:inter_token_latency_seconds_sum{model_name=\"m\"}": 1.2,
                                         "vllm:inter_token_latency_seconds_count{model_name=\"m\"}": 60.0,
                                         "vllm:time_to_first_token_seconds_sum": 0.3,
                                         "vllm:time_to_first_token_seconds_count": 3.0}
                                        if build == BASE else None),
                        reason=XSS if xss and outcome in ("success", "premature") else None,
                        infeasible_step=2 if outcome == "infeasible_claimed" else None,
                        **goal)
                    lines.append(rec.model_dump_json())
                    if outcome != "error" or attempt == len(attempts):
                        folder = run / "episodes" / eid
                        folder.mkdir(exist_ok=True)
                        steps = _steps(folder, outcome, variant == "verify", xss)
                        (folder / "steps.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in steps))
                        (folder / "episode.json").write_text(rec.model_dump_json())
    (run / "episodes.jsonl").write_text("".join(line + "\n" for line in lines))
    (run / "servers" / f"{BASE}.log").write_text("ok\n")
    return run


def viewer_of(html_path: Path) -> dict:
    """report.html's viewer data with each episode's page (trajectories/NNNN.js beside it)
    read back into the episode, as the viewer has it once the page is loaded."""
    import re
    html = Path(html_path).read_text()
    data = json.loads(re.search(r'<script type="application/json" id="viewer-data">(.*?)</script>', html, re.S).group(1))
    index = (Path(html_path).parent / data["index"]).read_text()     # the episodes' rows, beside it
    assert index.startswith("agentHostIndex(") and index.endswith(");\n"), index[:80]
    data["episodes"] = json.loads(index[len("agentHostIndex("):-3])
    for n, ep in enumerate(data["episodes"]):
        if "page" not in ep:      # an episode without steps has no page
            ep.update(steps=[], extra_shots=[], shots=[], start_state=None)
            continue
        text = (Path(html_path).parent / ep["page"]).read_text()
        prefix = f"agentHostEpisode({n}, "
        assert text.startswith(prefix) and text.endswith(");\n"), text[:80]
        ep.update(json.loads(text[len(prefix):-3]))
    return data


def lengthen_episode(run: Path, episode_id: str, n: int) -> None:
    """Give one episode of a fixture run `n` steps (a screen-long observation each, every
    tenth with a screenshot of its own), as a model that never stops would leave it."""
    folder = run / "episodes" / episode_id
    steps = []
    for i in range(1, n + 1):
        if i % 10 == 0:
            _png(folder / f"step-{i:03d}.png", (i % 256, (i // 256) % 256, 99))
        steps.append(StepRecord(
            step=i, observation=f'[0] FrameLayout\n[3] TextView "long step {i}"' + FILLER,
            screenshot=f"step-{i:03d}.png", raw_output={"content": f"step {i}"},
            action=Action(name="tap", args={"index": 3}, point=(54, 60)), goal=False))
    (folder / "steps.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in steps))


# A collateral episode (config/outcome.py): the asked-for event is there, and so is a stray under
# a near-miss name; the model called task_complete. Its steps carry the goal's halves and the
# judge's diff of the task's scope; the episode folder the state after setup.
STRAY = "title=Team ofsite, dtstart=2026-12-01 09:00"
ASKED_ROW = "title=Team offsite, dtstart=2026-12-01 09:00"
STATE = {"kinds": {"event": {"added": [ASKED_ROW, STRAY], "removed": []},
                   "file": {"added": [], "removed": ["f /sdcard/Download/Taxes 2026"]}},
         "expected": {"event": {"added": 1, "removed": 0}, "contact": {"added": 0, "removed": 0}}}
# as the agent writes it (agent/episode.py): the scope, and each kind's rows as its reader parsed them
START_STATE = {"scope": {"kinds": ["event", "file"], "folders": ["/sdcard/Download"]},
               "state": {"event": [{"title": "Dentist", "dtstart": "2026-12-03 15:00"}],
                         "file": [{"type": "f", "path": "/sdcard/Download/Taxes 2026"},
                                  {"type": "d", "path": "/sdcard/Download"}]}}


def add_collateral_episode(run: Path, build: str = BASE, variant: str = "base", task: str = "event-add") -> str:
    """Append one collateral episode of `task` to a fixture run (its record, steps and
    start_state.json); returns its id."""
    from agent_host.config.outcome import label
    asked, clean = [False, False, True, True], [True, True, False, False]
    goals = [a and c for a, c in zip(asked, clean)]
    j = label(goals, complete_step=3, asked=asked, clean=clean)
    assert j.outcome == "collateral"
    eid = f"{build}__{task}__{variant}__r0"
    rec = EpisodeRecord(episode_id=eid, run_id="run-fixture", build=build, model="m", task=task, task_id=task,
                        variant=variant, seed=1, phone="vphone-1", steps=3, max_steps=10, wall_s=3.0,
                        reason="added the event", **j.as_dict())
    folder = run / "episodes" / eid
    folder.mkdir(parents=True)
    actions = [Action(name="tap", args={"index": 2}, point=(54, 60)),
               Action(name="type_text", args={"text": "Team ofsite"}, point=(54, 80)),
               Action(name="task_complete", args={"reason": "added the event"})]
    steps = [StepRecord(step=t, observation=f'[2] Button "step {t}"', action=actions[t - 1], goal=goals[t],
                        asked=asked[t], clean=clean[t],
                        check_detail={"value": asked[t], **({"state": STATE} if not clean[t] else {})})
             for t in range(1, 4)]
    (folder / "steps.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in steps))
    (folder / "episode.json").write_text(rec.model_dump_json())
    (folder / "start_state.json").write_text(json.dumps(START_STATE))
    with (run / "episodes.jsonl").open("a") as f:
        f.write(rec.model_dump_json() + "\n")
    return eid
