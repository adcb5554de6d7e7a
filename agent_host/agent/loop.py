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
from typing import TYPE_CHECKING, Protocol
from agent_host import watchdog
from agent_host.agent import prompt as prompts
from agent_host.agent.model_client import ContextExceeded, ModelClient, Reply, ServerError
from agent_host.agent.perform import act, describe_result
from agent_host.agent.reply import Parsed, parse_reply
from agent_host.agent.tools import FINAL_TOOLS, tool_schemas
from agent_host.agent import vision
from agent_host.config.observation import TEXT, Frame, ObservationSpec, image_size
from agent_host.config.phones import PhoneProfile
from agent_host.config.records import Action, Exhaustion, PhaseTimes, RoundTrips, StepRecord, Usage
from agent_host.config.requests import Json, expand_images
from agent_host.judge.checks import Judge, Verdict
from agent_host.phone.device import Phone, PhoneError, RoundTripTally, counting_into, submit_beside
from agent_host.phone.parse import parse
from agent_host.phone.render import render
from agent_host.phone.screen import Screen
from agent_host.watchdog import timed

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = ["ContextExceeded", "LoopState", "ModelClient", "Observation", "ServerError", "StepLoop",
           "observe_xml"]


def context_exhaustion(step: int, tokens: int | None, message: str) -> Exhaustion:
    """What ran out: the conversation's size so far (`tokens`: the last prompt plus its reply,
    as the server counted them) and the window the server named, if it did."""
    m = re.search(r"maximum context length is (\d+)", message) or re.search(r"\((\d+) tokens\)", message)
    return Exhaustion(kind="context", step=step, tokens=tokens or None,
                      limit=int(m.group(1)) if m else None, detail=message[:300])


# -- the loop ---------------------------------------------------------------------------------------


class Model(Protocol):
    """What the loop asks of a model: ModelClient, or the episode's Bounded around one."""

    def chat(self, messages: list[Json], tools: list[Json]) -> Reply: ...

    def max_tokens(self) -> int: ...


@dataclass
class Observation:
    xml: str
    screen: Screen
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
    if usage.image_tokens is not None:
        total.image_tokens = (total.image_tokens or 0) + usage.image_tokens


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
    asked: list[bool | None] = field(default_factory=list)   # the goal's halves, per step (judge/checks.py)
    clean: list[bool | None] = field(default_factory=list)
    untouched: list[bool | None] = field(default_factory=list)
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


# Where a final action's step is recorded. A new final action needs a row here and a rule in
# config/outcome.py (what ending that way means), so the loop refuses to import without one.
FINAL_STEP = {"task_complete": "complete_step", "task_infeasible": "infeasible_step"}
if set(FINAL_STEP) != set(FINAL_TOOLS):
    raise ImportError(f"agent/loop.py FINAL_STEP must name every final action: {sorted(FINAL_TOOLS)}")


@dataclass
class _Turn:
    """What one step gathers before its record is written (beside the next step)."""
    n: int
    obs: Observation                 # the screen the model acts on
    tally: RoundTripTally
    t0: float = field(default_factory=time.monotonic)
    times: PhaseTimes = field(default_factory=PhaseTimes)
    usage: Usage = field(default_factory=Usage)
    raws: list[Json] = field(default_factory=list)   # every reply of the step, as the record keeps it
    shot: str | None = None
    image: str | None = None         # the image the model was shown (images/<sha>.png), vision builds
    retry_error: str | None = None
    parsed: Parsed | None = None
    action: Action | None = None

    def raw_output(self) -> Json:
        raw = self.raws[-1] if self.raws else {}
        return {**raw, "retried": self.raws[:-1]} if len(self.raws) > 1 else raw


class StepLoop:
    """Runs the steps of one episode after setup; the episode owns files and records."""

    def __init__(self, *, goal: str, phone: Phone, model: Model, judge: Judge,
                 profile: PhoneProfile | None, max_steps: int, first: Observation, initial: Verdict,
                 screenshot: Callable[[int], str | None] | None = None,
                 before_act: Callable[[], None] | None = None,
                 write_step: Callable[[StepRecord], None] | None = None,
                 settle_s: float = 3.0, settle_min_s: float = 0.0, settle_confirm: bool = False,
                 observation: ObservationSpec = TEXT, image: Callable[[], Image | None] | None = None,
                 store_image: Callable[[str, bytes], None] | None = None):
        self.goal = goal
        self.phone = phone
        self.model = model
        self.judge = judge
        self.profile = profile
        self.apps = sorted(profile.apps) if profile is not None else []
        self.spec = observation
        self.image = image or (lambda: None)       # the screenshot in flight, once taken (vision builds)
        self.store_image = store_image or (lambda ref, data: None)
        self.images: dict[str, bytes] = {}        # images/<sha>.png -> PNG, what the prompts reference
        frame = self.frame(first.screen)
        self.tools = tool_schemas(self.apps, coordinates=frame is not None)
        self.max_steps = max_steps
        self.obs = first
        self.screenshot = screenshot or (lambda step: None)
        self.before_act = before_act or (lambda: None)
        self.write_step = write_step or (lambda rec: None)
        self.settle_s = settle_s
        self.settle_min_s = settle_min_s
        self.settle_confirm = settle_confirm
        self._judging: Future[None] | None = None      # the last step's verdict, coming in beside
        self._judge_pool = ThreadPoolExecutor(1, thread_name_prefix="judge")
        self.messages: list[Json] = [{"role": "system", "content": prompts.system_prompt(
            self.apps, frame=frame.describe() if frame is not None else None)}]
        self.state = LoopState(goals=[initial.goal], asked=[initial.asked], clean=[initial.clean],
                               untouched=[initial.untouched])
        self._carry_error: str | None = None     # an unanswered invalid reply of the last step
        self._context_tokens = 0                 # prompt + reply tokens of the latest request
        self.requests: list[Json] = []           # each answered request: step, attempt, end, options, sha256

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

    def step(self, n: int) -> bool:
        """One step; False when the episode ends (a final action, the context window, the
        reply token cap)."""
        tally = RoundTripTally()
        with counting_into(tally):
            return self._step(_Turn(n, self.obs, tally))

    def _step(self, turn: _Turn) -> bool:
        with timed(turn.times, "observe"):
            turn.shot = self.screenshot(turn.n)
            if self.spec.images:     # the model sees it: the capture is in series here
                turn.image = self._shown(turn.obs.screen)
        self._prompt(turn.n, turn.image)
        try:
            turn.parsed = self._decide(turn)
        except ContextExceeded as exc:
            return self._out_of_context(turn.n, exc)
        if turn.parsed is None and self._cut_at_token_cap(turn):
            return False
        with timed(turn.times, "observe"):
            self.before_act()        # the screenshot of this screen was taken while the model ran
            self._judged()           # and the last step was judged
        go_on, self.obs = self._perform(turn)
        wall_s = round(watchdog.elapsed(turn.t0), 4)
        self._judge_beside(self.obs.screen, self.state.answer, lambda v: self._record(turn, wall_s, v))
        return go_on

    # -- the phases of a step -------------------------------------------------------------------

    def frame(self, screen: Screen) -> Frame | None:
        """The build's coordinate frame on this screen (None: no point actions)."""
        return Frame.of(self.spec, screen.width or 1080, screen.height or 2400)

    def _shown(self, screen: Screen) -> str:
        """The step's screenshot as the model is shown it, stored once by content: its reference."""
        shot = self.image()
        if shot is None:
            raise PhoneError("no screenshot of the screen for the vision build's observation")
        ref, data = vision.encode(vision.shown_image(shot, screen, self.spec))
        if ref not in self.images:
            self.images[ref] = data
            self.store_image(ref, data)
        return ref

    def _prompt(self, n: int, image: str | None = None) -> None:
        """The user message with the screen (and last step's unanswered invalid reply)."""
        seen = self.obs.text
        if image is not None:
            size = image_size(self.obs.screen.width or 1080, self.obs.screen.height or 2400, self.spec)
            seen = vision.observation_text(self.spec, seen, size)
        text = prompts.first_message(self.goal, seen, self.max_steps) if n == 1 else \
            prompts.step_message(n, seen)
        if self._carry_error:
            text = f"Your last reply was not a valid tool call: {self._carry_error}.\n\n{text}"
            self._carry_error = None
        self.messages.append({"role": "user", "content": text if image is None else vision.content(text, image)})

    def outgoing(self) -> list[Json]:
        """The messages as sent: a vision build's image references as data URLs (the newest
        `history_images`); a text build's conversation itself."""
        if not self.spec.images:
            return self.messages
        return expand_images(self.messages, self.spec.history_images, self.images.__getitem__)

    def _decide(self, turn: _Turn) -> Parsed | None:
        """Ask the model; an invalid reply is fed back once. None: no valid call this step."""
        screen = turn.obs.screen
        indices = [e.index for e in screen.elements]
        editable = {e.index for e in screen.elements if e.editable}
        for attempt in range(2):
            message = self._ask(turn)
            p = parse_reply(message, indices=indices, apps=self.apps, editable=editable, frame=self.frame(screen))
            if p.error is None:
                return p
            if attempt == 0:
                turn.retry_error = p.error
                if message.get("tool_calls"):
                    self._answer_calls(message, f"error: {p.error}. Call exactly one tool, with valid arguments.")
                else:
                    self.messages.append({"role": "user", "content": prompts.retry_message(p.error)})
            elif message.get("tool_calls"):
                self._answer_calls(message, f"error: {p.error}")
            else:
                self._carry_error = p.error
        return None

    def _out_of_context(self, n: int, exc: ContextExceeded) -> bool:
        if n == 1:  # the build cannot take even the first prompt: a setup problem, not the model's
            raise ServerError(f"the first prompt does not fit the server's context window: {exc}") from exc
        self.state.stop = f"context window exceeded at step {n}: {exc}"
        self.state.exhausted = context_exhaustion(n, self._context_tokens, str(exc))
        return False

    def _cut_at_token_cap(self, turn: _Turn) -> bool:
        """Every try of this step was cut at the per-reply token cap: a harness budget."""
        if not turn.raws or any(r.get("finish_reason") != "length" for r in turn.raws):
            return False
        st = self.state
        st.stop = f"reply token cap hit on every try at step {turn.n}"
        st.exhausted = Exhaustion(kind="reply_tokens", step=turn.n, tokens=turn.usage.completion_tokens,
                                  limit=self.model.max_tokens(), detail=st.stop)
        return True

    def _perform(self, turn: _Turn) -> tuple[bool, Observation]:
        """Do the call on the phone and let the screen settle: (go on?, the screen now)."""
        p = turn.parsed
        if p is None:
            self.state.wasted += 1   # nothing happened on the phone, but the world may move on
            return True, self._settled(turn, 0.0)
        with timed(turn.times, "act") as t_act:
            turn.action = act(self.phone, p.name or "", p.args, turn.obs.screen, self.profile,
                              frame=self.frame(turn.obs.screen))
        result = describe_result(turn.action, turn.obs.screen)
        if p.name == "answer":
            self.state.answer = p.args["text"]
        if p.name in FINAL_STEP:
            self.state.reason = p.args.get("reason", "")
            setattr(self.state, FINAL_STEP[p.name], turn.n)
            return False, turn.obs
        # the delay runs from the input; type_text sends several (tap, text, Enter): from its
        # last, i.e. from now
        now = self._settled(turn, 0.0 if p.name == "wait" else self.settle_min_s,
                            since=None if p.name == "type_text" else t_act)
        if p.call_id is not None:
            self._answer_calls(self.messages[-1], result)
        else:
            self.messages.append({"role": "user", "content": f"Result: {result}"})
        return True, now

    def _record(self, turn: _Turn, wall_s: float, verdict: Verdict) -> None:
        """The step's record, once its verdict is in (on the judge's thread)."""
        st, times, usage = self.state, turn.times, turn.usage
        times.judge = verdict.seconds       # beside the next step, not in this one's wall time
        st.goals.append(verdict.goal)
        st.asked.append(verdict.asked)
        st.clean.append(verdict.clean)
        st.untouched.append(verdict.untouched)
        st.steps = turn.n
        for k in ("observe", "model", "act", "settle", "judge"):
            setattr(st.times, k, getattr(st.times, k) + getattr(times, k))
        add_usage(st.usage, usage)
        if turn.n >= 2:
            add_usage(st.usage_after_first, usage)
        self.write_step(StepRecord(
            step=turn.n, observation=turn.obs.text, package=turn.obs.screen.package or None,
            screenshot=turn.shot, image=turn.image, usage=usage, raw_output=turn.raw_output(), action=turn.action,
            retry_error=turn.retry_error, times=times, wall_s=wall_s, round_trips=tally_record(turn.tally),
            cached_share=cached_share(usage), goal=verdict.goal, asked=verdict.asked, clean=verdict.clean,
            untouched=verdict.untouched, check_detail=verdict.detail))

    # -- helpers --------------------------------------------------------------------------------

    def _settled(self, turn: _Turn, min_s: float, since: float | None = None) -> Observation:
        with timed(turn.times, "settle"):
            return observe_xml(self.phone.settle(self.settle_s, min_s=min_s, since=since,
                                                 confirm=self.settle_confirm, key=render_key))

    def _ask(self, turn: _Turn) -> Json:
        reply = self.model.chat(self.outgoing(), self.tools)
        if reply.sent is not None:
            self.requests.append({"step": turn.n, "attempt": len(turn.raws), **reply.sent})
        self._context_tokens = reply.usage.prompt_tokens + reply.usage.completion_tokens
        turn.times.model += reply.seconds
        add_usage(turn.usage, reply.usage)
        raw = {k: v for k, v in reply.message.items() if k != "role"}
        raw["finish_reason"] = reply.finish_reason
        if reply.reasoning:
            raw["reasoning_content"] = reply.reasoning
        if reply.cut:
            raw["cut"] = reply.cut  # what the reply caps cut, and the size it came in
        turn.raws.append(raw)
        self.messages.append(reply.message)
        return reply.message

    def _answer_calls(self, message: Json, first: str) -> None:
        """Every tool call id gets a tool message: `first` for the first, 'ignored' for the rest."""
        for i, call in enumerate(message.get("tool_calls") or []):
            self.messages.append({"role": "tool", "tool_call_id": call["id"],
                                  "content": first if i == 0 else "ignored: one tool call per turn"})

    def _judge_beside(self, screen: Screen, answer: str | None, finish: Callable[[Verdict], None]) -> None:
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
