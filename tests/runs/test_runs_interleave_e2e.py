"""`run --interleave` on the virtual phone: two scripted builds played in the seeded order the
manifest records (one phone, so the log is the play order), both servers up together, and the
report says how the run was ordered."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_host.runs.store import read_records

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_interleaved_run_follows_the_recorded_order(tmp_path, virtual_phone_factory):
    phone = virtual_phone_factory()
    (tmp_path / "oracle.yaml").write_text(f"suite: [{ROOT / 'tasks'}]\n")
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(f"""\
id: scripted
description: two scripted builds
hardware_class: x86-avx2
builds:
  - {{id: a, weight_path: scripted, server: policy, script: {tmp_path / 'oracle.yaml'}}}
  - {{id: b, weight_path: scripted, server: policy, script: {tmp_path / 'oracle.yaml'}}}
""")
    run_dir = tmp_path / "run"
    out = subprocess.run([sys.executable, "-m", "agent_host", "run", "--builds", "a,b", "--host-profile", str(hosts),
                          "--tasks", "wifi-on,bluetooth-on,dark-theme-on", "--repeats", "2", "--seed", "5",
                          "--interleave", "--phones", phone.serial, "--out", str(run_dir), "--quiet"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["order_together"] is True and "together" in m["order_mode"]
    order = m["order"]
    assert len(order) == len(set(order)) == 12
    assert order != sorted(order, key=lambda e: e.split("__")[0])       # not build after build
    assert [r.episode_id for r in read_records(run_dir / "episodes.jsonl")] == order
    # each (task, repeat) block holds both builds' episodes, next to each other
    blocks = [tuple(e.split("__")[1:]) for e in order]
    assert all(blocks[i] == blocks[i + 1] for i in range(0, 12, 2))
    md = next(run_dir.rglob("report.md")).read_text()
    assert "interleaved, randomised by the seed" in md
