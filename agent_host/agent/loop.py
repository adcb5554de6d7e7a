"""The step loop: observe -> model -> parse -> act -> settle -> judge, one tool call per step.

The conversation is append-only: every request's messages extend the previous
request's, so the server's prefix cache serves all but the newest turn. Per step:

1. the user message carries the screen the model acts on (rendered by phone/render.py);
2. the model is asked with tool_choice="required", parallel_tool_calls=false, the build's
   sampling and the episode seed;
3. a reply without a valid tool call (no call, unknown tool, bad arguments, an index not on
   screen) is fed back ONCE with the error; a second invalid reply makes the step wasted;
4. the action runs on the phone; the screen settles (the phone profile's minimum delay, then
   one dump: uiautomator waits for idle before it dumps); that dump is the next step's
   observation and the screen the judge's UI checks read;
5. the judge evaluates the goal (one batched shell call) on a worker thread, beside the next
   step's model request and screenshot; the next action waits for it, so the judged state is
   exactly the state after this step's action and before the next one.

Only the action and the settle dump are device round trips in series with the model; the
step's record is written once its verdict is in (at the latest before the next action).

Failures of the phone (PhoneError) and of the server (ServerError) propagate to the episode,
which labels them `error`; they never count against the model.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from agent_host import watchdog
from agent_host.agent import prompt as prompts
from agent_host.agent.model_client import ContextExceeded, ModelClient, ServerError
from agent_host.agent.perform import act, describe_result
from agent_host.agent.reply import Parsed, parse_reply
from agent_host.agent.tools import FINAL_TOOLS, tool_schemas
from agent_host.config.records import Action, Exhaustion, PhaseTimes, RoundTrips, StepRecord, Usage
from agent_host.phone.device import PhoneError, RoundTripTally, counting_into, submit_beside
from agent_host.phone.parse import parse
from agent_host.phone.render import render

__all__ = ["ContextExceeded", "LoopState", "ModelClient", "Observation", "ServerError", "StepLoop",
           "observe_xml"]


def context_exhaustion(step: int, tokens: int | None, message: str) -> Exhaustion:
    """What ran out: the conversation's size so far (`tokens`: the last prompt plus its reply,
    as the server counted them) and the window the server named, if it did."""
    m = re.search(r"maximum context length is (\d+)", message) or re.search(r"\((\d+) tokens\)", message)
    return Exhaustion(kind="context", step=step, tokens=tokens or None,
                      limit=int(m.group(1)) if m else None, detail=message[:300])


# -- the loop ---------------------------------------------------------------------------------------


@dataclass
class Observation:
    xml: str
    screen: Any
    text: str


def observe_xml(xml: str) -> Observation:
    """Parse and render a dump; an unreadable dump is the phone's failure (PhoneError)."""
    try:
        screen = parse(xml)
    except ValueError as exc:
        raise PhoneError(f"unreadable hierarchy dump: {exc} ({xml[:80]!r})") from exc
    return Observation(xml, screen, render(screen))


def cached_share(usage: Usage) -> float | None:
    """The share of `usage`'s prompt tokens the server served from its prefix cache."""
    if usage.cached_tokens is None or usage.prompt_tokens <= 0:
        return None
    return round(usage.cached_tokens / usage.prompt_tokens, 4)


def add_usage(total: Usage, usage: Usage) -> None:
    total.prompt_tokens += usage.prompt_tokens
    total.completion_tokens += usage.completion_tokens
    if usage.cached_tokens is not None:
        total.cached_tokens = (total.cached_tokens or 0) + usage.cached_tokens


def tally_record(tally: RoundTripTally) -> RoundTrips:
    return RoundTrips(critical=tally.critical, background=tally.background, wait_s=round(tally.wait_s, 4))


def render_key(xml: str) -> str:
    """What the model would see of a dump (a ticking status-bar clock is not in it)."""
    try:
        return render(parse(xml))
    except ValueError:
        return xml


@dataclass
class LoopState:
    goals: list[bool]
    steps: int = 0
    wasted: int = 0
    complete_step: int | None = None
    infeasible_step: int | None = None
    reason: str | None = None
    answer: str | None = None         # the latest `answer` action's text, for the judge
    stop: str | None = None            # why the loop ended early (context window)
    exhausted: Exhaustion | None = None  # the harness budget that ended it (outcome `exhausted`)
    usage: Usage = field(default_factory=Usage)
    usage_after_first: Usage = field(default_factory=Usage)   # steps 2..: what the prefix cache can serve
    times: PhaseTimes = field(default_factory=PhaseTimes)


class StepLoop:
    """Runs the steps of one episode after setup; the episode owns files and records."""

    def __init__(self, *, goal: str, phone: Any, model: ModelClient, judge: Any, profile: Any,
                 max_steps: int, first: Observation, goal_initial: bool,
                 screenshot: Callable[[int], str | None] | None = None,
                 before_act: Callable[[], None] | None = None,
                 write_step: Callable[[StepRecord], None] | None = None,
                 settle_s: float = 3.0, settle_min_s: float = 0.0, settle_confirm: bool = False):
        self.goal = goal
        self.phone = phone
        self.model = model
        self.judge = judge
        self.profile = profile
        self.apps = sorted(profile.apps) if profile is not None else []
        self.tools = tool_schemas(self.apps)
        self.max_steps = max_steps
        self.obs = first
        self.screenshot = screenshot or (lambda step: None)
        self.before_act = before_act or (lambda: None)
        self.write_step = write_step or (lambda rec: None)
        self.settle_s = settle_s
        self.settle_min_s = settle_min_s
        self.settle_confirm = settle_confirm
        self._judging: Future | None = None      # the last step's verdict, coming in beside
        self._judge_pool = ThreadPoolExecutor(1, thread_name_prefix="judge")
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": prompts.system_prompt(self.apps)}]
        self.state = LoopState(goals=[goal_initial])
        self._carry_error: str | None = None     # an unanswered invalid reply of the last step
        self._context_tokens = 0                 # prompt + reply tokens of the latest request
        self.requests: list[dict[str, Any]] = []  # each answered request: step, attempt, end, options, sha256

    def run(self) -> LoopState:
        try:
            for n in range(1, self.max_steps + 1):
                if not self.step(n):
                    break
            self._judged()
        except BaseException:
            try:      # a finished step keeps its record whatever ends the loop
                self._judged()
            except Exception:
                pass
            raise
        finally:
            self._judge_pool.shutdown(wait=True)
        return self.state

    def _settle(self, min_s: float, since: float | None = None) -> Observation:
        return observe_xml(self.phone.settle(self.settle_s, min_s=min_s, since=since,
                                             confirm=self.settle_confirm, key=render_key))

    def _judge_beside(self, screen: Any, answer: str | None, finish: Callable[[Any], None]) -> None:
        """Evaluate the goal on `screen`, the latest `answer` and the phone's state now, on the
        judge's thread; `finish(verdict)` records the step. `_judged()` waits for it."""
        def judge() -> None:
            finish(self.judge.evaluate(self.phone, screen, answer=answer))
        self._judging = submit_beside(self._judge_pool, judge)

    def _judged(self) -> None:
        """Wait for the verdict in flight; its PhoneError is raised here."""
        pending, self._judging = self._judging, None
        if pending is not None:
            pending.result()

    def _ask(self, times: PhaseTimes, usage: Usage, raws: list[dict[str, Any]], step: int) -> dict[str, Any]:
        reply = self.model.chat(self.messages, self.tools)
        if getattr(reply, "sent", None) is not None:
            self.requests.append({"step": step, "attempt": len(raws), **reply.sent})
        self._context_tokens = reply.usage.prompt_tokens + reply.usage.completion_tokens
        times.model += reply.seconds
        usage.prompt_tokens += reply.usage.prompt_tokens
        usage.completion_tokens += reply.usage.completion_tokens
        if reply.usage.cached_tokens is not None:
            usage.cached_tokens = (usage.cached_tokens or 0) + reply.usage.cached_tokens
        raw = {k: v for k, v in reply.message.items() if k != "role"}
        raw["finish_reason"] = reply.finish_reason
        if reply.reasoning:
            raw["reasoning_content"] = reply.reasoning
        raws.append(raw)
        self.messages.append(reply.message)
        return reply.message

    def _answer_calls(self, message: dict[str, Any], first: str) -> None:
        """Every tool call id gets a tool message: `first` for the first, 'ignored' for the rest."""
        for i, call in enumerate(message.get("tool_calls") or []):
            self.messages.append({"role": "tool", "tool_call_id": call["id"],
                                  "content": first if i == 0 else "ignored: one tool call per turn"})

    def step(self, n: int) -> bool:
        """One step; False when the episode ends (task_complete / task_infeasible / context)."""
        tally = RoundTripTally()
        with counting_into(tally):
            return self._step(n, tally)

    def _step(self, n: int, tally: RoundTripTally) -> bool:
        st = self.state
        times = PhaseTimes()
        usage = Usage()
        t0 = time.monotonic()
        obs = self.obs
        shot = self.screenshot(n)
        times.observe += watchdog.elapsed(t0)

        text = prompts.first_message(self.goal, obs.text, self.max_steps) if n == 1 else \
            prompts.step_message(n, obs.text)
        if self._carry_error:
            text = f"Your last reply was not a valid tool call: {self._carry_error}.\n\n{text}"
            self._carry_error = None
        self.messages.append({"role": "user", "content": text})

        indices = [e.index for e in obs.screen.elements]
        editable = {e.index for e in obs.screen.elements if e.editable}
        raws: list[dict[str, Any]] = []
        retry_error: str | None = None
        parsed: Parsed | None = None
        try:
            for attempt in range(2):
                message = self._ask(times, usage, raws, n)
                p = parse_reply(message, indices=indices, apps=self.apps, editable=editable)
                if p.error is None:
                    parsed = p
                    break
                if attempt == 0:
                    retry_error = p.error
                    if message.get("tool_calls"):
                        self._answer_calls(message, f"error: {p.error}. Call exactly one tool, with valid arguments.")
                    else:
                        self.messages.append({"role": "user", "content": prompts.retry_message(p.error)})
                else:
                    if message.get("tool_calls"):
                        self._answer_calls(message, f"error: {p.error}")
                    else:
                        self._carry_error = p.error
        except ContextExceeded as exc:
            if n == 1:  # the build cannot take even the first prompt: a setup problem, not the model's
                raise ServerError(f"the first prompt does not fit the server's context window: {exc}") from exc
            st.stop = f"context window exceeded at step {n}: {exc}"
            st.exhausted = context_exhaustion(n, self._context_tokens, str(exc))
            return False
        if parsed is None and raws and all(r.get("finish_reason") == "length" for r in raws):
            # Every try of this step was cut at the per-reply token cap: a harness budget.
            st.stop = f"reply token cap hit on every try at step {n}"
            st.exhausted = Exhaustion(kind="reply_tokens", step=n, tokens=usage.completion_tokens,
                                      limit=self.model.max_tokens(), detail=st.stop)
            return False

        t_b = time.monotonic()
        self.before_act()            # the screenshot of this screen was taken while the model ran
        self._judged()               # and the last step was judged
        times.observe += watchdog.elapsed(t_b)
        raw_output = raws[-1] if raws else {}
        if len(raws) > 1:
            raw_output = {**raws[-1], "retried": raws[:-1]}
        action: Action | None = None
        goal_screen = obs.screen
        next_obs = obs
        cont = True
        if parsed is None:
            st.wasted += 1
            # nothing happened on the phone, but the world may move on: judge it anyway
        else:
            t1 = time.monotonic()
            action = act(self.phone, parsed.name or "", parsed.args, obs.screen, self.profile)
            times.act += watchdog.elapsed(t1)
            result = describe_result(action, obs.screen)
            if parsed.name == "answer":
                st.answer = parsed.args["text"]
            if parsed.name in FINAL_TOOLS:
                reason = parsed.args.get("reason", "")
                st.reason = reason
                if parsed.name == "task_complete":
                    st.complete_step = n
                else:
                    st.infeasible_step = n
                cont = False
            else:
                t2 = time.monotonic()
                # the delay runs from the input; type_text sends several (tap, text, Enter):
                # from its last, i.e. from now
                next_obs = self._settle(0.0 if parsed.name == "wait" else self.settle_min_s,
                                        since=None if parsed.name == "type_text" else t1)
                times.settle += watchdog.elapsed(t2)
                goal_screen = next_obs.screen
                if parsed.call_id is not None:
                    self._answer_calls(self.messages[-1], result)
                else:
                    self.messages.append({"role": "user", "content": f"Result: {result}"})
        if parsed is None:
            t2 = time.monotonic()
            next_obs = self._settle(0.0)
            times.settle += watchdog.elapsed(t2)
            goal_screen = next_obs.screen
        wall_s = round(watchdog.elapsed(t0), 4)

        def finish(verdict: Any) -> None:
            times.judge = verdict.seconds       # beside the next step, not in this one's wall time
            st.goals.append(verdict.goal)
            st.steps = n
            for k in ("observe", "model", "act", "settle", "judge"):
                setattr(st.times, k, getattr(st.times, k) + getattr(times, k))
            st.usage.prompt_tokens += usage.prompt_tokens
            st.usage.completion_tokens += usage.completion_tokens
            if usage.cached_tokens is not None:
                st.usage.cached_tokens = (st.usage.cached_tokens or 0) + usage.cached_tokens
            if n >= 2:
                add_usage(st.usage_after_first, usage)
            self.write_step(StepRecord(
                step=n, observation=obs.text, package=obs.screen.package or None, screenshot=shot,
                usage=usage, raw_output=raw_output, action=action, retry_error=retry_error,
                times=times, wall_s=wall_s, round_trips=tally_record(tally), cached_share=cached_share(usage),
                goal=verdict.goal, check_detail=verdict.detail))

        self._judge_beside(goal_screen, st.answer, finish)
        self.obs = next_obs
        return cont
