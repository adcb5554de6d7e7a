"""The fidelity probe: does a build answer what the reference build answers?

N agent-style prompts (a phone screen + a goal, asking for the next action) go to the
reference and to every build, greedy (temperature 0, same seed), with the agent's tools when
the caller gives them (the CLI passes the agent's own tool schemas and tool choice). An
*answer* is what an agent build says: its tool calls (name and the canonical JSON of the
arguments, in order) and its content. Per build: how many answers match the reference's
exactly (calls and content both identical), and the median token position of the first
divergence among those that differ, measured over the serialized answer (`Answer.serialized`).

The reference is asked every prompt twice on the same server: if it disagrees with itself,
serving is not deterministic and the report says so (exact counts then mean little).

Builds are served one at a time through the lifecycle API (`serving.server.start`); `openai`
builds are only checked for readiness. Tokens come from the build's own `/tokenize` endpoint
(vLLM's `{"prompt"}` or llama.cpp's `{"content"}` form), which tokenizes both the build's and
the reference's serialized answers, so positions are in one tokenizer. Without `/tokenize`
the comparison falls back to whitespace-separated words and says so (`unit`).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
from pydantic import Field

from agent_host.config.builds import Build
from agent_host.config.strict import Closed
from agent_host.config.loading import load_model
from agent_host.config.requests import Json, JsonValue, calls_schema, with_json_call
from agent_host.errors import UserError
from agent_host.serving.endpoint import Endpoint

if TYPE_CHECKING:
    from agent_host.serving.server import ManagedServer

DEFAULT_PROMPTS = Path(__file__).parent / "data" / "fidelity_prompts.yaml"
UNIT_TOKENS = "tokens"
UNIT_WORDS = "whitespace words"


# ------------------------------------------------------------------------------ prompts

class Prompt(Closed):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    goal: str
    screen: str
    history: list[str] = Field(default_factory=list)


class PromptSet(Closed):
    system: str
    prompts: list[Prompt] = Field(min_length=1)


def load_prompts(path: Path | str | None = None) -> PromptSet:
    ps = load_model(Path(path) if path else DEFAULT_PROMPTS, PromptSet)
    seen: set[str] = set()
    for p in ps.prompts:
        if p.id in seen:
            raise UserError(f"{path or DEFAULT_PROMPTS}: prompts: id {p.id!r} appears twice")
        seen.add(p.id)
    return ps


def messages(ps: PromptSet, p: Prompt) -> list[Json]:
    done = "\n".join(f"- {h}" for h in p.history) if p.history else "(none yet)"
    user = (f"Goal: {p.goal}\n\nActions so far:\n{done}\n\nCurrent screen:\n{p.screen}\n\n"
            "What is the next action?")
    return [{"role": "system", "content": ps.system}, {"role": "user", "content": user}]


# ---------------------------------------------------------------------------- answers

def canonical_arguments(arguments: JsonValue) -> str:
    """Arguments as canonical JSON (sorted keys, no spaces), so `{"a":1, "b":2}` and
    `{"b": 2, "a": 1}` compare equal. A string that is not JSON is kept verbatim (a
    malformed call differs from every well-formed one)."""
    if isinstance(arguments, str):
        text = arguments
        try:
            arguments = json.loads(text)
        except ValueError:
            return text
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Answer:
    content: str = ""
    calls: tuple[tuple[str, str], ...] = ()     # (name, canonical JSON of the arguments)

    @classmethod
    def from_message(cls, message: Json) -> Answer:
        calls: list[tuple[str, str]] = []
        for c in message.get("tool_calls") or []:
            fn = c.get("function") or {}
            calls.append((str(fn.get("name", "")), canonical_arguments(fn.get("arguments", ""))))
        return cls(message.get("content") or "", tuple(calls))

    def serialized(self) -> str:
        """One text for token positions and display: the content, then one line per call,
        `name {json}`."""
        lines = [self.content] if self.content else []
        lines += [f"{name} {args}" for name, args in self.calls]
        return "\n".join(lines)


# --------------------------------------------------------------------- pure comparison

def whitespace_tokens(text: str) -> list[str]:
    """Words with their leading whitespace (so a whitespace-only change still diverges)."""
    return re.findall(r"\s*\S+|\s+$", text)


def first_divergence(a: Sequence[object], b: Sequence[object]) -> int | None:
    """Index of the first differing token; None when the sequences are equal. A sequence that
    is a strict prefix of the other diverges at its end."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


@dataclass
class PromptResult:
    prompt: str
    exact: bool
    divergence: int | None           # position of the first difference (None when exact)
    length: int                       # the build's serialized answer, in `unit`
    reference_length: int
    finish_reason: str | None = None
    answer: str = ""                  # the build's serialized answer
    reference: str = ""               # the reference's serialized answer
    calls_match: bool = True          # tool calls identical (names and arguments, in order)
    content_match: bool = True


@dataclass
class BuildResult:
    build: str
    weight_path: str
    unit: str                         # "tokens" or "whitespace words"
    results: list[PromptResult] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None

    @property
    def exact(self) -> int:
        return sum(r.exact for r in self.results)

    @property
    def calls_exact(self) -> int:
        return sum(r.calls_match for r in self.results)

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def median_divergence(self) -> float | None:
        pos = [r.divergence for r in self.results if r.divergence is not None]
        return statistics.median(pos) if pos else None

    def to_json(self) -> dict[str, object]:
        return {"build": self.build, "weight_path": self.weight_path, "unit": self.unit,
                "exact": self.exact, "calls_exact": self.calls_exact, "total": self.total,
                "median_divergence": self.median_divergence,
                "seconds": round(self.seconds, 1), "error": self.error,
                "prompts": [asdict(r) for r in self.results]}


def _as_answer(a: Answer | str) -> Answer:
    return a if isinstance(a, Answer) else Answer(a)


def compare(build: str, weight_path: str, prompt_ids: list[str], ref_answers: Sequence[Answer | str],
            answers: Sequence[Answer | str], *, ref_tokens: Sequence[Sequence[object]] | None = None,
            tokens: Sequence[Sequence[object]] | None = None,
            finish: list[str | None] | None = None) -> BuildResult:
    """Compare one build's answers with the reference's (a plain string is an answer with
    that content and no calls). Exact means calls and content both identical; positions use
    `tokens`/`ref_tokens` (of the serialized answers) when both are given, else whitespace
    words of the serialized answers."""
    if not (len(prompt_ids) == len(ref_answers) == len(answers)):
        raise ValueError("prompt, reference and build answers differ in number")
    use_tokens = tokens is not None and ref_tokens is not None
    unit = UNIT_TOKENS if use_tokens else UNIT_WORDS
    out = BuildResult(build, weight_path, unit)
    for i, pid in enumerate(prompt_ids):
        ra, ba = _as_answer(ref_answers[i]), _as_answer(answers[i])
        rs, bs = ra.serialized(), ba.serialized()
        a = ref_tokens[i] if ref_tokens is not None and tokens is not None else whitespace_tokens(rs)
        b = tokens[i] if ref_tokens is not None and tokens is not None else whitespace_tokens(bs)
        calls_match, content_match = ra.calls == ba.calls, ra.content == ba.content
        exact = calls_match and content_match
        div = None if exact else first_divergence(a, b)
        if not exact and div is None:  # equal tokens, different answers (e.g. a lossy tokenizer)
            div = len(a)
        out.results.append(PromptResult(pid, exact, div, len(b), len(a),
                                        finish[i] if finish else None, bs, rs,
                                        calls_match, content_match))
    return out


# ------------------------------------------------------------------------ server calls

def _headers(ep: Endpoint) -> dict[str, str]:
    return {"Authorization": f"Bearer {ep.api_key}"} if ep.api_key else {}


def _root(ep: Endpoint) -> str:
    u = ep.base_url.rstrip("/")
    return u[:-3] if u.endswith("/v1") else u


def complete(ep: Endpoint, msgs: list[Json], *, max_tokens: int, seed: int,
             tools: list[Json] | None = None, tool_choice: str | None = None,
             timeout: float = 600.0) -> tuple[Answer, str | None]:
    """One greedy chat completion: (answer, finish_reason). With `tools`, one call at a time
    (parallel_tool_calls false), as the agent asks."""
    body: Json = {"model": ep.model, "messages": msgs, "max_tokens": max_tokens,
                            "temperature": 0.0, "top_p": 1.0, "seed": seed, "n": 1}
    if tools:
        body.update(tools=tools, parallel_tool_calls=False)
        if tool_choice:
            body["tool_choice"] = tool_choice
        if ep.calls_as_json:
            body["response_format"] = calls_schema(tools)
    from agent_host import watchdog
    try:  # a total limit: httpx's bounds each read, and a trickling server never trips it
        r = watchdog.call(lambda: httpx.post(f"{ep.base_url.rstrip('/')}/chat/completions", headers=_headers(ep),
                                             timeout=timeout, json=body), timeout + 1.0, "chat completion")
    except watchdog.Overdue as exc:
        raise UserError(f"build {ep.build_id}: {exc} (--request-timeout)") from None
    if r.status_code != 200:
        raise UserError(f"build {ep.build_id}: chat completion failed: HTTP {r.status_code}: {r.text[:300]}")
    try:
        choice = r.json()["choices"][0]
        message = choice.get("message") or {}
        if tools and ep.calls_as_json:
            message = with_json_call(message)
        return Answer.from_message(message), choice.get("finish_reason")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise UserError(f"build {ep.build_id}: the server's answer is not a chat completion: {r.text[:200]!r}") from None


def tokenizer(ep: Endpoint, *, timeout: float = 60.0) -> Callable[[str], list[int]] | None:
    """A function text -> token ids using the server's /tokenize, or None if it has none."""
    url = _root(ep) + "/tokenize"
    forms: list[Callable[[str], Json]] = [
        lambda t: {"model": ep.model, "prompt": t, "add_special_tokens": False},  # vLLM
        lambda t: {"content": t, "add_special": False},                            # llama.cpp
    ]
    for form in forms:
        try:
            r = httpx.post(url, json=form("Hello world"), headers=_headers(ep), timeout=timeout)
        except httpx.HTTPError:
            return None
        if r.status_code == 200 and isinstance(r.json().get("tokens"), list):
            def tok(text: str, form: Callable[[str], Json] = form) -> list[int]:
                if not text:
                    return []
                resp = httpx.post(url, json=form(text), headers=_headers(ep), timeout=timeout)
                resp.raise_for_status()
                return [t if isinstance(t, int) else t.get("id") for t in resp.json()["tokens"]]
            return tok
        if r.status_code == 404:
            return None
    return None


# ------------------------------------------------------------------------------ running

@dataclass
class FidelityReport:
    reference: str
    prompts: list[str]
    max_tokens: int
    seed: int
    builds: list[BuildResult]
    reference_answers: list[str]                       # serialized
    reference_unstable: list[str] = field(default_factory=list)  # prompts it answered differently twice
    tools: bool = False                                # the agent's tools were offered

    @property
    def reference_deterministic(self) -> bool:
        return not self.reference_unstable

    def to_json(self) -> dict[str, object]:
        return {"reference": self.reference, "prompts": self.prompts, "max_tokens": self.max_tokens,
                "seed": self.seed, "tools": self.tools,
                "reference_deterministic": self.reference_deterministic,
                "reference_unstable_prompts": self.reference_unstable,
                "builds": [b.to_json() for b in self.builds],
                "reference_answers": dict(zip(self.prompts, self.reference_answers))}


Hook = Callable[[str], None]


def _runnable(build: Build) -> None:
    if not build.runnable:
        raise UserError(f"build {build.id} is listed but not runnable: {build.notes.strip()}")


def _served(build: Build, *, log_dir: Path, seed: int, startup_timeout: float | None) -> ManagedServer:
    from agent_host.serving.server import start

    _runnable(build)
    return start(build, log_dir=log_dir, seed=seed, startup_timeout=startup_timeout)


def run_fidelity(builds: list[Build], reference: Build, *, prompts: PromptSet | None = None,
                 max_tokens: int = 128, seed: int = 0, log_dir: Path,
                 tools: list[Json] | None = None, tool_choice: str | None = None,
                 startup_timeout: float | None = None, hook: Hook = lambda s: None,
                 keep_going: bool = True, request_timeout: float = 600.0,
                 served: Callable[..., AbstractContextManager[ManagedServer]] | None = None,
                 requests: list[tuple[str, list[Json]]] | None = None) -> FidelityReport:
    """Serve the reference, then each build in turn, and compare their greedy answers.

    A build that fails to start or answer gets an `error` (with `keep_going`) instead of
    ending the whole probe; the reference failing ends it. `served(build, log_dir=, seed=,
    startup_timeout=)`, if given, gives a build's server as a context manager (the demo's keeps
    it up); else each is started here and stopped once asked. `requests` (id, messages), if
    given, are asked instead of `prompts` (screenshot prompts for a vision reference: cli/fidelity).
    """
    def open_server(build: Build) -> AbstractContextManager[ManagedServer]:
        if served is None:
            return _served(build, log_dir=log_dir, seed=seed, startup_timeout=startup_timeout)
        _runnable(build)
        return served(build, log_dir=log_dir, seed=seed, startup_timeout=startup_timeout)

    if requests is not None:
        ids, msgs = [i for i, _ in requests], [m for _, m in requests]
    else:
        ps = prompts or load_prompts()
        ids, msgs = [p.id for p in ps.prompts], [messages(ps, p) for p in ps.prompts]

    def collect(ep: Endpoint, label: str) -> tuple[list[Answer], list[str | None]]:
        answers: list[Answer] = []
        finish: list[str | None] = []
        for i, m in enumerate(msgs):
            hook(f"{label}: prompt {i + 1}/{len(msgs)}")
            a, f = complete(ep, m, max_tokens=max_tokens, seed=seed, tools=tools, tool_choice=tool_choice,
                            timeout=request_timeout)
            answers.append(a)
            finish.append(f)
        return answers, finish

    hook(f"starting reference {reference.id}")
    with open_server(reference) as srv:
        ref, _ = collect(srv.endpoint, f"reference {reference.id}")
        again, _ = collect(srv.endpoint, f"reference {reference.id} (again, determinism)")
    unstable = [pid for pid, a, b in zip(ids, ref, again) if a != b]
    results: list[BuildResult] = []
    for b in builds:
        t0 = time.monotonic()
        try:
            hook(f"starting {b.id}")
            with open_server(b) as srv:
                ep = srv.endpoint
                answers, finish = collect(ep, b.id)
                tok = tokenizer(ep)
                tokens: list[list[int]] | None = None
                ref_tokens: list[list[int]] | None = None
                if tok is not None:
                    hook(f"{b.id}: tokenizing")
                    tokens = [tok(a.serialized()) for a in answers]
                    ref_tokens = [tok(a.serialized()) for a in ref]
            res = compare(b.id, b.weight_path, ids, ref, answers, ref_tokens=ref_tokens,
                          tokens=tokens, finish=finish)
        except (UserError, httpx.HTTPError) as exc:
            if not keep_going:
                raise
            res = BuildResult(b.id, b.weight_path, UNIT_WORDS, error=str(exc).splitlines()[0])
        res.seconds = time.monotonic() - t0
        results.append(res)
    return FidelityReport(reference.id, ids, max_tokens, seed, results, [a.serialized() for a in ref],
                          unstable, bool(tools))
