"""The teaching data: every step of the reference solutions' episodes as one chat example.

An example is one request the harness sent (its messages and tools, rebuilt exactly from the
episode's requests.json) followed by the reply that solved the step, as the assistant turn a
model would write it: the text the harness's chat template (serving/templates/chatml-tools.jinja)
renders for that call, `<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>` (the
template's trim_blocks drops the newline before the tag),
which vLLM's hermes tool parser and agent/reply.py read back as the same call.

One JSON object per line (DATA FORMAT, docs/teach.md):
  {"instance": "alarm-set[0]", "key": "alarm-set[0]@verify", "task_id": "alarm-set",
   "kind": "taught", "seed": 0, "vary": "none", "step": 1,
   "call": {"name": "tap", "arguments": {"index": 3}},
   "tools": [...], "messages": [...the request..., {"role": "assistant", "content": "..."}]}
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from agent_host.config.requests import Json, load_request_log
from agent_host.config.taught import SPLIT, TaughtSplit, instance_id

TRAIN = "train.jsonl"
HELD_OUT = "held_out.jsonl"


def assistant_text(name: str, arguments: Json) -> str:
    """The assistant turn of one call as the chat template renders a `tool_calls` message
    (tojson as transformers defines it: json.dumps, keys in order, non-ASCII kept)."""
    return ('<tool_call>\n{"name": ' + json.dumps(name, ensure_ascii=False) + ', "arguments": '
            + json.dumps(arguments, ensure_ascii=False) + "}\n</tool_call>")


def _call_of(reply: Json) -> tuple[str, Json] | None:
    calls = reply.get("tool_calls") or []
    if not calls:
        return None
    f = calls[0]["function"]
    args = f.get("arguments") or {}
    args = json.loads(args) if isinstance(args, str) else args
    return (f["name"], args) if isinstance(args, dict) else None


def episode_examples(episode_dir: Path, *, key: str, task_id: str, kind: str, seed: int = 0,
                     vary: str = "none") -> list[Json]:
    """One example per request of an episode (its requests.json), in step order."""
    log = load_request_log(episode_dir)
    out = []
    for i, sent in enumerate(log.requests):
        call = _call_of(log.reply(i))
        if call is None:   # the policy always calls; a reply without a call teaches nothing
            continue
        name, args = call
        messages = log.messages[: sent.end] + [{"role": "assistant", "content": assistant_text(name, args)}]
        out.append({"instance": instance_id(key), "key": key, "task_id": task_id, "kind": kind, "seed": seed,
                    "vary": vary, "step": sent.step, "call": {"name": name, "arguments": args},
                    "tools": log.tools, "messages": messages})
    return out


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_dataset(out: Path, examples: Iterable[Json], split: TaughtSplit) -> TaughtSplit:
    """train.jsonl (taught instances), held_out.jsonl (the others: evaluation only) and split.json
    with each data file's sha256 and line count; returns the split as written."""
    out.mkdir(parents=True, exist_ok=True)
    files = {TRAIN: (out / TRAIN).open("w", encoding="utf-8"), HELD_OUT: (out / HELD_OUT).open("w", encoding="utf-8")}
    counts = dict.fromkeys(files, 0)
    try:
        for ex in examples:
            name = TRAIN if ex["kind"] == "taught" else HELD_OUT
            files[name].write(json.dumps(ex, ensure_ascii=False, separators=(",", ":")) + "\n")
            counts[name] += 1
    finally:
        for f in files.values():
            f.close()
    split = split.model_copy(update={"data": {n: sha256_file(out / n) for n in files}, "examples": counts})
    (out / SPLIT).write_text(split.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return split


def read_examples(path: Path) -> list[Json]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
