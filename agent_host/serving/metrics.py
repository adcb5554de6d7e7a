"""Server-side speed: vLLM's Prometheus /metrics, snapshotted around an episode.

    before = snapshot(endpoint)
    ... run the episode ...
    after = snapshot(endpoint)
    d = delta(before, after)          # counters and histogram _sum/_count, this episode only
    s = summarize(d)                  # decode tok/s, mean TTFT, prefix-cache hit rate, ...

Only samples labelled `model_name=<served name>` count, summed over their other labels
(engine, finished_reason, ...). Histogram buckets, gauges and `_created` samples are left out:
their difference means nothing. Servers without /metrics (llama.cpp, policy, most `openai`
endpoints) give None; the agent records client-side timings and `usage` instead.

The series names and the figures derived from them are defined once in
agent_host/config/server_metrics.py (the report reads them from records too).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

import httpx

from agent_host.config.server_metrics import (DECODE, E2E, GENERATION, ITL, PREFILL, PREFIX_HITS,  # noqa: F401
                                              PREFIX_QUERIES, PROMPT, REQUESTS, TPOT, TTFT, ratio,
                                              decode_speed, mean_ttft, prefix_hit_rate)
from agent_host.serving.endpoint import Endpoint

# The series names are re-exported for callers (speed.py, tests): metrics.PROMPT, ...
__all__ = ["DECODE", "E2E", "GENERATION", "ITL", "PREFILL", "PREFIX_HITS", "PREFIX_QUERIES", "PROMPT",
           "REQUESTS", "TPOT", "TTFT", "ratio", "decode_speed", "mean_ttft", "prefix_hit_rate",
           "parse", "snapshot", "delta", "summarize"]

_KEEP = ("_total", "_sum", "_count")


Sample = tuple[str, dict[str, str], float]   # name, labels, value


def _samples_prometheus(text: str) -> Iterator[Sample]:
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for s in family.samples:
            yield s.name, s.labels, s.value


_LINE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _samples_simple(text: str) -> Iterator[Sample]:
    """A small parser for the Prometheus text format (used if prometheus_client is absent)."""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                  for k, v in _LABEL.findall(m.group(3) or "")}
        try:
            value = float(m.group(4))
        except ValueError:
            continue
        yield m.group(1), labels, value


def parse(text: str, model: str) -> dict[str, float]:
    """Counter and histogram _sum/_count samples of `model`, summed over the other labels."""
    try:
        samples = list(_samples_prometheus(text))
    except ImportError:
        samples = list(_samples_simple(text))
    out: dict[str, float] = {}
    for name, labels, value in samples:
        if labels.get("model_name") != model or not name.endswith(_KEEP):
            continue
        if math.isnan(value):
            continue
        out[name] = out.get(name, 0.0) + value
    return out


def snapshot(endpoint: Endpoint, *, timeout: float = 5.0) -> dict[str, float] | None:
    """The server's counters now, or None if it has no /metrics (or it cannot be read)."""
    if not endpoint.metrics_url:
        return None
    try:
        r = httpx.get(endpoint.metrics_url, timeout=timeout)
    except httpx.HTTPError:
        return None
    if r.status_code != 200:
        return None
    return parse(r.text, endpoint.model)


def delta(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, float] | None:
    """after - before, per key (a key new in `after` counts from 0). None if either is None.

    A counter that went down means the server restarted between the snapshots: then the
    `after` value is the best estimate of the interval.
    """
    if before is None or after is None:
        return None
    out: dict[str, float] = {}
    for key, value in after.items():
        prev = before.get(key, 0.0)
        out[key] = value - prev if value >= prev else value
    return out


def summarize(d: dict[str, float] | None) -> dict[str, float | None] | None:
    """Derived speed figures from a delta (or a snapshot): None where there is no data."""
    if d is None:
        return None
    g = d.get
    return {
        "requests": g(REQUESTS, g(f"{E2E}_count", 0.0)),
        "prompt_tokens": g(PROMPT, 0.0),
        "generation_tokens": g(GENERATION, 0.0),
        "decode_tok_s": decode_speed(d)[0],
        "mean_ttft_s": mean_ttft(d),
        "mean_tpot_s": ratio(g(f"{TPOT}_sum"), g(f"{TPOT}_count")),
        "mean_e2e_s": ratio(g(f"{E2E}_sum"), g(f"{E2E}_count")),
        "prefix_cache_hit_rate": prefix_hit_rate(d),
        "prefix_cache_queries": g(PREFIX_QUERIES, 0.0),
        "prefix_cache_hits": g(PREFIX_HITS, 0.0),
    }
