"""The speed figures derived from vLLM's /metrics series (config/server_metrics.py), the one
rule the agent's records, the report and serving's summaries all use."""

from __future__ import annotations

import errno

import pytest

from agent_host.config import server_metrics as m
from agent_host.errors import is_disk_error


def test_decode_speed_prefers_inter_token_latency_then_time_per_output_token():
    itl = {f"{m.ITL}_count": 100.0, f"{m.ITL}_sum": 4.0, f"{m.TPOT}_count": 2.0, f"{m.TPOT}_sum": 0.1}
    assert m.decode_speed(itl) == (25.0, "server metrics: 1 / mean inter-token latency")
    tpot = {f"{m.TPOT}_count": 2.0, f"{m.TPOT}_sum": 0.1}
    speed, source = m.decode_speed(tpot)
    assert speed == pytest.approx(20.0) and source == "server metrics: 1 / mean time per output token"
    assert m.decode_speed({f"{m.ITL}_count": 0.0, f"{m.ITL}_sum": 0.0}) == (None, None)


def test_ttft_and_prefix_hit_rate_need_data():
    assert m.mean_ttft({f"{m.TTFT}_sum": 3.0, f"{m.TTFT}_count": 2.0}) == 1.5
    assert m.mean_ttft({}) is None
    assert m.prefix_hit_rate({m.PREFIX_HITS: 30.0, m.PREFIX_QUERIES: 40.0}) == 0.75
    assert m.prefix_hit_rate({m.PREFIX_HITS: 0.0, m.PREFIX_QUERIES: 0.0}) is None


def test_the_report_and_serving_derive_decode_speed_alike():
    """Before, report/speed.py wrote the rule out again with literal names."""
    from agent_host.serving.metrics import summarize
    d = {f"{m.ITL}_count": 90.0, f"{m.ITL}_sum": 3.0, f"{m.TTFT}_sum": 0.6, f"{m.TTFT}_count": 3.0}
    assert summarize(d)["decode_tok_s"] == m.decode_speed(d)[0] == 30.0
    assert summarize(d)["mean_ttft_s"] == m.mean_ttft(d)


def test_a_disk_error_is_found_through_its_causes():
    full = OSError(errno.ENOSPC, "No space left on device")
    try:
        try:
            raise full
        except OSError as exc:
            raise RuntimeError("while writing the record") from exc
    except RuntimeError as wrapped:
        assert is_disk_error(wrapped)
    assert not is_disk_error(OSError(errno.ENOENT, "gone")) and not is_disk_error(None)


def test_a_disk_error_from_a_rust_library_is_found_by_its_os_error_code():
    # safetensors and tokenizers raise their own types, ending the text as Rust's io::Error does
    class SafetensorError(Exception):
        pass

    assert is_disk_error(SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)"))
    assert not is_disk_error(SafetensorError("I/O error: No such file or directory (os error 2)"))
