"""How `teach train` encodes the data: the loss on the replies only, and an episode packed into
one sequence teaches exactly the replies its steps teach one by one."""

from __future__ import annotations

import json

import pytest

from agent_host.teach.dataset import assistant_text
from agent_host.teach.train import IGNORE, encode, encode_episode, episodes

TOOLS = [{"type": "function", "function": {"name": "tap", "parameters": {"type": "object"}}}]
CALLS = [("tap", {"index": 4}), ("tap", {"index": 9}), ("task_complete", {"reason": "done"})]


def _episode(key: str = "wifi-on") -> list[dict]:
    """Three steps as the harness sends them: each request is the previous one, its reply (as
    tool_calls) and the tool result and next screen."""
    history = [{"role": "system", "content": "You operate a phone."},
               {"role": "user", "content": "Goal: Turn on Wi-Fi.\n\nStep 1. Current screen:\n[0] Settings"}]
    out = []
    for step, (name, args) in enumerate(CALLS, 1):
        out.append({"key": key, "seed": 0, "vary": "none", "step": step, "tools": TOOLS, "call": {"name": name, "arguments": args},
                    "messages": [*history, {"role": "assistant", "content": assistant_text(name, args)}]})
        history = [*history, {"role": "assistant", "content": None, "tool_calls": [
                       {"id": f"c{step}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]},
                   {"role": "tool", "tool_call_id": f"c{step}", "content": "ok"},
                   {"role": "user", "content": f"Step {step + 1}. Current screen:\n[{step}] Wi-Fi switch"}]
    return out


@pytest.fixture(scope="module")
def tok():
    from transformers import AutoTokenizer

    from agent_host.serving.models import ensure_model
    return AutoTokenizer.from_pretrained(ensure_model("tiny-random"))


@pytest.fixture(scope="module")
def template():
    from agent_host.serving.models import TEMPLATE
    return TEMPLATE.read_text()


def _targets(enc) -> list[int]:
    return [x for x in enc.labels if x != IGNORE]


def test_the_loss_is_on_the_reply_only(tok, template):
    e = encode(tok, _episode()[0], template)
    text = tok.decode(_targets(e))
    assert text == assistant_text(*CALLS[0]) + "<|im_end|>\n"
    assert e.labels[: len(e.ids) - len(_targets(e))] == [IGNORE] * (len(e.ids) - len(_targets(e)))


def test_an_episode_in_one_sequence_teaches_what_its_steps_teach(tok, template):
    steps = _episode()
    packed = encode_episode(tok, steps, template, max_tokens=8192)
    assert len(packed) == 1
    one_by_one = [t for s in steps for t in _targets(encode(tok, s, template))]
    assert _targets(packed[0]) == one_by_one
    assert len(packed[0].ids) < sum(len(encode(tok, s, template).ids) for s in steps)
    # the last step's own sequence is a suffix-aligned view: the packed sequence ends as it does
    last = encode(tok, steps[-1], template)
    assert packed[0].ids[-len(_targets(last)):] == _targets(last)


def test_a_long_episode_is_cut_into_sequences_that_fit(tok, template):
    """Over max_tokens, the next step starts a sequence of its own from its whole request; a
    step whose request alone is too long stays over (train leaves it out and counts it)."""
    steps = _episode()
    whole = encode_episode(tok, steps, template, max_tokens=8192)[0]
    last = len(encode(tok, steps[-1], template).ids)
    assert last == len(whole.ids)        # the last request holds the whole conversation
    parts = encode_episode(tok, steps, template, max_tokens=len(encode(tok, steps[1], template).ids))
    assert [len(p.ids) for p in parts][:2] == [len(encode(tok, steps[1], template).ids), last]
    assert [t for p in parts for t in _targets(p)] == _targets(whole)


def test_examples_are_grouped_by_episode_in_step_order():
    a, b = _episode("wifi-on"), _episode("alarm-set[1]")
    groups = episodes([b[2], a[1], a[0], b[0], a[2], b[1]])
    assert [[e["step"] for e in g] for g in groups] == [[1, 2, 3], [1, 2, 3]]
    assert {g[0]["key"] for g in groups} == {"wifi-on", "alarm-set[1]"}


def test_recomputing_activations_changes_no_step_of_the_training(tmp_path):
    """Checkpointing (the default since a full-context sequence held 19 GB and was killed on a
    24 GB machine) saves memory only: the same losses and the same adapter as without it."""
    import torch
    from safetensors.torch import load_file

    from agent_host.teach.train import TrainOptions, train

    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(e) + "\n" for k in ("wifi-on", "dnd-on") for e in _episode(k)))
    out = {}
    for on in (True, False):
        opts = TrainOptions(base="tiny-random", max_steps=2, batch=2, bf16=False, checkpointing=on, rank=4, alpha=8)
        record = train(data, tmp_path / f"a{on}", opts)
        assert record["hyperparameters"]["checkpointing"] is on
        out[on] = ([c["loss"] for c in record["loss_curve"]], load_file(tmp_path / f"a{on}" / "adapter_model.safetensors"))
    assert out[True][0] == pytest.approx(out[False][0], rel=1e-5)
    for name, w in out[True][1].items():
        assert torch.allclose(w, out[False][1][name], atol=1e-6), name
