"""Readiness: a server is ready when it can answer, not when its port opens.

Stages (each optional per server kind): `/health` answers 200, `/v1/models` lists the served
name, then ONE warm-up chat completion succeeds (vLLM's /health can be green while the engine
dies on its first request).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from agent_host.serving.endpoint import Endpoint


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


def list_models(ep: Endpoint, *, timeout: float = 10.0) -> list[str]:
    r = httpx.get(f"{ep.base_url.rstrip('/')}/models", headers=_headers(ep), timeout=timeout)
    r.raise_for_status()
    return [m.get("id", "") for m in r.json().get("data", [])]


def warmup_completion(ep: Endpoint, *, timeout: float = 120.0) -> float:
    """One short greedy chat completion; returns its latency in seconds."""
    t0 = time.monotonic()
    r = httpx.post(
        f"{ep.base_url.rstrip('/')}/chat/completions",
        headers=_headers(ep),
        json={"model": ep.model, "messages": [{"role": "user", "content": "Hello"}],
              "max_tokens": 2, "temperature": 0},
        timeout=timeout,
    )
    if r.status_code != 200:
        raise NotReady(f"warm-up completion failed: HTTP {r.status_code}: {r.text[:300]}", "warmup")
    body = r.json()
    if not body.get("choices"):
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
                code = httpx.get(url, timeout=5).status_code
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
                    ep = Endpoint(ep.base_url, ep.api_key, names[0], ep.build_id, ep.metrics_url)
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
