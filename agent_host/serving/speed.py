"""Speed of a served build, measured on the server: decode tok/s, TTFT and prefill tok/s from
vLLM's /metrics around a fixed set of greedy requests (each prompt once, a fixed number of
output tokens with ignore_eos, so every build decodes the same count). A server without
/metrics (llama-server) reports its own `timings` in each response: the same figures from
those (TTFT as its prompt time plus one decoded token)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import httpx

from agent_host.serving import metrics
from agent_host.serving.endpoint import Endpoint

if TYPE_CHECKING:
    from agent_host.config.requests import Json

# A build's figures: requests, wall_s, decode_tok_s, mean_ttft_s, prefill_tok_s, prompt_tokens,
# generation_tokens (None where the server gave no data)
Figures = dict[str, float | None]
# llama-server's `timings` of one response: prompt_n, prompt_ms, predicted_n, predicted_ms, ...
Timings = dict[str, float]

# Prefill is measured on uncached tokens: the shared system prompt would otherwise hit the
# prefix cache from the second request on (each server kind's no_prefix_cache_args).


def measure(ep: Endpoint, prompts: list[list[Json]], *, max_tokens: int = 64,
            hook: Callable[[str], None] = lambda s: None) -> Figures:
    """Send each prompt once; figures from the server's metrics delta (None where missing)."""
    headers = {"Authorization": f"Bearer {ep.api_key}"} if ep.api_key else {}
    before = metrics.snapshot(ep) if ep.metrics_url else None
    own: dict[str, bool] = {} if ep.metrics_url else {"cache_prompt": False}   # llama-server's prefix cache off
    timings: list[Timings] = []
    t0 = time.monotonic()
    for i, msgs in enumerate(prompts):
        hook(f"{ep.build_id}: request {i + 1}/{len(prompts)}")
        r = httpx.post(f"{ep.base_url}/chat/completions", headers=headers, timeout=600, json={
            "model": ep.model, "messages": msgs, "max_tokens": max_tokens, "temperature": 0.0,
            "ignore_eos": True, "seed": 0, **own})
        r.raise_for_status()
        timings.append(r.json().get("timings") or {})
    wall = time.monotonic() - t0
    if not ep.metrics_url:
        return from_timings(timings, wall)
    d = metrics.delta(before, metrics.snapshot(ep))
    s = metrics.summarize(d) or {}
    prefill_s = (d or {}).get(f"{metrics.PREFILL}_sum")
    prompt_tokens = s.get("prompt_tokens")
    return {"requests": len(prompts), "wall_s": round(wall, 2),
            "decode_tok_s": s.get("decode_tok_s"), "mean_ttft_s": s.get("mean_ttft_s"),
            "prefill_tok_s": (prompt_tokens / prefill_s) if prefill_s and prompt_tokens else None,
            "prompt_tokens": prompt_tokens, "generation_tokens": s.get("generation_tokens")}


def from_timings(timings: list[Timings], wall: float) -> Figures:
    """The figures from llama-server's per-response `timings` (prompt_n/ms, predicted_n/ms)."""
    tot = {k: sum(float(t.get(k) or 0) for t in timings)
           for k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms")}
    decode = tot["predicted_n"] / (tot["predicted_ms"] / 1000) if tot["predicted_ms"] else None
    ttft = [(float(t.get("prompt_ms") or 0) + float(t.get("predicted_ms") or 0) / max(1, t.get("predicted_n") or 1))
            / 1000 for t in timings if t]
    return {"requests": len(timings), "wall_s": round(wall, 2), "decode_tok_s": decode,
            "mean_ttft_s": sum(ttft) / len(ttft) if ttft else None,
            "prefill_tok_s": tot["prompt_n"] / (tot["prompt_ms"] / 1000) if tot["prompt_ms"] else None,
            "prompt_tokens": int(tot["prompt_n"]) or None, "generation_tokens": int(tot["predicted_n"]) or None}


def ratios(rows: dict[str, Figures], reference: str,
           keys: tuple[str, ...] = ("decode_tok_s", "mean_ttft_s", "prefill_tok_s")) -> dict[str, Figures]:
    """Each build's figure over the reference's, per key (None where either is missing)."""
    ref = rows.get(reference) or {}
    out: dict[str, Figures] = {}
    for bid, row in rows.items():
        out[bid] = {k: _over(row.get(k), ref.get(k)) for k in keys}
    return out


def _over(value: float | None, ref: float | None) -> float | None:
    return value / ref if value and ref else None
