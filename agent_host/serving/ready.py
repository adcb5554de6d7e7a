"""Readiness: a server is ready when it can answer, not when its port opens.

Stages (each optional per server kind): `/health` answers 200, `/v1/models` lists the served
name, then ONE warm-up chat completion succeeds (vLLM's /health can be green while the engine
dies on its first request).
"""

from __future__ import annotations

import dataclasses

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx

from agent_host.serving.endpoint import Endpoint

if TYPE_CHECKING:
    from agent_host.config.requests import Json


class NotReady(Exception):
    """Raised when the server died or the deadline passed; `stage` says how far it got."""

    def __init__(self, message: str, stage: str):
        super().__init__(message)
        self.stage = stage


@dataclass
class Readiness:
    health: bool = True          # GET <root>/health must answer 200
    models: bool = True          # GET /v1/models must list the served name
    warmup: bool = True          # one chat completion must succeed
    adopt_model: bool = False    # if the served name is not listed, take the only listed one
    timings: dict[str, float] = field(default_factory=dict)


def root_url(base_url: str) -> str:
    return base_url[:-3] if base_url.rstrip("/").endswith("/v1") else base_url.rstrip("/")


def _headers(ep: Endpoint) -> dict[str, str]:
    return {"Authorization": f"Bearer {ep.api_key}"} if ep.api_key else {}


def _watched(what: str, timeout: float, fn: Callable[[], httpx.Response]) -> httpx.Response:
    """An HTTP call that ends within `timeout` s in total: httpx's timeout bounds each read, so
    a server trickling its body would hold the call (and the run's startup) forever."""
    from agent_host import watchdog
    try:
        return watchdog.call(fn, timeout + 1.0, what)
    except watchdog.Overdue as exc:
        raise httpx.ReadTimeout(f"{exc} (the server kept the request open)") from None


def _json_object(r: httpx.Response, what: str) -> Json:
    """The body as a JSON object, else ValueError naming what came back."""
    try:
        body = r.json()
    except ValueError:
        raise ValueError(f"{what}: the answer is not JSON ({r.text[:120]!r})") from None
    if not isinstance(body, dict):
        raise ValueError(f"{what}: the answer is a JSON {type(body).__name__}, not an object ({r.text[:120]!r})")
    return body


def list_models(ep: Endpoint, *, timeout: float = 10.0) -> list[str]:
    r = _watched("GET /v1/models", timeout, lambda: httpx.get(f"{ep.base_url.rstrip('/')}/models",
                                                              headers=_headers(ep), timeout=timeout))
    r.raise_for_status()
    data = _json_object(r, "/v1/models").get("data", [])
    if not isinstance(data, list):
        raise ValueError(f"/v1/models: `data` is not a list ({r.text[:120]!r})")
    return [str(m.get("id", "")) for m in data if isinstance(m, dict)]


def warmup_completion(ep: Endpoint, *, timeout: float = 120.0) -> float:
    """One short greedy chat completion; returns its latency in seconds."""
    t0 = time.monotonic()
    r = _watched("warm-up completion", timeout, lambda: httpx.post(
        f"{ep.base_url.rstrip('/')}/chat/completions",
        headers=_headers(ep),
        json={"model": ep.model, "messages": [{"role": "user", "content": "Hello"}],
              "max_tokens": 2, "temperature": 0},
        timeout=timeout,
    ))
    if r.status_code != 200:
        raise NotReady(f"warm-up completion failed: HTTP {r.status_code}: {r.text[:300]}", "warmup")
    try:
        body = _json_object(r, "warm-up completion")
    except ValueError as exc:
        raise NotReady(str(exc), "warmup") from None
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise NotReady(f"warm-up completion returned no choices: {str(body)[:300]}", "warmup")
    return time.monotonic() - t0


def wait_ready(ep: Endpoint, how: Readiness, *, deadline: float,
               still_running: Callable[[], bool] = lambda: True,
               poll: float = 0.5) -> Endpoint:
    """Block until `ep` is ready or raise NotReady. Returns the endpoint (model may be adopted).

    `deadline` is a time.monotonic() value; `still_running` is checked between polls so an
    early exit is noticed within `poll` seconds.
    """
    t0 = time.monotonic()
    last = ""

    def check_alive(stage: str) -> None:
        if not still_running():
            raise NotReady(f"the server exited during startup ({stage})", stage)
        if time.monotonic() > deadline:
            raise NotReady(f"not ready after {time.monotonic() - t0:.0f} s (waiting for {stage}"
                           + (f"; last answer: {last}" if last else "") + ")", stage)

    if how.health:
        url = root_url(ep.base_url) + "/health"
        while True:
            check_alive("health")
            try:
                code = _watched("GET /health", 5, lambda: httpx.get(url, timeout=5)).status_code
                if code == 200:
                    break
                last = f"/health: HTTP {code}"
            except httpx.HTTPError as exc:
                last = f"/health: {type(exc).__name__}"
            time.sleep(poll)
        how.timings["health"] = time.monotonic() - t0

    if how.models:
        while True:
            check_alive("models")
            try:
                names = list_models(ep)
                if ep.model in names:
                    break
                if how.adopt_model and len(names) == 1:
                    ep = dataclasses.replace(ep, model=names[0])
                    break
                last = f"/v1/models lists {names}, not {ep.model!r}"
                if names:  # the server answers but serves another name: waiting will not help
                    raise NotReady(last, "models")
            except httpx.HTTPStatusError as exc:
                last = f"/v1/models: HTTP {exc.response.status_code}"
                if exc.response.status_code in (401, 403):
                    raise NotReady(f"{last} (API key rejected)", "models") from None
            except (httpx.HTTPError, ValueError) as exc:
                last = f"/v1/models: {type(exc).__name__}: {exc}"
            time.sleep(poll)
        how.timings["models"] = time.monotonic() - t0

    if how.warmup:
        check_alive("warmup")
        remaining = max(5.0, deadline - time.monotonic())
        try:
            how.timings["warmup_request"] = warmup_completion(ep, timeout=remaining)
        except httpx.HTTPError as exc:
            if not still_running():
                raise NotReady("the server exited during the warm-up completion", "warmup") from None
            raise NotReady(f"warm-up completion failed: {exc}", "warmup") from None
        if not still_running():
            raise NotReady("the server exited after the warm-up completion", "warmup")
        how.timings["warmup"] = time.monotonic() - t0
    return ep
