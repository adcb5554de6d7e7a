"""Speed of a build's counted episodes, from their records: decode tok/s and TTFT from the
server's /metrics deltas (vLLM's names) when the records carry them, else approximated from the
episodes' own token counts and model time; seconds per step and per phase."""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from agent_host.config.records import EpisodeRecord
from agent_host.config import server_metrics as metrics
from agent_host.report.parts import SpeedPart

# the /metrics series a build's speed is summed from (each episode's delta, over its episodes)
SPEED_SERIES = tuple(f"{name}_{part}" for name in (metrics.ITL, metrics.TPOT, metrics.TTFT)
                     for part in ("sum", "count"))


def _metric(m: dict[str, float], name: str) -> float | None:
    """Sum of a Prometheus series over its labels: keys `name` or `name{...}`."""
    vals = [v for k, v in m.items() if k == name or k.startswith(name + "{")]
    return float(sum(vals)) if vals else None


def speed_summary(records: Sequence[EpisodeRecord]) -> SpeedPart:
    """Speed of counted episodes. Decode tok/s and TTFT come from the server's /metrics
    deltas (vLLM names) when present; otherwise decode speed is approximated as completion
    tokens / model time (which includes prefill and network)."""
    recs = list(records)
    steps = sum(r.steps for r in recs)
    wall = sum(r.wall_s for r in recs)
    model_s = sum(r.times.model for r in recs)
    comp = sum(r.usage.completion_tokens for r in recs)
    prompt = sum(r.usage.prompt_tokens for r in recs)
    images = [r.usage.image_tokens for r in recs if r.usage.image_tokens is not None]
    agg: dict[str, float] = defaultdict(float)
    have = False
    for r in recs:
        if not r.server_metrics:
            continue
        have = True
        for name in SPEED_SERIES:
            v = _metric(r.server_metrics, name)
            if v is not None:
                agg[name] += v
    decode, decode_src = metrics.decode_speed(agg)
    if decode is None and model_s > 0 and comp > 0:
        decode = comp / model_s
        decode_src = "approx: completion tokens / model time (includes prefill)"
    ttft = metrics.mean_ttft(agg)
    n = len(recs)
    cached = [x.cached_share for x in recs if x.cached_share is not None]
    return {
        "episodes": n, "steps": steps,
        "decode_tok_s": decode, "decode_source": decode_src,
        "ttft_s": ttft, "server_metrics": have,
        "step_s": wall / steps if steps else None,
        "model_s_per_step": model_s / steps if steps else None,
        "episode_wall_s": wall / n if n else None,
        "tokens_per_episode": (prompt + comp) / n if n else None,
        "prompt_tokens_per_episode": prompt / n if n else None,
        "completion_tokens_per_episode": comp / n if n else None,
        # a vision build's prompts carry its images: beside a text build of the same model, the cost of seeing
        "prompt_tokens_per_step": prompt / steps if steps else None,
        # of those, the images' (a server that counts them: vLLM); the rest is the text's
        "image_tokens_per_step": sum(images) / steps if steps and images else None,
        # prompt tokens served from the prefix cache (episode records' cached_share, mean)
        "cached_share": (sum(cached) / len(cached)) if cached else None,
        "phase_s_per_step": ({k: sum(getattr(r.times, k) for r in recs) / steps
                              for k in ("observe", "model", "act", "settle", "judge")} if steps else None),
    }
