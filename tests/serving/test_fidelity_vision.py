"""The fidelity probe of a build that sees the screen (issue 33): its prompts are screens the
virtual phone draws, shown as the reference's observation shows them (the image part as a data
URL; the text part the shipped prompts' wording), asked of the real vLLM serving the tiny vision
model and its bf16 twin."""

from __future__ import annotations

import base64
import io
import json

import pytest

from agent_host.cli import main
from agent_host.cli.fidelity import SCREENS, screenshot_prompts
from agent_host.config.observation import ObservationSpec
from agent_host.serving.fidelity import load_prompts


@pytest.mark.parametrize("mode", ["screenshot", "som", "screenshot+text"])
def test_each_screen_is_shown_as_the_reference_sees_it(mode):
    from PIL import Image

    spec = ObservationSpec(mode=mode, long_side=448)
    prompts = screenshot_prompts(load_prompts(), spec)
    assert [pid for pid, _ in prompts] == [s[0] for s in SCREENS]
    for _, msgs in prompts:
        assert msgs[0]["role"] == "system"
        text, image = msgs[-1]["content"]
        assert text["type"] == "text" and "Goal: " in text["text"]
        url = image["image_url"]["url"]
        assert url.startswith("data:image/png;base64,")
        img = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        assert max(img.size) == 448                       # shrunk as the build declares
        # the screenshot mode names only the image; the others carry the text observation too
        assert ("[0] " in text["text"]) == (mode != "screenshot")


@pytest.mark.vllm
@pytest.mark.slow
def test_fidelity_of_the_tiny_vision_model_asks_screenshots(tmp_path, capsys):
    from fixtures_vllm import vllm_missing_reason
    if vllm_missing_reason():
        pytest.skip(vllm_missing_reason())
    out = tmp_path / "fid"
    rc = main(["fidelity", "--builds", "tiny-vlm-bf16", "--reference", "tiny-vlm", "--max-tokens", "16",
               "--out", str(out), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0, data
    assert data["prompts"] == [s[0] for s in SCREENS]
    [b] = data["builds"]
    assert b["build"] == "tiny-vlm-bf16" and not b.get("error") and len(b["prompts"]) == len(SCREENS)
