"""`agent-host teach dataset` on a virtual phone, and the data's format: each example is the
request the harness sent, rebuilt from requests.json, and the solving call as the assistant turn
the chat template renders and agent/reply.py reads back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_host.agent.reply import reply_action, text_tool_call
from agent_host.cli import main
from agent_host.config.requests import load_request_log
from agent_host.config.taught import load_split
from agent_host.teach.dataset import HELD_OUT, TRAIN, assistant_text, read_examples, sha256_file

TASKS = ["wifi-on", "alarm-set", "contact-add"]   # seed 0: taught, a held-out parameter set, a held-out task


@pytest.mark.parametrize("name,args", [("tap", {"index": 3}), ("type_text", {"index": 2, "text": "Café «6»", "submit": True}),
                                       ("task_complete", {"reason": "the goal already holds"}), ("press_back", {})])
def test_the_assistant_turn_reads_back_as_the_same_call(name, args):
    text = assistant_text(name, args)
    assert text.startswith("<tool_call>\n") and text.endswith("\n</tool_call>")
    assert reply_action({"role": "assistant", "content": text}) == (name, args)
    assert text_tool_call(text) == (name, args)


def test_the_assistant_turn_renders_as_the_template_renders_a_call():
    """The content form and the tool_calls form render to the same text (the template's
    trim_blocks drops the newline before <tool_call>), so the model is taught what vLLM
    shows it of its own past calls."""
    from transformers import AutoTokenizer

    from agent_host.serving.models import TEMPLATE, ensure_model

    tok = AutoTokenizer.from_pretrained(ensure_model("tiny-random"))
    tools = [{"type": "function", "function": {"name": "tap", "parameters": {"type": "object"}}}]
    head = [{"role": "system", "content": "S"}, {"role": "user", "content": "Goal: x"}]
    args = {"index": 7}
    as_text = head + [{"role": "assistant", "content": assistant_text("tap", args)}]
    as_call = head + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "tap", "arguments": json.dumps(args)}}]}]
    render = lambda m: tok.apply_chat_template(m, tools=tools, tokenize=False, chat_template=TEMPLATE.read_text())  # noqa: E731
    assert render(as_text) == render(as_call)


def make_dataset(phone_serial: str, out: Path, *extra: str) -> int:
    return main(["teach", "dataset", *TASKS, "--phone", phone_serial, "--out", str(out), *extra])


def test_the_dataset_holds_each_step_of_each_solution_split_by_instance(virtual_phone, tmp_path, capsys):
    out = tmp_path / "data"
    assert make_dataset(virtual_phone.serial, out) == 0
    split = load_split(out / "split.json")
    assert split.instances == {"alarm-set[0]": "held-out-params", "alarm-set[1]": "taught", "alarm-set[2]": "taught",
                               "contact-add": "held-out-task", "wifi-on": "taught"}
    for name in (TRAIN, HELD_OUT):
        assert split.data[name] == sha256_file(out / name)
        assert split.examples[name] == len(read_examples(out / name))
    train, held = read_examples(out / TRAIN), read_examples(out / HELD_OUT)
    assert {e["kind"] for e in train} == {"taught"}
    assert {e["kind"] for e in held} == {"held-out-params", "held-out-task"}
    assert {e["key"] for e in train} == {"wifi-on", "wifi-on@verify", "alarm-set[1]", "alarm-set[1]@verify",
                                         "alarm-set[2]", "alarm-set[2]@verify"}
    for ex in train + held:
        *request, reply = ex["messages"]
        assert reply["role"] == "assistant" and reply_action(reply) == (ex["call"]["name"], ex["call"]["arguments"])
        assert split.kind_of(ex["key"]) == ex["kind"]
    # each example is a request as it was sent: its messages rebuild from the episode's requests.json
    log = load_request_log(out / "episodes" / "none" / "wifi-on")
    wifi = [e for e in train if e["key"] == "wifi-on"]
    assert [e["step"] for e in wifi] == [r.step for r in log.requests]
    for i, ex in enumerate(wifi):
        assert ex["messages"][:-1] == log.body(i)["messages"] and ex["tools"] == log.tools
    assert [e for e in train if e["key"] == "wifi-on@verify"][0]["call"]["name"] == "task_complete"
    assert "instances: 3 taught, 1 held-out-params, 1 held-out-task" in capsys.readouterr().out


def test_a_dataset_is_written_into_a_new_directory_only(tmp_path, capsys):
    out = tmp_path / "data"
    out.mkdir()
    (out / "x").write_text("")
    assert main(["teach", "dataset", "wifi-on", "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == f"error: --out {out}: not empty (a dataset is written whole, into a new directory)"
    assert main(["teach", "dataset", "wifi-on", "--out", str(tmp_path / "new"), "--held-out-tasks", "1"]) == 2
    assert "--held-out-tasks must be in [0, 1)" in capsys.readouterr().err
