"""The observation spec and coordinate frame (pure): image sizes, the frame's bounds and its
mapping back to the phone; the worked vision host profile of docs/builds.md validates."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from agent_host.config.builds import Build, HostProfile
from agent_host.config.observation import NORMALIZED, Frame, ObservationSpec, image_size

DOC = Path(__file__).resolve().parents[2] / "docs" / "builds.md"


def test_image_sizes_shrink_never_grow_and_keep_the_aspect():
    assert image_size(1080, 2400, ObservationSpec(mode="screenshot")) == (1080, 2400)
    assert image_size(1080, 2400, ObservationSpec(mode="screenshot", long_side=600)) == (270, 600)
    assert image_size(1080, 2400, ObservationSpec(mode="screenshot", long_side=4800)) == (1080, 2400)
    w, h = image_size(1080, 2400, ObservationSpec(mode="screenshot", max_pixels=1003520))
    assert w * h <= 1003520 and abs(w / h - 0.45) < 0.01


@pytest.mark.parametrize("spec", [ObservationSpec(mode="screenshot", long_side=s) for s in (2400, 1000, 333)]
                         + [ObservationSpec(coordinates="normalized")])
def test_a_point_on_an_element_maps_into_it_at_every_size(spec):
    frame = Frame.of(spec, 1080, 2400)
    for l, t, r, b in [(0, 264, 1080, 429), (940, 600, 1040, 700), (0, 2310, 1080, 2400), (30, 30, 60, 60)]:
        x, y = frame.from_phone((l + r) // 2, (t + b) // 2)
        px, py = frame.to_phone(x, y)
        assert l <= px < r and t <= py < b, (frame, (x, y), (px, py))


def test_the_frame_bounds_and_defaults():
    assert Frame.of(ObservationSpec(), 1080, 2400) is None                 # a text build: no points
    px = Frame.of(ObservationSpec(coordinates="pixels"), 1080, 2400)
    assert (px.width, px.height) == (1080, 2400) and px.outside(1079, 2399) is None
    assert px.outside(1080, 0) and px.outside(0, -1)
    shot = Frame.of(ObservationSpec(mode="som", long_side=600), 1080, 2400)
    assert shot.kind == "pixels" and (shot.width, shot.height) == (270, 600)
    assert shot.to_phone(269, 599) == (1078, 2398) and shot.to_phone(0, 0) == (2, 2)
    norm = Frame.of(ObservationSpec(mode="screenshot", coordinates="normalized"), 1080, 2400)
    assert norm.outside(NORMALIZED, NORMALIZED) is None and norm.outside(1001, 0)
    assert norm.to_phone(1000, 1000) == (1079, 2399) and norm.to_phone(500, 500) == (540, 1200)


def test_the_worked_vision_profile_validates():
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("### Vision builds"):text.index("### Naming a build")]
    block = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    profile = HostProfile.model_validate(yaml.safe_load(block))
    specs = [b.observation_spec() for b in profile.builds]
    assert [s.mode for s in specs] == ["som", "som"] and all(s.frame == "pixels" for s in specs)
    with pytest.raises(ValueError):
        Build.model_validate({"id": "x", "weight_path": "bf16", "server": "vllm", "observation": "video"})


def test_a_blind_replay_plays_recorded_points_in_the_recorded_frame(tmp_path):
    from agent_host.config.hosts import find_build
    from agent_host.runs import blind_replay as br

    seen = {"observation": "som", "long_side": 600, "history_images": 1}
    hosts = br.write_policy(tmp_path, br.Recording("ref", {"wifi-on": [{"raw": {"name": "tap_xy",
                                                                                "arguments": {"x": 1, "y": 2}}}]},
                                                   seen=seen))
    build = find_build(br.BUILD_ID, hosts)
    assert build.observation_spec() == ObservationSpec(mode="som", long_side=600)
    plain = find_build(br.BUILD_ID, br.write_policy(tmp_path / "t", br.Recording("ref", {})))
    assert plain.observation_spec() == ObservationSpec()


def test_the_episode_verbs_flags_are_a_builds_fields():
    import argparse

    from agent_host.cli.episode import observation
    from agent_host.errors import UserError

    args = argparse.Namespace(observation="screenshot", coordinates="normalized", max_pixels=None, long_side=600,
                              history_images=2)
    assert observation(args) == ObservationSpec(mode="screenshot", coordinates="normalized", long_side=600,
                                                history_images=2)
    with pytest.raises(UserError, match=r"^--history-images: Input should be less than or equal to 32$"):
        observation(argparse.Namespace(**{**vars(args), "history_images": 99}))
