"""Recognition as a detector (sensitivity, specificity, balanced) and the trivial baselines: the
headline no do-nothing policy earns (docs/reports.md, "Recognition" and "Doing nothing")."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from agent_host.config.records import EpisodeRecord
from agent_host.config.outcome import label
from agent_host.report.load import Run
from agent_host.report.results import analyse
from agent_host.report.trivial import trivial_baselines
from agent_host.config.manifest import RunManifest

_spec = importlib.util.spec_from_file_location("coverage_bench", Path(__file__).parents[2] / "bench" / "coverage.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["coverage_bench"] = bench          # dataclasses look their module up
_spec.loader.exec_module(bench)

# (instance, task id, variant, infeasible): 4 tasks, one with two parameter sets, one infeasible
SUITE = [("wifi-on", "wifi-on", "base", False), ("wifi-on", "wifi-on", "verify", False),
         ("alarm[0]", "alarm", "base", False), ("alarm[0]", "alarm", "verify", False),
         ("alarm-0730", "alarm", "base", False),                       # a custom instance id of `alarm`
         ("dnd-on", "dnd-on", "base", False),                          # no verify variant
         ("fm-radio-on", "fm-radio-on", "base", True)]


def _episode(build: str, inst: tuple, repeat: int, *, goals: list[bool], **end) -> EpisodeRecord:
    task, task_id, variant, infeasible = inst
    j = label(goals, infeasible_task=infeasible, **end)
    return EpisodeRecord(episode_id=f"{build}__{task}__{variant}__r{repeat}", build=build, model="m", task=task,
                         task_id=task_id, variant=variant, infeasible=infeasible, repeat=repeat, phone="p",
                         steps=len(goals) - 1, **j.as_dict())


def _run(records, tasks=SUITE, with_task_id=True) -> Run:
    manifest = {"tasks": [{"key": t, "id": t, "variant": v, "infeasible": inf, **({"task_id": tid} if with_task_id else {})}
                          for t, tid, v, inf in tasks]}
    return Run(Path("/nonexistent-run"), RunManifest.model_validate(manifest), records)


def always_done(build: str = "done", repeats: int = 2) -> list[EpisodeRecord]:
    """task_complete at the first step, as a played script does: the goal is as setup left it."""
    return [_episode(build, i, r, goals=[i[2] == "verify"] * 2, complete_step=1) for i in SUITE for r in range(repeats)]


def never_done(build: str = "never", repeats: int = 2) -> list[EpisodeRecord]:
    return [_episode(build, i, r, goals=[i[2] == "verify"] * 2, infeasible_step=1) for i in SUITE for r in range(repeats)]


def test_always_done_scores_sensitivity_100_specificity_0_and_no_success():
    res = analyse(_run(always_done() + never_done())).as_dict()
    done, never = res["builds"]
    r = done["rates"]
    assert r["sensitivity"]["mean"] == 1.0 and r["specificity"]["mean"] == 0.0
    assert r["success"]["mean"] == 0.0          # pooled with the verify variants it was 2 x 0.5 / 4 = 25%
    assert r["sensitivity"]["n_tasks"] == 2 and r["specificity"]["n_tasks"] == 4 and r["success"]["n_tasks"] == 4
    assert done["balanced"]["mean"] == 0.5 and done["balanced"]["low"] < 0.5 < done["balanced"]["high"]
    n = never["rates"]
    assert n["sensitivity"]["mean"] == 0.0 and n["specificity"]["mean"] == 1.0 and never["balanced"]["mean"] == 0.5
    assert n["success"]["mean"] == pytest.approx(1 / 4)          # the one infeasible task of four
    # the trivial baselines computed from the tasks are what the two policies score when run
    p = res["trivial"]["policies"]
    assert p["complete_at_once"] == {"name": "complete at once", "success": 0.0, "sensitivity": 1.0,
                                     "specificity": 0.0, "balanced": 0.5, "n_tasks": 4}
    assert p["infeasible_at_once"]["success"] == n["success"]["mean"]
    assert (p["infeasible_at_once"]["sensitivity"], p["infeasible_at_once"]["specificity"]) == (0.0, 1.0)
    assert res["trivial"]["instances"] == len(SUITE)
    assert any("complete at once 0.0%, infeasible at once 25.0%" in line for line in res["headline"])


def test_specificity_counts_task_complete_while_the_goal_does_not_hold():
    t = SUITE[0]
    recs = [_episode("b", t, 0, goals=[False, True, True], complete_step=2),          # success: no false alarm
            _episode("b", t, 1, goals=[False, True, False], complete_step=2),         # undone: said done off the goal
            _episode("b", t, 2, goals=[False, True, False]),                          # undone, never said done
            _episode("b", t, 3, goals=[False, False], infeasible_step=1),             # wrong claim, but not "done"
            _episode("b", t, 4, goals=[False, False, False])]                         # nav_fail
    (b,) = analyse(_run(recs, tasks=[t])).as_dict()["builds"]
    assert b["rates"]["specificity"]["k"] == 4 and b["rates"]["specificity"]["n"] == 5
    assert b["rates"]["sensitivity"]["n_tasks"] == 0 and b["balanced"] is None      # no verify variant ran


def test_trivial_baselines_from_an_older_manifest_and_from_records_alone():
    recs = always_done(repeats=1)
    full = trivial_baselines(_run(recs).manifest, recs)
    # a manifest before task_id: the records carry it (alarm-0730 stays in task `alarm`)
    assert trivial_baselines(_run(recs, with_task_id=False).manifest, recs) == full
    # no task list at all (runs before the manifest had one): the instances the records name
    assert trivial_baselines(RunManifest(), recs) == full
    assert full["policies"]["infeasible_at_once"]["success"] == pytest.approx(1 / 4)
    assert trivial_baselines(RunManifest(), []) is None
    # an instance without a record (no phone could serve it, or not reached) is in no build's
    # rates, so not in the baselines either: without fm-radio-on, infeasible at once scores 0%
    ran = [r for r in recs if r.task != "fm-radio-on"]
    less = trivial_baselines(_run(ran).manifest, ran)
    assert less["instances"] == len(SUITE) - 1 and less["policies"]["infeasible_at_once"]["success"] == 0.0


@pytest.mark.slow
def test_the_balanced_interval_holds_its_level():
    """Seeded simulation (bench/coverage.py, balanced recognition): the mean of the sensitivity
    and specificity intervals' limits covers (sens + spec) / 2 whatever the correlation of a
    task's two probabilities, at the cells least favourable to it (few tasks, positively
    correlated sides, both near the same boundary)."""
    rng = np.random.default_rng(20261206)
    for tasks, repeats, mus, corr in ((5, 1, (0.9, 0.9), 0.8), (20, 3, (0.5, 0.5), 0.8), (20, 1, (0.2, 0.9), 0.0)):
        c = bench.detector_cell(rng, 1000, tasks, repeats, mus, corr)
        assert c.coverage >= 0.95, c
        assert c.low_miss <= 0.025 and c.high_miss <= 0.025, c


def test_an_instance_feasible_on_some_phones_counts_each_episode_as_its_phone_made_it():
    """An infeasible task's `vary.feasible` phones make some of its episodes feasible: giving up
    at once is right only on the others, navigation counts only the feasible episodes, and the
    'infeasible at once' baseline scores the share of infeasible phones the run played."""
    fm = SUITE[-1]
    feasible_fm = (fm[0], fm[1], fm[2], False)
    recs = [_episode("never", fm if r < 3 else feasible_fm, r, goals=[False, False], infeasible_step=1)
            for r in range(4)]
    recs += [_episode("nav", fm, 0, goals=[False, False], infeasible_step=1),
             _episode("nav", feasible_fm, 3, goals=[False, True, True], complete_step=2)]
    res = analyse(_run(recs, tasks=[fm])).as_dict()
    never, nav = sorted(res["builds"], key=lambda b: b["build"] != "never")
    assert never["rates"]["success"]["mean"] == pytest.approx(3 / 4)
    assert never["rates"]["navigation"]["k"] == 0 and never["rates"]["navigation"]["n"] == 1
    assert nav["rates"]["success"]["mean"] == 1.0
    assert nav["rates"]["navigation"]["k"] == 1 and nav["rates"]["navigation"]["n"] == 1
    p = res["trivial"]["policies"]
    assert p["infeasible_at_once"]["success"] == pytest.approx(3 / 4)
    assert p["complete_at_once"]["success"] == 0.0 and res["trivial"]["instances"] == 1
    # a phone the run never made feasible leaves the instance as it was
    plain = [r for r in recs if r.infeasible]
    assert trivial_baselines(_run(plain, tasks=[fm]).manifest, plain)["policies"]["infeasible_at_once"]["success"] == 1.0
