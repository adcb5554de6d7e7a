"""A two-build run, as a user makes one, reports what its design can detect.

Two scripted suite-policy builds over a few tasks of several apps (base and verify variants,
an infeasible task, two instances sharing a goal) on one virtual phone, through `agent-host
run`. The reference build plays every reference (so it succeeds everywhere, verify variants
included); the flawed one sometimes stops short of task_complete. The report must carry the
minimum detectable difference of the comparison, computed from the per-task differences the
run recorded, and the design's power section.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from agent_host.report import power, selection
from agent_host.runs.store import read_records

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TASKS = ["wifi-off", "bluetooth-on", "dnd-on", "sms-unread-count", "calllog-last-caller", "fm-radio-on",
         "files-new-folder", "calendar-when"]


def test_two_build_run_reports_its_minimum_detectable_difference(tmp_path, virtual_phone_factory):
    phone = virtual_phone_factory()
    (tmp_path / "reference.yaml").write_text(f"suite: [{ROOT / 'tasks'}]\n")
    (tmp_path / "flawed.yaml").write_text(f"suite: [{ROOT / 'tasks'}]\nflaws: {{unrecognised: 0.5}}\n")
    hosts = tmp_path / "scripted.yaml"
    hosts.write_text(f"""\
id: scripted
description: two scripted builds
hardware_class: x86-avx2
builds:
  - {{id: reference, weight_path: scripted, server: policy, script: {tmp_path / 'reference.yaml'}}}
  - {{id: flawed, weight_path: scripted, server: policy, script: {tmp_path / 'flawed.yaml'}}}
""")
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "agent_host", "run", "--builds", "reference,flawed", "--host-profile", str(hosts),
         "--tasks", ",".join(TASKS), "--variants", "base,verify", "--seed", "3", "--phones", phone.serial,
         "--out", str(run_dir), "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    records = read_records(run_dir / "episodes.jsonl")
    ref = {selection.instance_of(r): r for r in records if r.build == "reference"}
    flawed = {selection.instance_of(r): r for r in records if r.build == "flawed"}
    assert len(ref) == len(flawed) > len(TASKS), "every task instance, verify variants too, for both builds"
    assert any(u.endswith("@verify") for u in ref)
    # The reference build is the reference: every instance (verify variants, instances that
    # share a goal, the infeasible task) ends as `tasks check-solutions` requires.
    assert all(selection.is_success(r) for r in ref.values()), {u: r.outcome for u, r in ref.items()}

    # the unit is the task: its instances (parameter sets) pooled, one repeat each; success and
    # so the comparison are over base variants (verify variants feed recognition only)
    base = sorted(u for u in ref if ref[u].variant == "base")
    by_task: dict[str, list[float]] = {}
    for u in base:
        by_task.setdefault(selection.cluster_of(flawed[u]), []).append(float(selection.is_success(flawed[u])))
    diffs = [statistics.mean(v) - 1.0 for _, v in sorted(by_task.items())]
    assert len(diffs) == len(TASKS) and flawed[sorted(ref)[0]].task_id is not None
    assert 0 < -sum(diffs) < len(diffs), "the seed should make the flawed build fail some, not all; pick another"
    expected = power.min_detectable_effect(statistics.stdev(diffs), len(diffs))["value"]

    results = json.loads((run_dir / "results.json").read_text())
    (comp,) = results["comparisons"]
    assert comp["n_tasks"] == len(diffs) and comp["n_instances"] == len(base)
    assert comp["mde"]["value"] == pytest.approx(expected)
    assert results["power"]["mde"] is not None and results["power"]["tasks"] == len(diffs)

    md = (run_dir / "report.md").read_text()
    assert "What this design can detect" in md
    assert f"{100 * comp['mde']['value']:.1f}" in md, "the comparison table prints the observed MDE"
    assert f"**{100 * results['power']['mde']:.0f} pp**" in md
