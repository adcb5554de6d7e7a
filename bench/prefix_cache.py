"""Prefix-cache share of a vLLM build over real episode conversations.

A small model often ends an episode at step 1, which measures nothing about reuse. Here each
task's reference solution drives the episode (a scripted policy server decides every step),
and every request the loop makes, exactly as it makes it (messages, tools, sampling), is also
sent to the vLLM build, whose usage (prompt and cached tokens) is what the step records get.
The conversation then has the shape a real one has: append-only, one observation per step.

Printed: per task, the cached share of each step's prompt tokens, and the share from step 2
on (target for the embedded default: >= 90 %).

    .venv/bin/python bench/prefix_cache.py [--build embedded-default] [--tasks wifi-on,...] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent_host.agent.episode import run_episode  # noqa: E402
from agent_host.config.hosts import embedded_builds  # noqa: E402
from agent_host.config.phones import load_phone_profile  # noqa: E402
from agent_host.config.records import StepRecord  # noqa: E402
from agent_host.config.tasks import load_tasks  # noqa: E402
from agent_host.phone.device import Phone  # noqa: E402
from agent_host.policy.script import PolicyScript  # noqa: E402
from agent_host.policy.server import PolicyServer  # noqa: E402
from agent_host.serving.server import start  # noqa: E402
from virtual_phone import adb_server  # noqa: E402
from virtual_phone.phone import VirtualPhone, free_port  # noqa: E402


class Shadowed:
    """An openai client whose answers come from `decide` (the scripted policy) and whose usage
    comes from sending the very same request to `measure` (the vLLM build)."""

    def __init__(self, decide: Any, measure: Any, model: str):
        self.decide, self.measure, self.model = decide, measure, model
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, **kw: Any) -> Any:
        answer = self.decide.chat.completions.create(**kw)
        probe = self.measure.chat.completions.create(**{**kw, "model": self.model, "max_tokens": 1})
        answer.usage = probe.usage
        return answer


def main() -> int:
    import openai

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="embedded-default", choices=sorted(embedded_builds()),
                    help="the vLLM build whose prefix cache is measured")
    ap.add_argument("--tasks", default="wifi-on,bluetooth-on,dark-theme-on,alarm-set[2]",
                    help="task ids; each runs its reference solution")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="an extra vLLM argument, e.g. --server-arg=--block-size=32 (repeatable)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()

    build = embedded_builds()[args.build].model_copy(deep=True)
    if args.server_arg:
        build = build.model_copy(update={"args": list(build.args) + args.server_arg})
    tasks = load_tasks(args.tasks.split(","), variants=("base",))
    profile = load_phone_profile("virtual")
    port = free_port()
    os.environ["ANDROID_ADB_SERVER_PORT"] = str(port)
    adb_server.ensure_server(port)
    rows = []
    with tempfile.TemporaryDirectory(prefix="agent-host-prefix-") as tmp:
        server = start(build, log_dir=Path(tmp) / "server", startup_timeout=900)
        try:
            ep = server.endpoint
            measure = openai.OpenAI(base_url=ep.base_url, api_key=ep.api_key or "none", timeout=600)
            with VirtualPhone(adb_port=port) as vphone:
                for task in tasks:
                    policy = PolicyServer(PolicyScript.from_data(
                        [s.model_dump(mode="json", exclude_none=True) if hasattr(s, "model_dump") else s
                         for s in task.solution],
                        source=task.id)).start()
                    try:
                        pe = policy.endpoint()
                        decide = openai.OpenAI(base_url=pe.base_url, api_key=pe.api_key or "none")
                        out = Path(tmp) / task.id
                        rec = run_episode(task, Phone.connect(vphone.serial), pe, out_dir=out, profile=profile,
                                          sampling=build.sampling, build_id=build.id, screenshots=False,
                                          client=Shadowed(decide, measure, ep.model))
                    finally:
                        policy.stop()
                    steps = [StepRecord.model_validate_json(x)
                             for x in (out / "steps.jsonl").read_text().splitlines()][1:]
                    rows.append({"task": task.id, "outcome": rec.outcome, "steps": len(steps),
                                 "step_shares": [s.cached_share for s in steps],
                                 "prompt_tokens": [s.usage.prompt_tokens for s in steps],
                                 "cached_tokens": [s.usage.cached_tokens for s in steps],
                                 "share_from_step_2": rec.cached_share, "source": rec.cached_share_source})
        finally:
            server.stop()
            adb_server.kill_server(port)
    later = [(s, p) for r in rows for s, p in zip(r["step_shares"][1:], r["prompt_tokens"][1:]) if s is not None]
    overall = sum(s * p for s, p in later) / sum(p for _, p in later) if later else None
    # The most an append-only conversation lets any prefix cache serve: the previous prompt
    # (what step n shares with step n-1) over this one; the rest is what the step adds.
    pairs = [(a, b) for r in rows for a, b in zip(r["prompt_tokens"], r["prompt_tokens"][1:])]
    bound = sum(a for a, _ in pairs) / sum(b for _, b in pairs) if pairs else None
    if args.json:
        print(json.dumps({"build": build.id, "server_args": args.server_arg, "tasks": rows,
                          "share_from_step_2": overall, "append_only_bound": bound}, indent=2))
        return 0
    for r in rows:
        shares = " ".join("-" if s is None else f"{s:.0%}" for s in r["step_shares"])
        print(f"{r['task']:<16} {r['outcome']:<9} steps {r['steps']:>2}  per step: {shares}  "
              f"from step 2: {'-' if r['share_from_step_2'] is None else format(r['share_from_step_2'], '.0%')}")
    print(f"{build.id}: prompt tokens served from the prefix cache from step 2 on: "
          f"{'-' if overall is None else format(overall, '.1%')} (target >= 90%: "
          f"{'met' if overall is not None and overall >= 0.9 else 'NOT met'}); the previous prompt "
          f"over this one (all an append-only prefix can share): {'-' if bound is None else format(bound, '.1%')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
