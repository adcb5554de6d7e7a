"""Tool schemas, call validation, text tool calls, the prompt, swipe geometry (pure parts)."""

from __future__ import annotations

import pytest

from agent_host.agent.perform import swipe_points
from agent_host.agent.reply import parse_reply, text_tool_call
from agent_host.agent.prompt import system_prompt
from agent_host.agent.tools import TOOL_NAMES, ToolError, tool_schemas, validate_call

APPS = ["settings", "clock", "contacts"]


def _walk(schema):
    yield schema
    for v in (schema.get("properties") or {}).values():
        yield from _walk(v)


def test_schemas_are_bounded():
    # a text build is offered what it always was; a build with a coordinate frame every tool
    assert [t["function"]["name"] for t in tool_schemas(APPS)] == [n for n in TOOL_NAMES if not n.endswith("_xy")]
    tools = tool_schemas(APPS, coordinates=True)
    assert [t["function"]["name"] for t in tools] == list(TOOL_NAMES)
    for t in tools:
        params = t["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        for s in list(_walk(params))[1:]:
            if s["type"] == "integer" or s["type"] == "number":
                assert "minimum" in s and "maximum" in s
            if s["type"] == "string":
                assert "maxLength" in s or "enum" in s
    open_app = next(t for t in tools if t["function"]["name"] == "open_app")
    assert open_app["function"]["parameters"]["properties"]["name"]["enum"] == sorted(APPS)
    swipe = next(t for t in tools if t["function"]["name"] == "swipe")["function"]["parameters"]
    assert swipe["required"] == ["direction"]


@pytest.mark.parametrize("name, args, want", [
    ("tap", '{"index": 3}', {"index": 3}),
    ("tap", '{"index": "3"}', {"index": 3}),
    ("tap", {"index": 3.0, "reason": "extra is dropped"}, {"index": 3}),
    ("type_text", '{"index": 2, "text": "Ann"}', {"index": 2, "text": "Ann", "submit": False}),
    ("type_text", '{"index": 2, "text": "", "submit": "true"}', {"index": 2, "text": "", "submit": True}),
    ("swipe", '{"direction": "UP"}', {"direction": "up"}),
    ("swipe", '{"direction": "left", "index": 2}', {"direction": "left", "index": 2}),
    ("press_back", "", {}),
    ("press_home", "null", {}),
    ("open_app", '{"name": "Settings"}', {"name": "settings"}),
    ("wait", '{"seconds": 2}', {"seconds": 2.0}),
    ("wait", "{}", {"seconds": 1.0}),
    ("task_complete", '{"reason": "done"}', {"reason": "done"}),
    ("task_infeasible", "{}", {"reason": ""}),
])
def test_valid_calls(name, args, want):
    assert validate_call(name, args, indices=[0, 1, 2, 3], apps=APPS) == want


@pytest.mark.parametrize("name, args, msg", [
    ("fly", "{}", "unknown tool"),
    ("tap", "{index: 3", "not valid JSON"),
    ("tap", "[3]", "JSON object"),
    ("tap", "{}", "needs the argument 'index'"),
    ("tap", '{"index": 7}', "no element with index 7"),
    ("tap", '{"index": true}', "integer"),
    ("tap", '{"index": -1}', "between 0"),
    ("type_text", '{"index": 1}', "'text'"),
    ("type_text", '{"index": 1, "text": "' + "x" * 501 + '"}', "longer than 500"),
    ("swipe", '{"direction": "diagonal"}', "direction must be"),
    ("open_app", '{"name": "calculator"}', "unknown app"),
    ("wait", '{"seconds": 60}', "between 0 and 10"),
])
def test_invalid_calls(name, args, msg):
    with pytest.raises(ToolError, match=msg):
        validate_call(name, args, indices=[0, 1, 2, 3], apps=APPS)


def test_text_tool_calls():
    assert text_tool_call('<tool_call>\n{"name": "tap", "arguments": {"index": 4}}\n</tool_call>') == ("tap", {"index": 4})
    assert text_tool_call('I will tap it. {"name": "press_back", "arguments": {}}') == ("press_back", {})
    assert text_tool_call('{"name": "wait", "parameters": {"seconds": 1}}') == ("wait", {"seconds": 1})
    assert text_tool_call("I think the answer is {not json}") is None
    assert text_tool_call(None) is None


def test_parse_reply_prefers_tool_calls_and_reports_errors():
    msg = {"role": "assistant", "content": "ignored",
           "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "tap", "arguments": '{"index": 1}'}}]}
    p = parse_reply(msg, indices=[0, 1], apps=APPS)
    assert (p.name, p.args, p.call_id, p.error) == ("tap", {"index": 1}, "c1", None)
    p = parse_reply({"role": "assistant", "content": '{"name": "tap", "arguments": {"index": 1}}'}, indices=[1], apps=APPS)
    assert p.name == "tap" and p.call_id is None and p.error is None
    p = parse_reply({"role": "assistant", "content": "Let me think."}, indices=[1], apps=APPS)
    assert p.error == "the reply has no tool call"
    typing = {"role": "assistant", "content": '{"name": "type_text", "arguments": {"index": 1, "text": "a"}}'}
    assert "not a text field" in parse_reply(typing, indices=[0, 1], apps=APPS, editable={0}).error
    assert parse_reply(typing, indices=[0, 1], apps=APPS, editable={1}).error is None


def test_prompt_describes_every_tool_and_the_apps():
    text = system_prompt(APPS, frame="x and y are pixels of the 1080x2400 screen")
    for name in TOOL_NAMES:
        assert f"{name}(" in text
    assert "- points: x and y are pixels" in text
    plain = system_prompt(APPS)    # a text build's prompt names no point action
    assert "_xy(" not in plain and "points:" not in plain
    assert "clock, contacts, settings" in text and "[index]" in text and "checked=on" in text


def test_swipe_geometry():
    b = (0, 400, 1080, 2000)
    (x1, y1), (x2, y2) = swipe_points("up", b)
    assert x1 == x2 == 540 and y1 > y2 and 400 < y2 < y1 < 2000
    (x1, y1), (x2, y2) = swipe_points("left", b)
    assert y1 == y2 and x1 > x2
    (x1, y1), (x2, y2) = swipe_points("right", (100, 900, 1000, 1000), slider=True)
    assert (x1, y1) == (550, 950) and x2 >= 997 and y2 == 950


def test_one_bound_for_wait_everywhere():
    """The wait action had three bounds: 60 s in task solutions, 10 s from the model and none in
    policy scripts; now the one in config/actions.py."""
    from pydantic import ValidationError

    from agent_host.config.actions import MAX_WAIT_S, script_model
    from agent_host.config.tasks import _ACTIONS
    from agent_host.policy.script import parse_item

    wait = next(t for t in tool_schemas(APPS) if t["function"]["name"] == "wait")
    assert wait["function"]["parameters"]["properties"]["seconds"]["maximum"] == MAX_WAIT_S == 10
    assert validate_call("wait", {"seconds": 10}) == {"seconds": 10.0}
    for too_long in (10.5, 30, 60):
        with pytest.raises(ToolError):
            validate_call("wait", {"seconds": too_long})
        with pytest.raises(ValidationError):
            script_model("wait").model_validate({"seconds": too_long})
        with pytest.raises(ValidationError):
            _ACTIONS.validate_python([{"wait": {"seconds": too_long}}])
        with pytest.raises(ValueError):
            parse_item({"wait": {"seconds": too_long}})


def test_every_action_is_performed_described_and_prompted():
    from agent_host.agent.perform import PERFORM
    from agent_host.config.actions import ACTIONS

    assert set(PERFORM) == set(ACTIONS)
    text = system_prompt(APPS)
    assert "answer(text)" in text and "answer" in TOOL_NAMES
    assert validate_call("answer", {"text": "4821"}) == {"text": "4821"}
    with pytest.raises(ToolError, match="needs the argument 'text'"):
        validate_call("answer", {})
