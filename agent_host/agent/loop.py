"""The step loop: observe -> model -> parse -> act -> settle -> judge, one tool call per step.

The conversation is append-only (DESIGN.md): every request's messages extend the previous
request's, so the server's prefix cache serves all but the newest turn. Per step:

1. the user message carries the screen the model acts on (rendered by phone.observe);
2. the model is asked with tool_choice="required", parallel_tool_calls=false, the build's
   sampling and the episode seed;
3. a reply without a valid tool call (no call, unknown tool, bad arguments, an index not on
   screen) is fed back ONCE with the error; a second invalid reply makes the step wasted;
4. the action runs on the phone; the screen settles (dumps until two agree); that last dump is
   the next step's observation and the screen the judge's UI checks read;
5. the judge evaluates the goal (one batched shell call).

Failures of the phone (PhoneError) and of the server (ServerError) propagate to the episode,
which labels them `error`; they never count against the model.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_host.agent import prompt as prompts
from agent_host.agent.tools import FINAL_TOOLS, ToolError, tool_schemas, validate_call
from agent_host.config.records import Action, PhaseTimes, RoundTrips, StepRecord, Usage


class ServerError(Exception):
    """The model server failed (connection, timeout, 5xx, auth, unknown model)."""


class ContextExceeded(Exception):
    """The conversation no longer fits the server's context window."""


# -- talking to the server ---------------------------------------------------------------------


@dataclass
class Reply:
    message: dict[str, Any]          # the assistant message as appended to the conversation
    usage: Usage
    finish_reason: str | None
    seconds: float
    reasoning: str | None = None


class ModelClient:
    """One OpenAI-compatible endpoint, called the way every build is measured."""

    def __init__(self, endpoint: Any, *, sampling: Any = None, seed: int = 0,
                 timeout: float = 600.0, client: Any = None):
        import openai
        self.endpoint = endpoint
        self.sampling = sampling
        self.seed = seed
        self.client = client or openai.OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key or "none",
                                              timeout=timeout, max_retries=1)
        self.tool_choice: str | None = "required"
        self.parallel: bool | None = False

    def _kwargs(self) -> dict[str, Any]:
        s = self.sampling
        kw: dict[str, Any] = {
            "temperature": getattr(s, "temperature", 0.0) if s is not None else 0.0,
            "top_p": getattr(s, "top_p", 1.0) if s is not None else 1.0,
            "max_tokens": getattr(s, "max_tokens", 256) if s is not None else 256,
            "seed": self.seed,
        }
        if self.tool_choice:
            kw["tool_choice"] = self.tool_choice
        if self.parallel is not None:
            kw["parallel_tool_calls"] = self.parallel
        return kw

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        import openai
        t0 = time.monotonic()
        for _ in range(3):
            try:
                resp = self.client.chat.completions.create(
                    model=self.endpoint.model, messages=messages, tools=tools, **self._kwargs())
                break
            except openai.BadRequestError as exc:
                text = str(exc).lower()
                if "context" in text and ("length" in text or "window" in text or "maximum" in text):
                    raise ContextExceeded(str(exc)) from exc
                # Servers that do not know tool_choice="required" or parallel_tool_calls
                if self.tool_choice == "required" and "tool_choice" in text:
                    self.tool_choice = "auto"
                    continue
                if self.parallel is not None and "parallel_tool_calls" in text:
                    self.parallel = None
                    continue
                raise ServerError(f"server rejected the request: {exc}") from exc
            except (openai.APIConnectionError, openai.APITimeoutError, openai.InternalServerError,
                    openai.AuthenticationError, openai.NotFoundError, openai.PermissionDeniedError,
                    openai.RateLimitError, openai.APIStatusError) as exc:
                raise ServerError(f"{type(exc).__name__}: {exc}") from exc
        else:  # pragma: no cover - each retry changes one option, so this cannot loop
            raise ServerError("server rejected the request")
        seconds = time.monotonic() - t0
        if not resp.choices:
            raise ServerError("server answered without choices")
        choice = resp.choices[0]
        msg = choice.message
        message: dict[str, Any] = {"role": "assistant", "content": msg.content}
        calls = []
        for c in msg.tool_calls or []:
            fn = getattr(c, "function", None)
            calls.append({"id": c.id or f"call_{secrets.token_hex(6)}", "type": "function",
                          "function": {"name": getattr(fn, "name", "") or "",
                                       "arguments": getattr(fn, "arguments", "") or ""}})
        if calls:
            message["tool_calls"] = calls
        reasoning = getattr(msg, "reasoning_content", None) or (msg.model_extra or {}).get("reasoning_content")
        usage = Usage()
        if resp.usage is not None:
            details = getattr(resp.usage, "prompt_tokens_details", None)
            usage = Usage(prompt_tokens=resp.usage.prompt_tokens or 0,
                          completion_tokens=resp.usage.completion_tokens or 0,
                          cached_tokens=getattr(details, "cached_tokens", None) if details else None)
        return Reply(message, usage, choice.finish_reason, seconds, reasoning)


# -- reading a reply ------------------------------------------------------------------------------

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)


def text_tool_call(content: str | None) -> tuple[str, Any] | None:
    """A tool call written as text (`<tool_call>{...}</tool_call>` or a bare JSON object with
    name and arguments), for models whose chat template drops `tools`."""
    if not content:
        return None
    candidates = [m.group(1) for m in _TAGGED.finditer(content)] + [content]
    decoder = json.JSONDecoder()
    for text in candidates:
        for i, ch in enumerate(text):
            if ch != "{":
                continue
            try:
                obj, _ = decoder.raw_decode(text, i)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get("name"), str):
                args = obj.get("arguments", obj.get("parameters", {}))
                return obj["name"], args
    return None


@dataclass
class Parsed:
    name: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None        # None: the call came as text
    error: str | None = None


def parse_reply(message: dict[str, Any], *, indices: list[int], apps: list[str],
                editable: set[int] | None = None) -> Parsed:
    """The first tool call of a reply, validated; `editable`: indices type_text may target
    (None: any)."""
    calls = message.get("tool_calls") or []
    if calls:
        call = calls[0]
        name = call["function"]["name"]
        raw_args = call["function"]["arguments"]
        call_id = call["id"]
    else:
        found = text_tool_call(message.get("content"))
        if found is None:
            return Parsed(error="the reply has no tool call")
        name, raw_args = found
        call_id = None
    try:
        args = validate_call(name, raw_args, indices=indices, apps=apps)
    except ToolError as exc:
        return Parsed(name=name, call_id=call_id, error=str(exc))
    if name == "type_text" and editable is not None and args["index"] not in editable:
        return Parsed(name=name, call_id=call_id,
                      error=f"element {args['index']} is not a text field (type_text needs an element marked `type`)")
    return Parsed(name=name, args=args, call_id=call_id)


# -- acting -----------------------------------------------------------------------------------------


def swipe_points(direction: str, bounds: tuple[int, int, int, int], *,
                 slider: bool = False) -> tuple[tuple[int, int], tuple[int, int]]:
    """Finger start and end for a swipe inside `bounds` (l, t, r, b): across the middle half
    for a list or the screen (a scroll, not a fling); from the middle to the end of the track
    for a slider (a drag to its end, as a person sets a slider to its maximum or minimum)."""
    l, t, r, b = bounds
    cx, cy = (l + r) // 2, (t + b) // 2
    w, h = r - l, b - t
    if slider:
        ends = {"up": (cx, t + 1), "down": (cx, b - 2), "left": (l + 1, cy), "right": (r - 2, cy)}
        return (cx, cy), ends[direction]
    if direction == "up":
        return (cx, t + int(h * 0.75)), (cx, t + int(h * 0.25))
    if direction == "down":
        return (cx, t + int(h * 0.25)), (cx, t + int(h * 0.75))
    if direction == "left":
        return (l + int(w * 0.8), cy), (l + int(w * 0.2), cy)
    return (l + int(w * 0.2), cy), (l + int(w * 0.8), cy)


def act(phone: Any, parsed: Parsed, screen: Any, profile: Any) -> Action:
    """Perform a validated call; returns the Action with its screen point(s) (error set when the
    phone could not do it for a reason that is the model's, e.g. a field that takes no text)."""
    name, args = parsed.name or "", parsed.args
    action = Action(name=name, args=args)
    by_index = {e.index: e for e in screen.elements}
    el = by_index.get(args.get("index")) if "index" in args else None
    if name in ("tap", "long_press", "type_text"):
        assert el is not None
        x, y = el.center
        action.point = (x, y)
        if name == "tap":
            phone.tap(x, y)
        elif name == "long_press":
            phone.long_press(x, y)
        else:
            if not phone.type_text(x, y, args["text"], bool(args.get("submit"))):
                action.error = f"element {el.index} did not take text input (no focused text field)"
    elif name == "swipe":
        bounds = el.bounds if el is not None else _screen_bounds(screen)
        start, end = swipe_points(args["direction"], bounds, slider=bool(el is not None and el.slider))
        action.point, action.to = start, end
        phone.swipe(start[0], start[1], end[0], end[1], 0.3)
    elif name == "press_back":
        phone.press("back")
    elif name == "press_home":
        phone.press("home")
    elif name == "open_app":
        phone.launch(profile.package(args["name"]))
    elif name == "wait":
        time.sleep(float(args.get("seconds", 1.0)))
    return action


def _screen_bounds(screen: Any) -> tuple[int, int, int, int]:
    w, h = screen.width or 1080, screen.height or 2400
    return (0, int(h * 0.15), w, int(h * 0.85))


def describe_result(action: Action, screen: Any) -> str:
    if action.error:
        return f"error: {action.error}"
    name, args = action.name, action.args
    el = next((e for e in screen.elements if e.index == args.get("index")), None) if "index" in args else None
    label = f' ("{el.text or el.desc}")' if el is not None and (el.text or el.desc) else ""
    if name in ("tap", "long_press"):
        return f"ok: {name.replace('_', ' ')} on element {args['index']}{label}"
    if name == "type_text":
        return f"ok: typed {json.dumps(args['text'], ensure_ascii=False)} into element {args['index']}{label}" + \
            (" and pressed Enter" if args.get("submit") else "")
    if name == "swipe":
        return f"ok: swiped {args['direction']}" + (f" in element {args['index']}" if "index" in args else "")
    if name == "open_app":
        return f"ok: opened {args['name']}"
    if name == "wait":
        return f"ok: waited {args['seconds']:g} s"
    return f"ok: {name}"


# -- the loop ---------------------------------------------------------------------------------------


@dataclass
class Observation:
    xml: str
    screen: Any
    text: str


def observe_xml(xml: str) -> Observation:
    """Parse and render a dump; an unreadable dump is the phone's failure (PhoneError)."""
    from agent_host.phone import observe
    from agent_host.phone.device import PhoneError
    try:
        screen = observe.parse(xml)
    except ValueError as exc:
        raise PhoneError(f"unreadable hierarchy dump: {exc} ({xml[:80]!r})") from exc
    return Observation(xml, screen, observe.render(screen))


def round_trips(phone: Any) -> tuple[int, int] | None:
    """The phone's (critical, background) round trip counts so far (None: not counted)."""
    counter = getattr(phone, "round_trips", None)
    return counter.snapshot() if counter is not None else None


def trips_since(phone: Any, before: tuple[int, int] | None) -> RoundTrips | None:
    now = round_trips(phone)
    if now is None or before is None:
        return None
    return RoundTrips(critical=now[0] - before[0], background=now[1] - before[1])


@dataclass
class LoopState:
    goals: list[bool]
    steps: int = 0
    wasted: int = 0
    complete_step: int | None = None
    infeasible_step: int | None = None
    reason: str | None = None
    stop: str | None = None            # why the loop ended early (context window)
    usage: Usage = field(default_factory=Usage)
    times: PhaseTimes = field(default_factory=PhaseTimes)


class StepLoop:
    """Runs the steps of one episode after setup; the episode owns files and records."""

    def __init__(self, *, goal: str, phone: Any, model: ModelClient, judge: Any, profile: Any,
                 max_steps: int, first: Observation, goal_initial: bool,
                 screenshot: Callable[[int], str | None] | None = None,
                 before_act: Callable[[], None] | None = None,
                 write_step: Callable[[StepRecord], None] | None = None,
                 settle_s: float = 3.0, settle_min_s: float = 0.0):
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
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": prompts.system_prompt(self.apps)}]
        self.state = LoopState(goals=[goal_initial])
        self._carry_error: str | None = None     # an unanswered invalid reply of the last step

    def run(self) -> LoopState:
        for n in range(1, self.max_steps + 1):
            if not self.step(n):
                break
        return self.state

    def _ask(self, times: PhaseTimes, usage: Usage, raws: list[dict[str, Any]]) -> dict[str, Any]:
        reply = self.model.chat(self.messages, self.tools)
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
        st = self.state
        times = PhaseTimes()
        usage = Usage()
        t0 = time.monotonic()
        trips0 = round_trips(self.phone)
        obs = self.obs
        shot = self.screenshot(n)
        times.observe += time.monotonic() - t0

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
                message = self._ask(times, usage, raws)
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
            return False

        t_b = time.monotonic()
        self.before_act()            # the screenshot of this screen was taken while the model ran
        times.observe += time.monotonic() - t_b
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
            action = act(self.phone, parsed, obs.screen, self.profile)
            times.act += time.monotonic() - t1
            result = describe_result(action, obs.screen)
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
                xml = self.phone.settle(self.settle_s, min_s=0.0 if parsed.name == "wait" else self.settle_min_s)
                next_obs = observe_xml(xml)
                times.settle += time.monotonic() - t2
                goal_screen = next_obs.screen
                if parsed.call_id is not None:
                    self._answer_calls(self.messages[-1], result)
                else:
                    self.messages.append({"role": "user", "content": f"Result: {result}"})
        if parsed is None:
            t2 = time.monotonic()
            xml = self.phone.settle(self.settle_s)
            next_obs = observe_xml(xml)
            times.settle += time.monotonic() - t2
            goal_screen = next_obs.screen

        t3 = time.monotonic()
        verdict = self.judge.evaluate(self.phone, goal_screen)
        times.judge += time.monotonic() - t3
        st.goals.append(verdict.goal)
        st.steps = n
        for k in ("observe", "model", "act", "settle", "judge"):
            setattr(st.times, k, getattr(st.times, k) + getattr(times, k))
        st.usage.prompt_tokens += usage.prompt_tokens
        st.usage.completion_tokens += usage.completion_tokens
        if usage.cached_tokens is not None:
            st.usage.cached_tokens = (st.usage.cached_tokens or 0) + usage.cached_tokens
        self.write_step(StepRecord(
            step=n, observation=obs.text, package=obs.screen.package or None, screenshot=shot,
            usage=usage, raw_output=raw_output, action=action, retry_error=retry_error,
            times=times, wall_s=round(time.monotonic() - t0, 4),
            round_trips=trips_since(self.phone, trips0), goal=verdict.goal, check_detail=verdict.detail))
        self.obs = next_obs
        return cont
