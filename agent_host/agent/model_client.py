"""The model client: one OpenAI-compatible endpoint, asked the way every build is measured.

`ModelClient.chat(messages, tools) -> Reply` sends the whole (append-only) conversation with
tool_choice="required", parallel_tool_calls=false, the build's sampling and the episode seed;
servers that do not know those two options are asked again without them. Failures of the
server surface as `ServerError`, a conversation too long for the window as `ContextExceeded`.
"""

from __future__ import annotations

import functools
import secrets
import ssl
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from agent_host.config.builds import Sampling
from agent_host.config.records import Usage
from agent_host.config.requests import Json, JsonValue
from agent_host.config.requests import body_sha256, calls_schema, request_body, with_json_call
from agent_host.serving.endpoint import Endpoint, task_header

if TYPE_CHECKING:   # annotations only: openai is imported when a client is made
    import httpx
    import openai
    from openai.types.chat import ChatCompletion, ChatCompletionMessageParam, ChatCompletionToolUnionParam


class ServerError(Exception):
    """The model server failed (connection, timeout, 5xx, auth, unknown model)."""


# A watched request ends this long after its socket timeout would have: the socket timeout
# (the `limit:` labels) fires first for a silent server, the watchdog for one that trickles.
WATCH_MARGIN_S = 1.0


class ContextExceeded(Exception):
    """The conversation no longer fits the server's context window."""




@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every client of this process: httpx loads the CA bundle for each
    new client (~25 ms), once per episode before; the context is safe to share across threads."""
    import httpx
    return httpx.create_ssl_context()


@dataclass
class Reply:
    message: Json          # the assistant message as appended to the conversation
    usage: Usage
    finish_reason: str | None
    seconds: float
    reasoning: str | None = None
    sent: Json | None = None  # end, options and sha256 of the request as sent (requests.json)
    cut: Json | None = None   # what the caps cut: field -> its size as sent (characters, or calls)


class ModelClient:
    """One OpenAI-compatible endpoint, called the way every build is measured."""

    def __init__(self, endpoint: Endpoint, *, sampling: Sampling | None = None, seed: int = 0,
                 timeout: float = 600.0, client: openai.OpenAI | None = None, task: str | None = None,
                 values: int | None = None):
        import openai
        self.endpoint = endpoint
        self.sampling = sampling
        self.seed = seed
        self.headers = task_header(task, values) if task else {}
        self.timeout = timeout    # total seconds per request, enforced by the watchdog
        self.client = client or openai.OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key or "none",
                                              timeout=timeout, max_retries=1,
                                              http_client=openai.DefaultHttpxClient(
                                                  verify=_tls(), event_hooks={"response": [read_bounded]}))
        self.tool_choice: str | None = "required"
        self.parallel: bool | None = False
        self.calls_as_json = bool(endpoint.calls_as_json)

    def max_tokens(self) -> int:
        """The per-reply token cap every request carries."""
        return int(self._kwargs()["max_tokens"])

    def _kwargs(self) -> Json:
        s = self.sampling
        kw: Json = {
            "temperature": s.temperature if s is not None else 0.0,
            "top_p": s.top_p if s is not None else 1.0,
            "max_tokens": s.max_tokens if s is not None else 256,
            "seed": self.seed,
        }
        if self.tool_choice:
            kw["tool_choice"] = self.tool_choice
        if self.parallel is not None:
            kw["parallel_tool_calls"] = self.parallel
        return kw

    def chat(self, messages: list[Json], tools: list[Json]) -> Reply:
        import openai

        from agent_host import watchdog
        t0 = time.monotonic()
        for _ in range(3):
            options = self._kwargs()
            if self.calls_as_json:
                options["response_format"] = calls_schema(tools)
            # hashed before sending: the reply is appended to `messages` afterwards
            sent = {"end": len(messages), "options": options,
                    "sha256": body_sha256(request_body(self.endpoint.model, messages, tools, options))}
            try:
                resp = watchdog.call(lambda: self.client.chat.completions.create(
                    # the harness keeps OpenAI's JSON as plain dicts; the SDK's TypedDicts describe the same JSON
                    model=self.endpoint.model, messages=cast("list[ChatCompletionMessageParam]", messages),
                    tools=cast("list[ChatCompletionToolUnionParam]", tools),
                    extra_headers=self.headers or None, **options), self.timeout + WATCH_MARGIN_S, "model request")
                break
            except watchdog.Overdue as exc:
                raise ServerError(f"{exc}: the server kept the request open without finishing it "
                                  f"(total limit per request: --request-timeout)") from exc
            except BodyTooLarge as exc:
                raise ServerError(str(exc)) from exc
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
                if isinstance(exc.__cause__, BodyTooLarge):
                    raise ServerError(str(exc.__cause__)) from exc
                raise ServerError(f"{type(exc).__name__}: {exc}") from exc
            except (openai.APIResponseValidationError, ValueError) as exc:  # a body that is not JSON
                raise ServerError(f"malformed answer: {type(exc).__name__}: {exc}"[:300]) from exc
        else:  # pragma: no cover - each retry changes one option, so this cannot loop
            raise ServerError("server rejected the request")
        seconds = watchdog.elapsed(t0)
        try:
            return self._reply(resp, seconds, sent)
        except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
            # a body that is not a chat completion (a JSON list, `choices: [null]`, ...)
            raise ServerError(f"malformed answer: not a chat completion ({type(exc).__name__}: {exc})"[:300]) from exc

    def _reply(self, resp: ChatCompletion | str | bytes, seconds: float, sent: Json | None = None) -> Reply:
        # getattr below: the SDK builds a reply from the server's JSON without validating it,
        # so a field may be absent or of another type (and reasoning_content is no SDK field)
        if isinstance(resp, (str, bytes)) or not getattr(resp, "choices", None):
            raise ServerError("server answered without choices" if not isinstance(resp, (str, bytes)) else
                              f"malformed answer: not JSON ({str(resp)[:120]!r})")
        cap = self.max_tokens() * CHARS_PER_TOKEN
        cut: Json = {}
        choice = resp.choices[0]
        msg = choice.message
        message: Json = {"role": "assistant", "content": capped(msg.content, cap, cut, "content")}
        calls = []
        all_calls = msg.tool_calls or []
        if len(all_calls) > REPLY_CAPS["tool_calls"]:
            cut["tool_calls"] = len(all_calls)
        for i, c in enumerate(all_calls[:REPLY_CAPS["tool_calls"]]):
            fn = getattr(c, "function", None)
            calls.append({"id": capped(c.id, REPLY_CAPS["id"], cut, f"tool_calls[{i}].id")
                          or f"call_{secrets.token_hex(6)}", "type": "function",
                          "function": {"name": capped(getattr(fn, "name", "") or "", REPLY_CAPS["name"], cut,
                                                      f"tool_calls[{i}].function.name"),
                                       "arguments": capped(getattr(fn, "arguments", "") or "", cap, cut,
                                                           f"tool_calls[{i}].function.arguments")}})
        if calls:
            message["tool_calls"] = calls
        if self.calls_as_json:
            message = with_json_call(message)
        reasoning = getattr(msg, "reasoning_content", None) or (msg.model_extra or {}).get("reasoning_content")
        usage = Usage()
        if resp.usage is not None:
            details = getattr(resp.usage, "prompt_tokens_details", None)
            usage = Usage(prompt_tokens=resp.usage.prompt_tokens or 0,
                          completion_tokens=resp.usage.completion_tokens or 0,
                          cached_tokens=getattr(details, "cached_tokens", None) if details else None,
                          image_tokens=_image_tokens(details))
        finish = capped(choice.finish_reason, REPLY_CAPS["finish_reason"], cut, "finish_reason")
        reasoning = capped(reasoning, cap, cut, "reasoning_content")
        return Reply(message, usage, finish, seconds, reasoning, sent, cut or None)


def _image_tokens(details: object) -> int | None:
    """vLLM's `prompt_tokens_details.multimodal_tokens` ({"image": N}), which the SDK's model
    does not declare (it keeps it among its extra fields); None where a server counts none."""
    extra = getattr(details, "model_extra", None) or {}
    counts = extra.get("multimodal_tokens")
    if not isinstance(counts, dict):
        return None
    n = counts.get("image")
    return n if isinstance(n, int) and not isinstance(n, bool) else None


# What is kept of a reply: the request's max_tokens at a generous 32 characters a token. A
# server that ignores max_tokens (one sent 20 MB replies) would otherwise fill the episode
# folder, the conversation sent back and the report.
CHARS_PER_TOKEN = 32
TRUNCATED = " [truncated by agent-host: {n} more characters past max_tokens]"


# Every other field of a reply is capped here too, the one place the caps are defined: a
# misbehaving server sent a 5 MB tool-call id (a 234 MB run folder), a 5 MB finish_reason and
# 5,000 tool calls in one reply. Only the first tool call is acted on; a few more are kept.
REPLY_CAPS = {"id": 200, "name": 200, "finish_reason": 64, "tool_calls": 16}
# The whole response body, after decompression: a gzip body of 1 MB inflated to 1 GB. Generous
# beside the largest kept reply (max_tokens x 32 characters, a few MB).
MAX_BODY_BYTES = 32 * 1024 * 1024


def capped(text: JsonValue, most: int, cut: Json | None = None, field: str = "") -> JsonValue:
    """`text` cut to `most` characters, the cut marked (and its size noted in `cut[field]`);
    anything not a string as it is."""
    if not isinstance(text, str) or len(text) <= most:
        return text
    if cut is not None:
        cut[field] = len(text)
    return text[:most] + TRUNCATED.format(n=len(text) - most)


class BodyTooLarge(Exception):
    """A response body past MAX_BODY_BYTES (openai wraps it in APIConnectionError)."""


def read_bounded(response: httpx.Response) -> None:
    """An httpx response hook: read the body, decompressed, refusing it past MAX_BODY_BYTES.

    Read chunk by chunk (httpx inflates each chunk as it comes), so a compressed bomb is
    stopped after about MAX_BODY_BYTES, never inflated whole; openai then reads the kept bytes."""
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            response.close()
            raise BodyTooLarge(f"malformed answer: the response body is over the {MAX_BODY_BYTES} "
                               f"byte limit (decompressed); refused")
        chunks.append(chunk)
    response._content = b"".join(chunks)  # what response.read() returns from now on
