"""Replay: every request the reference build sent in a run, sent again to each candidate build.

Each reference episode's `requests.json` (config/requests.py) rebuilds its requests byte for
byte; each goes to a candidate greedily (temperature 0, the recorded seed, tools, tool choice
and token cap; only `model` names the candidate's served model), with the episode's own
request headers (the policy server's task header). The candidate's reply is compared with the
reference's (`messages[end]`): the same action (tool and canonical arguments; the free-text
`reason` of task_complete / task_infeasible aside), the same tool only, or different.

With vLLM builds it also scores the reference's own reply under the candidate: the request
with the reference's reply appended as the last message, sent with `prompt_logprobs: 0` and
`add_generation_prompt: false`; the log-probabilities of the prompt tokens past the request's
own prompt (its `usage.prompt_tokens`) are the reply's. The reference build scores its reply
too (pass `@reference`, a server of its own); the report's log-prob gap is the difference.

Every answer is one line of `RUN/replay/<reference>/replay.jsonl`, appended with one
O_APPEND write and fsynced: a kill -9 loses at most the line in flight, a second replay
resumes with what is missing, and the run lock (runs/lock.py) refuses a second writer.

Roles, from the reference's point of view at the step (goal as judged before the step's action):
`navigation` (the goal did not hold), `completion` (it held and the reference called
task_complete), `after_goal` (it held and the reference did something else), `infeasible`
(the reference called task_infeasible).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import httpx

from agent_host.agent.reply import reply_action
from agent_host.config.records import EpisodeRecord, read_step_log
from agent_host.config.replay_log import REFERENCE_PASS, ReplayLog, replay_dir
from agent_host.config.requests import RequestLog, calls_schema, load_request_log, with_json_call
from agent_host.errors import UserError
from agent_host.runs.lock import RunLock
from agent_host.runs.store import RunStore

if TYPE_CHECKING:
    from agent_host.config.builds import Build
    from agent_host.serving.endpoint import Endpoint
    from agent_host.serving.server import ManagedServer

FREE_TEXT = {"task_complete": ("reason",), "task_infeasible": ("reason",)}
Hook = Callable[[str], None]


@dataclass(frozen=True)
class Item:
    """One reference request to replay."""
    episode_id: str
    task: str            # task instance
    task_id: str         # the statistics' cluster
    variant: str
    index: int           # the request's index in requests.json
    step: int
    attempt: int
    role: str
    ref_name: str | None
    ref_args: dict[str, Any] | None


def role_of(goal_before: bool, ref_name: str | None) -> str:
    if ref_name == "task_infeasible":
        return "infeasible"
    if not goal_before:
        return "navigation"
    return "completion" if ref_name == "task_complete" else "after_goal"


# Any: a tool call's arguments, JSON the model wrote
def action_key(name: str | None, args: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """(tool, canonical arguments) with the final tools' free-text reason left out."""
    if args is None:
        return name, None
    kept = {k: v for k, v in args.items() if k not in FREE_TEXT.get(name or "", ())}
    return name, json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# Any: tool calls' arguments, JSON the model wrote
def match_of(ref: tuple[str | None, dict[str, Any] | None], cand: tuple[str | None, dict[str, Any] | None]) -> str:
    if action_key(*ref) == action_key(*cand):
        return "same_action"
    return "same_tool" if ref[0] == cand[0] else "different"


def _goals(episode_dir: Path) -> dict[int, bool]:
    return {rec.step: rec.goal for rec in read_step_log(episode_dir)}


def reference_episodes(run_dir: Path, reference: str, tasks: Sequence[str] | None = None
                       ) -> list[tuple[EpisodeRecord, RequestLog]]:
    """The reference's finished episodes (outcome `error` left out) and their request logs;
    UserError with one line when there are none or one was recorded without requests.json."""
    store = RunStore(run_dir)
    try:
        store.read_manifest()
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    latest: dict[str, EpisodeRecord] = {}
    for rec in store.records():
        if rec.build == reference:
            latest[rec.episode_id] = rec
    if not latest:
        builds = sorted({r.build for r in store.records()})
        raise UserError(f"{run_dir}: no episodes of --reference {reference} (builds in the run: "
                        f"{', '.join(builds) or 'none'})")
    wanted = set(tasks or ())
    recs = [r for r in latest.values() if r.outcome != "error"
            and (not wanted or r.task in wanted or (r.task_id or r.task) in wanted)]
    if not recs:
        raise UserError(f"{run_dir}: --tasks {','.join(sorted(wanted))}: no finished episode of "
                        f"{reference} matches" if wanted else f"{run_dir}: every episode of {reference} failed")
    return [(r, load_request_log(store.episodes_dir / r.episode_id)) for r in sorted(recs, key=lambda r: r.episode_id)]


def plan_items(run_dir: Path, episodes: Sequence[tuple[EpisodeRecord, RequestLog]]) -> list[Item]:
    items = []
    for rec, log in episodes:
        goals = _goals(RunStore(run_dir).episodes_dir / rec.episode_id)
        for i, r in enumerate(log.requests):
            name, args = reply_action(log.reply(i))
            items.append(Item(rec.episode_id, rec.task, rec.task_id or rec.task, rec.variant, i, r.step,
                              r.attempt, role_of(goals.get(r.step - 1, False), name), name, args))
    return items


# ---------------------------------------------------------------------------- one request

# Any: an OpenAI chat request and completion, free-form JSON
def _post(endpoint: Endpoint, body: dict[str, Any], headers: dict[str, str], timeout: float) -> dict[str, Any]:
    url = endpoint.base_url.rstrip("/") + "/chat/completions"
    r = httpx.post(url, json=body, headers={"Authorization": f"Bearer {endpoint.api_key or 'none'}", **headers},
                   timeout=timeout)
    if r.status_code != 200:
        raise RuntimeError(f"HTTP {r.status_code}: {r.text[:300]}")
    resp: dict[str, Any] = r.json()   # the server's JSON, read by name below
    return resp


# Any: an OpenAI chat completion and message, free-form JSON
def _message(resp: dict[str, Any], calls_as_json: bool = False) -> dict[str, Any]:
    msg = (resp.get("choices") or [{}])[0].get("message") or {}
    out: dict[str, Any] = {"role": "assistant", "content": msg.get("content")}
    if msg.get("tool_calls"):
        out["tool_calls"] = [{"id": c.get("id"), "type": "function",
                              "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
                             for c in msg["tool_calls"]]
    return with_json_call(out) if calls_as_json else out


def score(endpoint: Endpoint, log: RequestLog, i: int, prompt_tokens: int, timeout: float) -> tuple[float, int]:
    """Log-probability of the reference's reply to request i under this server, and its tokens."""
    body = log.body(i)
    for k in ("tool_choice", "parallel_tool_calls", "response_format"):
        body.pop(k, None)
    body.update(model=endpoint.model, messages=[*body["messages"], log.reply(i)], max_tokens=1,
                temperature=0.0, prompt_logprobs=0, add_generation_prompt=False)
    resp = _post(endpoint, body, log.headers, timeout)
    entries = resp.get("prompt_logprobs")
    if not entries:
        raise RuntimeError("the server returned no prompt_logprobs")
    tail = entries[prompt_tokens:]
    total = 0.0
    for e in tail:
        if not e:
            raise RuntimeError("a reply token without a log-probability")
        total += float(next(iter(e.values()))["logprob"])     # prompt_logprobs 0: the token's own
    return total, len(tail)


# Any: one replay.jsonl line, JSON
def ask(endpoint: Endpoint, log: RequestLog, item: Item, *, greedy: bool, logprobs: bool,
        timeout: float = 300.0) -> dict[str, Any]:
    """One replayed request: the candidate's greedy answer (or, for the reference's own
    scoring pass, one token) and, with `logprobs`, the reference reply's log-probability."""
    body = log.body(item.index)
    body.update(model=endpoint.model, temperature=0.0)
    # the candidate is asked for its call the way its kind of server is (config/builds.ServerTraits)
    body.pop("response_format", None)
    calls_as_json = endpoint.calls_as_json
    if calls_as_json and body.get("tools"):
        body["response_format"] = calls_schema(body["tools"])
    if not greedy:
        body["max_tokens"] = 1
    line: dict[str, Any] = {"episode_id": item.episode_id, "index": item.index, "step": item.step,
                            "attempt": item.attempt, "role": item.role, "task": item.task,
                            "task_id": item.task_id, "variant": item.variant}
    t0 = time.monotonic()
    try:
        resp = _post(endpoint, body, log.headers, timeout)
        line["seconds"] = round(time.monotonic() - t0, 4)
        if greedy:
            reply = _message(resp, calls_as_json)
            cand = reply_action(reply)
            line.update(reply=reply, name=cand[0], match=match_of((item.ref_name, item.ref_args), cand),
                        exact=cand == (item.ref_name, item.ref_args)     # the reason text too
                        and reply.get("content") == log.reply(item.index).get("content"))
        if logprobs:
            t1 = time.monotonic()
            lp, n = score(endpoint, log, item.index, int(resp["usage"]["prompt_tokens"]), timeout)
            line.update(logprob=lp, reply_tokens=n, score_seconds=round(time.monotonic() - t1, 4))
    except (httpx.HTTPError, RuntimeError, KeyError, ValueError, TypeError) as exc:
        line.update(error=f"{type(exc).__name__}: {exc}"[:400], seconds=round(time.monotonic() - t0, 4))
    return line


# ------------------------------------------------------------------------------- the replay

def _served(build: Build, *, log_dir: Path, startup_timeout: float | None) -> ManagedServer:
    from agent_host.serving.server import start

    return start(build, log_dir=log_dir, seed=0, startup_timeout=startup_timeout or build.startup_timeout_s)


def replay_run(run_dir: Path, reference: Build, candidates: Sequence[Build], *, tasks: Sequence[str] | None = None,
               logprobs: bool = True, startup_timeout: float | None = None, hook: Hook | None = None,
               served: Callable[..., AbstractContextManager[ManagedServer]] = _served) -> Path:
    """Replay the reference's requests of `run_dir` on each candidate; returns the replay's
    directory. Resumable: answers already in replay.jsonl are not asked again."""
    hook = hook or (lambda s: None)
    episodes = reference_episodes(run_dir, reference.id, tasks)
    items = plan_items(run_dir, episodes)
    logs = {rec.episode_id: log for rec, log in episodes}
    out = replay_dir(run_dir, reference.id)
    scored = logprobs and any(c.traits.prompt_logprobs for c in candidates) and reference.traits.prompt_logprobs
    passes = ([(REFERENCE_PASS, reference)] if scored else []) + [(c.id, c) for c in candidates]
    with RunLock(Path(run_dir)):
        log = ReplayLog(out)
        log.open()
        done = {(line["pass"], line["episode_id"], line["index"]) for line in log.read() if "error" not in line}
        for name, build in passes:
            todo = [it for it in items if (name, it.episode_id, it.index) not in done]
            if not todo:
                continue
            hook(f"replay: starting {build.id} ({len(todo)} requests)")
            try:
                with served(build, log_dir=out / "servers", startup_timeout=startup_timeout) as server:
                    endpoint = server.endpoint
                    for k, it in enumerate(todo, 1):
                        line = ask(endpoint, logs[it.episode_id], it, greedy=name != REFERENCE_PASS,
                                   logprobs=scored and build.traits.prompt_logprobs)
                        log.append({"pass": name, "build": build.id, **line})
                        hook(f"replay: {build.id} {k}/{len(todo)}")
            except Exception as exc:     # the server did not start or died: this pass's requests
                done_now = {(x["pass"], x["episode_id"], x["index"]) for x in log.read() if "error" not in x}
                why = f"server: {type(exc).__name__}: {exc}"[:400]
                for it in todo:      # count as failed, and asked again by the next replay
                    if (name, it.episode_id, it.index) not in done_now:
                        log.append({"pass": name, "build": build.id, "episode_id": it.episode_id, "index": it.index,
                                    "step": it.step, "attempt": it.attempt, "role": it.role, "task": it.task,
                                    "task_id": it.task_id, "variant": it.variant, "seconds": 0.0, "error": why})
                hook(f"replay: {build.id} failed: {why}")
    return out
