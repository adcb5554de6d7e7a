"""Doing nothing earns no headline: the two trivial policies, run as scripted builds through
`agent-host run` on a virtual phone, score what the report computes for them from the tasks, and
complete-at-once scores 0% success (before success moved to base variants it scored half of
every task with a verify variant: 31.7% on the shipped suite).

A few tasks of several shapes: feasible with a verify variant, one without, an infeasible one,
one with parameter sets; base and verify variants, 1 repeat, and the suite's own solutions as a
third build, whose headline the report shows beside the trivial baselines.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from agent_host.config.tasks import load_tasks

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TASKS = ["wifi-on", "dnd-on", "fm-radio-on", "alarm-set", "sms-unsend"]


def test_trivial_builds_score_what_the_report_computes_from_the_tasks(tmp_path, virtual_phone_factory):
    phone = virtual_phone_factory()
    (tmp_path / "complete.yaml").write_text("- task_complete: {reason: done}\n")
    (tmp_path / "infeasible.yaml").write_text("- task_infeasible: {reason: cannot}\n")
    (tmp_path / "oracle.yaml").write_text(f"suite: [{ROOT / 'tasks'}]\n")
    hosts = tmp_path / "scripted.yaml"
    hosts.write_text(f"""\
id: scripted
description: the two trivial policies and the suite's solutions
hardware_class: x86-avx2
builds:
  - {{id: complete, weight_path: scripted, server: policy, script: {tmp_path / 'complete.yaml'}}}
  - {{id: infeasible, weight_path: scripted, server: policy, script: {tmp_path / 'infeasible.yaml'}}}
  - {{id: oracle, weight_path: scripted, server: policy, script: {tmp_path / 'oracle.yaml'}}}
""")
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "agent_host", "run", "--builds", "complete,infeasible,oracle", "--host-profile",
         str(hosts), "--tasks", ",".join(TASKS), "--variants", "base,verify", "--phones", phone.serial,
         "--out", str(run_dir), "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    instances = load_tasks(TASKS, variants=("base", "verify"))
    assert any(t.infeasible for t in instances) and any(t.variant == "verify" for t in instances)
    by_task: dict[str, list[float]] = {}
    for t in instances:
        if t.variant == "base":
            by_task.setdefault(t.task_id, []).append(float(t.infeasible))
    infeasible_share = statistics.mean(statistics.mean(v) for v in by_task.values())

    results = json.loads((run_dir / "results.json").read_text())
    builds = {b["build"]: b for b in results["builds"]}
    trivial = results["trivial"]["policies"]
    complete, infeasible = builds["complete"]["rates"], builds["infeasible"]["rates"]
    assert complete["success"]["mean"] == 0.0 and complete["success"]["n_tasks"] == len(TASKS)
    assert infeasible["success"]["mean"] == pytest.approx(infeasible_share)
    assert (complete["sensitivity"]["mean"], complete["specificity"]["mean"]) == (1.0, 0.0)
    assert (infeasible["sensitivity"]["mean"], infeasible["specificity"]["mean"]) == (0.0, 1.0)
    for name, measured in (("complete_at_once", complete), ("infeasible_at_once", infeasible)):
        for figure in ("success", "sensitivity", "specificity"):
            assert trivial[name][figure] == pytest.approx(measured[figure]["mean"]), (name, figure)
    assert builds["oracle"]["rates"]["success"]["mean"] == 1.0

    md = (run_dir / "report.md").read_text()
    line = next(x for x in results["headline"] if x.startswith("Success (base variants"))
    assert "oracle 100.0%" in line and "complete at once 0.0%" in line
    assert f"infeasible at once {100 * infeasible_share:.1f}%" in line
    assert f"**{line}**" in md
    assert "| complete at once | 0.0% | 100.0% | 0.0% | 50.0% |" in md
    html = (run_dir / "report.html").read_text()
    assert 'id="trivial"' in html and "infeasible at once" in html
