"""Coordinate actions and vision observations through the real stack: the virtual phone (adb
server, adbutils, uiautomator2), a real HTTP policy server answering tap_xy/swipe_xy, the
openai client; requests.json with its images rebuilt byte for byte."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent_host.agent.episode import run_episode
from agent_host.config.observation import Frame, ObservationSpec, image_size
from agent_host.config.records import StepRecord
from agent_host.config.requests import DROPPED_IMAGE, REQUESTS, body_sha256, load_request_log
from agent_host.config.tasks import load_tasks
from agent_host.errors import UserError
from agent_host.phone.device import Phone

PHONE = (1080, 2400)     # the virtual phone's screen


def _task(key: str):
    return load_tasks([key], ["base"])[0]


@pytest.fixture
def episode(virtual_phone, policy_server, virtual_profile, tmp_path):
    """episode(task_key, script, **run_episode kwargs) -> (record, server, out_dir)."""
    counter = iter(range(1000))

    def run(key, script, **kw):
        server = policy_server(script)
        out = tmp_path / f"ep{next(counter)}"
        kw.setdefault("screenshots", False)
        rec = run_episode(_task(key), Phone.connect(virtual_phone.serial), server.endpoint(), out_dir=out,
                          profile=virtual_profile, **kw)
        return rec, server, out

    return run


def _steps(out: Path) -> list[StepRecord]:
    return [StepRecord.model_validate_json(line) for line in (out / "steps.jsonl").read_text().splitlines()]


def _as_points(steps: list[StepRecord], frame: Frame) -> list[dict]:
    """A played index solution rewritten as coordinate actions at the points it touched."""
    out: list[dict] = []
    for s in steps[1:]:
        a = s.action
        assert a is not None
        if a.name in ("tap", "long_press"):
            x, y = frame.from_phone(*a.point)
            out.append({f"{a.name}_xy": {"x": x, "y": y}})
        elif a.name == "swipe":
            (x1, y1), (x2, y2) = frame.from_phone(*a.point), frame.from_phone(*a.to)
            out.append({"swipe_xy": {"x1": x1, "y1": y1, "x2": x2, "y2": y2}})
        else:
            out.append({a.name: a.args})
    return out


def _solution_points(episode, key: str, spec: ObservationSpec) -> list[dict]:
    rec, _, out = episode(key, _task(key).solution)
    assert rec.outcome == "success", rec
    return _as_points(_steps(out), Frame.of(spec, *PHONE))


@pytest.mark.parametrize("frame", ["pixels", "normalized"])
def test_a_coordinate_policy_solves_and_overdoes_in_both_frames(episode, frame):
    spec = ObservationSpec(coordinates=frame)           # a text build that names points
    script = _solution_points(episode, "wifi-on", spec)
    assert any("tap_xy" in item for item in script)
    rec, server, out = episode("wifi-on", script, observation=spec)
    assert rec.outcome == "success", rec
    tools = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert {"tap_xy", "long_press_xy", "swipe_xy"} <= set(tools)
    system = server.requests[0]["messages"][0]["content"]
    assert ("normalized: 0-1000" if frame == "normalized" else "pixels of the 1080x2400 screen") in system
    # where each tap landed is the phone's pixel, drawn in the viewer
    taps = [s.action for s in _steps(out)[1:] if s.action and s.action.name == "tap_xy"]
    assert all(0 <= a.point[0] < 1080 and 0 <= a.point[1] < 2400 for a in taps)

    # over-done: the switch tapped twice (on, then off again), then complete
    switch = script[-2]
    assert "tap_xy" in switch
    rec, _, _ = episode("wifi-on", script[:-1] + [switch] + script[-1:], observation=spec)
    assert rec.outcome == "undone", rec
    # premature: complete before the switch
    rec, _, _ = episode("wifi-on", script[:-2] + script[-1:], observation=spec)
    assert rec.outcome == "premature", rec


def test_a_swipe_xy_scrolls_like_the_index_swipe(episode):
    spec = ObservationSpec(coordinates="normalized")
    script = [{"open_app": {"name": "settings"}},
              {"swipe_xy": {"x1": 500, "y1": 800, "x2": 500, "y2": 300, "duration": 0.3}},
              {"task_complete": {"reason": "scrolled"}}]
    rec, _, out = episode("wifi-on", script, observation=spec)
    steps = _steps(out)
    assert steps[2].action.name == "swipe_xy" and steps[2].action.point == (540, 1920)
    assert steps[2].action.to == (540, 720)
    assert '"Network & internet"' in steps[2].observation, steps[2].observation
    assert '"Network & internet"' not in steps[3].observation, steps[3].observation   # scrolled past


def test_off_screen_points_and_unoffered_tools_are_the_models_errors(episode):
    spec = ObservationSpec(coordinates="pixels")
    rec, _, out = episode("wifi-on", [{"tap_xy": {"x": 1080, "y": 5}}, {"task_complete": {"reason": "x"}}],
                          observation=spec)
    step = _steps(out)[1]
    assert step.retry_error == "point (1080, 5) is off the screen: x must be 0-1079 and y 0-2399 " \
                               "(pixels of the 1080x2400 screen)"
    # a text build is not offered them: the unknown-tool error, naming the tools it has
    rec, _, out = episode("wifi-on", [{"tap_xy": {"x": 10, "y": 10}}, {"task_complete": {"reason": "x"}}])
    err = _steps(out)[1].retry_error
    assert err.startswith("unknown tool 'tap_xy'; the tools are: tap, long_press, ") and "_xy" not in err[20:]


@pytest.mark.parametrize("long_side", [2400, 1000, 333])
def test_a_tap_lands_on_the_same_element_at_every_image_size(episode, long_side):
    # "Network & internet" on the Settings home, where the index solution tapped it
    spec = ObservationSpec(mode="screenshot", long_side=long_side)
    rec, _, out = episode("wifi-on", _task("wifi-on").solution)
    row = _steps(out)[2].action.point
    frame = Frame.of(spec, *PHONE)
    assert (frame.width, frame.height) == image_size(*PHONE, spec)
    x, y = frame.from_phone(*row)
    script = [{"open_app": {"name": "settings"}}, {"tap_xy": {"x": x, "y": y}},
              {"task_complete": {"reason": "there"}}]
    rec, server, out = episode("wifi-on", script, observation=spec)
    steps = _steps(out)
    assert steps[2].action.point == frame.to_phone(x, y)
    assert "Calls & SMS" in steps[3].observation, steps[3].observation[:300]   # Network & internet opened
    # the text part names the image's size and carries no element list
    first = server.requests[0]["messages"][1]["content"]
    assert first[0]["text"].endswith(f"(the screenshot, {frame.width}x{frame.height} pixels)")
    assert first[1]["image_url"]["url"].startswith("data:image/png;base64,")


@pytest.mark.parametrize("mode", ["som", "screenshot+text"])
def test_image_prompts_rebuild_byte_for_byte_from_the_stored_images(episode, mode):
    spec = ObservationSpec(mode=mode, max_pixels=300_000, history_images=1)
    rec, server, out = episode("wifi-on", _task("wifi-on").solution, observation=spec)
    assert rec.outcome == "success", rec
    log = load_request_log(out)
    assert log.history_images == 1 and len(log.requests) == len(server.requests) == 5
    for i, received in enumerate(server.requests):
        assert log.body(i) == received
        assert body_sha256(received) == log.requests[i].sha256
    # at most one image per prompt; the earlier ones are a short text
    last = server.requests[-1]["messages"]
    urls = [p for m in last if isinstance(m["content"], list) for p in m["content"] if p["type"] == "image_url"]
    assert len(urls) == 1
    assert sum(p.get("text") == DROPPED_IMAGE for m in last if isinstance(m["content"], list)
               for p in m["content"]) == 4
    # each image stored once by content; the step records name them
    images = sorted((out / "images").iterdir())
    steps = _steps(out)
    assert {s.image for s in steps[1:]} == {f"images/{p.name}" for p in images}
    assert "image" not in json.loads((out / "steps.jsonl").read_text().splitlines()[0])
    if mode == "screenshot+text":
        assert "[0]" in server.requests[0]["messages"][1]["content"][0]["text"]
    # a changed image byte is caught
    victim = images[0]
    victim.chmod(0o644)
    victim.write_bytes(victim.read_bytes() + b"\0")
    with pytest.raises(UserError, match="does not hash to its name"):
        load_request_log(out)


def test_a_text_builds_requests_file_has_no_image_field(episode):
    rec, _, out = episode("wifi-on", _task("wifi-on").solution)
    data = json.loads((out / REQUESTS).read_text())
    assert "history_images" not in data and not (out / "images").exists()
    # no image of any kind; the usage's count of image tokens is null (none were sent)
    assert re.search(r'image(?!_tokens":null)', (out / "steps.jsonl").read_text()) is None


def test_a_task_solution_may_tap_by_the_phones_pixels(episode, virtual_phone, virtual_profile, tmp_path):
    from agent_host.cli.tasks_check import check

    pixels = _solution_points(episode, "wifi-on", ObservationSpec(coordinates="pixels"))
    source = (Path(__file__).resolve().parents[2] / "tasks" / "wifi-on.yaml").read_text()
    head = source.split("solution:", 1)[0]
    (tmp_path / "wifi-on-xy.yaml").write_text(
        head.replace("id: wifi-on", "id: wifi-on-xy") + "solution:\n"
        + "".join(f"  - {json.dumps(item)}\n" for item in pixels))
    task = load_tasks([str(tmp_path / "wifi-on-xy.yaml")], ["base"])[0]
    ((_, rec, _),) = check([task], virtual_phone.serial, out_root=tmp_path / "check", profile=virtual_profile)
    assert rec.outcome == "success", rec
