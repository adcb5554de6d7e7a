"""bench/server_start.py splits a server start into phases from its log lines' arrival times."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "server_start.py"

LOG = """\
[agent-host 2026-12-04T17:48:26Z] starting build embedded-bf16 (vllm) on port 47069
Triton is installed, but doesn't include CPU backend. Disabling Triton.
(APIServer pid=7883) INFO 12-04 17:48:42 [api_utils.py:347] version 0.32.0
(APIServer pid=7883) INFO 12-04 17:48:43 [model.py:2152] Using max model len 8192
(EngineCore pid=8038) INFO 12-04 17:49:00 [core.py:133] Initializing a V1 LLM engine (v0.32.0)
(EngineCore pid=8038) INFO 12-04 17:49:01 [cpu_model_runner.py:68] Starting to load model /m...
Loading safetensors checkpoint shards: 100% Completed | 1/1
(EngineCore pid=8038) INFO 12-04 17:49:02 [default_loader.py:501] Loading weights took 0.73 seconds
(EngineCore pid=8038) INFO 12-04 17:49:06 [core.py:402] init engine (profile, create kv cache, warmup model) took 2.45 s
(APIServer pid=7883) INFO 12-04 17:49:07 [entry.py:140] Starting vLLM server on http://127.0.0.1:47069
INFO:     Application startup complete.
"""
# arrival times: the lines above, in seconds after the spawn
TIMES = [0.0, 14.0, 16.0, 17.0, 34.0, 35.0, 36.0, 36.5, 40.0, 41.0, 41.5]


def _bench():
    spec = importlib.util.spec_from_file_location("server_start", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_phases_from_the_lines_arrival():
    ss = _bench()
    lines = list(zip(TIMES, LOG.splitlines()))
    row = ss.phases(0.0, lines, ready=44.0)
    assert {k: row[k] for k in ss.PHASES} == {"import": 16.0, "engine process": 18.0, "engine init": 1.0,
                                              "weights": 1.5, "kv cache": 3.5, "server": 1.5, "ready": 2.5}
    assert row["total"] == 44.0 and row["weights_vllm_says"] == 0.73
    assert row["processes"] == ["APIServer", "EngineCore"]


def test_a_phase_whose_line_is_missing_counts_in_the_next():
    ss = _bench()
    lines = [(t, ln) for t, ln in zip(TIMES, LOG.splitlines()) if "init engine" not in ln]
    row = ss.phases(0.0, lines, ready=44.0)
    assert row["kv cache"] is None and row["server"] == 5.0
