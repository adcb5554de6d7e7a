"""The tiny vision-language model (serving/tiny_vlm.py) on a real vLLM CPU server: a screenshot
of the virtual phone sent as an OpenAI image_url part goes through vLLM's image path (the
Idefics3 processor's tiles become prompt tokens) and a tool call comes back parsed. The answers
are noise; the plumbing is what is tested.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openai import BadRequestError, OpenAI

from agent_host.config.requests import png_data_url
from agent_host.serving import tiny_vlm as vlm
from virtual_phone.fs import VirtualFS
from virtual_phone.hierarchy import SCREEN_H, SCREEN_W
from virtual_phone.world import World

from fixtures_tools import SCHEMAS, TAP, TASK_COMPLETE

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
jsonschema = pytest.importorskip("jsonschema", reason="jsonschema comes with the vllm extra")

TOOLS = [TAP, TASK_COMPLETE]
SYSTEM = {"role": "system", "content": "You operate an Android phone. Call exactly one tool."}
# The launcher as the virtual phone draws it (1080x2400): 2 tiles of 224 px and a global view
TILES = 3


@pytest.fixture(scope="module")
def screenshot() -> str:
    return png_data_url(World(VirtualFS()).screenshot_png())


def _user(text: str, *images: str) -> dict:
    parts: list[dict] = [{"type": "image_url", "image_url": {"url": url}} for url in images]
    return {"role": "user", "content": parts + [{"type": "text", "text": text}]}


def _client(ep) -> OpenAI:
    return OpenAI(base_url=ep.base_url, api_key=ep.api_key, max_retries=0, timeout=120)


def _ask(ep, messages: list[dict], **kw):
    return _client(ep).chat.completions.create(model=ep.model, messages=messages, temperature=0, **kw)


def test_tiny_vlm_is_built_offline_with_an_image_processor(monkeypatch):
    """Made here in seconds: an Idefics3 config, image tokens in the tokenizer, a processor that
    loads with AutoProcessor (no download) and tiles a phone screenshot as vLLM will."""
    pytest.importorskip("transformers", reason="the vllm extra builds models")
    monkeypatch.delenv("AGENT_HOST_CACHE", raising=False)   # the shared cache, as the fixture's
    from PIL import Image
    from transformers import AutoProcessor

    from agent_host.serving.models import MARKER, ensure_model

    path = ensure_model("tiny-vlm")
    cfg = json.loads((path / "config.json").read_text())
    assert cfg["architectures"] == ["Idefics3ForConditionalGeneration"]
    assert cfg["vision_config"]["image_size"] == vlm.TILE and cfg["text_config"]["head_dim"] == 32
    facts = json.loads((path / MARKER).read_text())
    assert facts["parameters"] < 400_000 and facts["tokenizer_vocab"] <= cfg["text_config"]["vocab_size"]
    proc = AutoProcessor.from_pretrained(path)
    assert cfg["image_token_id"] == proc.tokenizer.convert_tokens_to_ids("<image>") < facts["tokenizer_vocab"]
    out = proc(text=["<image>Open the clock"], images=[[Image.new("RGB", (SCREEN_W, SCREEN_H))]])
    n = sum(1 for t in out["input_ids"][0] if t == cfg["image_token_id"])
    assert n == TILES * vlm.tokens_per_tile()


def test_the_server_lists_the_vision_build(tiny_vlm):
    ep = tiny_vlm.endpoint
    assert [m.id for m in _client(ep).models.list().data] == ["tiny-vlm"]
    assert '--limit-mm-per-prompt' in tiny_vlm.spec.argv


def test_a_screenshot_goes_through_the_image_path(tiny_vlm, screenshot):
    ep = tiny_vlm.endpoint
    without = _ask(ep, [SYSTEM, _user("Goal: open the clock.")], max_tokens=8)
    with_image = _ask(ep, [SYSTEM, _user("Goal: open the clock.", screenshot)], max_tokens=8)
    assert isinstance(with_image.choices[0].message.content, str)
    assert with_image.usage.completion_tokens >= 1
    extra = with_image.usage.prompt_tokens - without.usage.prompt_tokens
    # each tile's and the global view's <image> tokens, plus their markers
    assert TILES * vlm.tokens_per_tile() <= extra <= TILES * (vlm.tokens_per_tile() + 6)
    two = _ask(ep, [SYSTEM, _user("Before.", screenshot), {"role": "assistant", "content": "ok"},
                    _user("Now.", screenshot)], max_tokens=4)
    assert two.usage.prompt_tokens > with_image.usage.prompt_tokens + TILES * vlm.tokens_per_tile()


def test_a_tool_call_comes_back_parsed_with_a_screenshot(tiny_vlm, screenshot):
    """tool_choice="required" as the agent asks (its structured outputs keep a random model's
    call schema-valid), the same tools as the text builds."""
    ep = tiny_vlm.endpoint
    r = _ask(ep, [SYSTEM, _user("Goal: open the clock.", screenshot)], tools=TOOLS,
             tool_choice="required", parallel_tool_calls=False, max_tokens=64)
    calls = r.choices[0].message.tool_calls
    assert calls and len(calls) == 1, r.choices[0].message
    jsonschema.validate(json.loads(calls[0].function.arguments), SCHEMAS[calls[0].function.name])
    again = _ask(ep, [SYSTEM, _user("Goal: open the clock.", screenshot)], tools=TOOLS,
                 tool_choice="required", parallel_tool_calls=False, max_tokens=64)
    assert again.choices[0].message.tool_calls[0].function == calls[0].function   # greedy: the same


def test_the_builds_hermes_parser_reads_a_call_after_a_screenshot(tiny_vlm, screenshot):
    """tool_choice="auto": the reply is text, read by the build's tool_call_parser (hermes). A
    random model never writes <tool_call> by itself, so its text is held to that format."""
    ep = tiny_vlm.endpoint
    assert tiny_vlm.build.tool_call_parser == "hermes"
    form = r'<tool_call>\n\{"name": "tap", "arguments": \{"index": [0-9]\}\}\n</tool_call>'
    r = _ask(ep, [SYSTEM, _user("Goal: open the clock.", screenshot)], tools=TOOLS, tool_choice="auto",
             max_tokens=64, extra_body={"structured_outputs": {"regex": form}})
    calls = r.choices[0].message.tool_calls
    assert calls and calls[0].function.name == "tap", r.choices[0].message
    jsonschema.validate(json.loads(calls[0].function.arguments), SCHEMAS["tap"])
    assert not r.choices[0].message.content    # the whole reply was the call


def test_more_images_than_the_build_allows_are_refused(tiny_vlm, screenshot):
    ep = tiny_vlm.endpoint
    with pytest.raises(BadRequestError, match="image"):
        _ask(ep, [SYSTEM, _user("Too many.", *[screenshot] * 5)], max_tokens=4)


def test_the_bf16_twin_answers_the_same_request(tmp_path, screenshot):
    """tiny-vlm-bf16: a second build of the same vision model (a replay's candidate)."""
    from agent_host.config.hosts import embedded_build
    from agent_host.serving.server import start

    build = embedded_build("tiny-vlm-bf16")
    assert build is not None and build.model == "tiny-vlm"
    with start(build, log_dir=Path(tmp_path), startup_timeout=600) as server:
        r = _ask(server.endpoint, [SYSTEM, _user("Goal: open the clock.", screenshot)], tools=TOOLS,
                 tool_choice="required", parallel_tool_calls=False, max_tokens=64)
    calls = r.choices[0].message.tool_calls
    assert calls and len(calls) == 1
    jsonschema.validate(json.loads(calls[0].function.arguments), SCHEMAS[calls[0].function.name])
