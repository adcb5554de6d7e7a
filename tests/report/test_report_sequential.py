"""The sequential rule (report/sequential.py): its boundary, decisions, allocation, and a fast
seeded subset of bench/sequential.py's simulation (the whole grid: python bench/sequential.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from agent_host.config.records import EpisodeRecord
from agent_host.report import sequential as sq
from agent_host.runs.sequential import parse_budget
from agent_host.config.manifest import RunManifest

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_sequential", ROOT / "bench" / "sequential.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_sequential"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_pocock_level_matches_the_published_constant():
    assert sq.pocock_alpha((1.0,)) == 0.05
    # Pocock (1977): 5 equally spaced looks, two-sided 5%: c = 2.413, nominal level 0.0158
    assert sq.pocock_alpha(tuple(np.arange(1, 6) / 5)) == pytest.approx(0.0158, abs=0.0006)
    # 2 looks: c = 2.178, nominal 0.0294
    assert sq.pocock_alpha((0.5, 1.0)) == pytest.approx(0.0294, abs=0.0006)


def test_schedule_looks_and_level():
    s = sq.Schedule.make(tasks=10, first=1, budget_repeats=4, round_share=1.0)
    assert s.looks == [10, 20, 30, 40]
    assert s.at(10) == 0 and s.at(29) == 1 and s.at(40) == 3
    assert s.nominal_alpha < 0.05


def test_decide_reads_the_interval():
    lo = np.array([-0.3, 0.02, -0.04, -0.3, -0.08])
    hi = np.array([-0.01, 0.2, 0.05, 0.3, 0.09])
    assert sq.decide(lo, hi, 0.1).tolist() == [1, 2, 3, 0, 3]
    assert sq.decide(lo, hi, None).tolist() == [1, 2, 0, 0, 0]


def test_allocation_goes_where_the_builds_disagree():
    # task 0: both always succeed; task 1: they disagree; task 2: both always fail
    ka, na, kb, nb = [4, 2, 0], [4, 4, 4], [4, 0, 0], [4, 4, 4]
    add = sq.allocate(ka, na, kb, nb, per_repeat=1, size=6)
    assert add.sum() == 6 and add[1] > add[0] and add[1] > add[2]
    # vectorised over runs, and a cap holds
    add = sq.allocate([ka, ka], [na, na], [kb, kb], [nb, nb], per_repeat=1, size=6, cap=6)
    assert (add[:, 1] <= 2).all() and (add.sum(-1) == 6).all()


def test_budget_flag():
    assert parse_budget("400") == (400, None)
    assert parse_budget("90s") == (None, 90.0)
    assert parse_budget("1.5h") == (None, 5400.0)
    for bad in ("0", "ten", "5x", "-3m", "40d"):
        with pytest.raises(ValueError, match="--budget"):
            parse_budget(bad)


def _record(build: str, task: str, repeat: int, ok: bool) -> EpisodeRecord:
    return EpisodeRecord(episode_id=f"{build}__{task}__base__r{repeat}", build=build, model="m", task=task,
                         task_id=task, variant="base", repeat=repeat, seed=repeat, phone="p",
                         outcome="success" if ok else "nav_fail", steps=1, max_steps=5)


def test_the_report_section_says_how_it_ended_and_where_the_repeats_went():
    recs = [_record(b, f"t{i}", r, b == "a" or (i + r) % 2 == 0)
            for b in ("a", "b") for i in range(6) for r in range(2 if i < 3 else 1)]
    state = sq.configure("a", "b", 6, 1, 4, 0.1, None)
    state["rounds"] = [
        {"round": 0, "add": {f"t{i}": 1 for i in range(6)}, "order": [r.episode_id for r in recs if r.repeat == 0],
         "decision": {"outcome": "undecided", "final": False, "look": 1, "diff": -0.5, "low": -0.9, "high": 0.1,
                      "why": "not yet decided"}},
        {"round": 1, "add": {"t0": 1, "t1": 1, "t2": 1}, "order": [r.episode_id for r in recs if r.repeat == 1],
         "decision": sq.judge_for(state)(recs, {f"t{i}": 2 if i < 3 else 1 for i in range(6)}, True)}]
    sec = sq.section(RunManifest(sequential=state), recs)
    assert sec["episodes"] == len(recs)
    assert {a["task"]: a["repeats"] for a in sec["allocation"]} == {"t0": 2, "t1": 2, "t2": 2, "t3": 1,
                                                                   "t4": 1, "t5": 1}
    assert next(a for a in sec["allocation"] if a["task"] == "t0") == {"task": "t0", "repeats": 2,
                                                                       "baseline": "2/2", "build": "1/2"}
    assert sec["outcome"] in sq.OUTCOMES or sec["outcome"] == "in progress"
    assert sec["looks"] == len(state["looks"]) and sec["method"] == sq.METHOD
    assert sec["fixed"]["target"] == 0.1


@pytest.mark.parametrize("tasks,kappa,mu,delta", [(20, 1.0, 0.5, 0.0), (20, 9.0, 0.5, 0.0), (8, 1.0, 0.9, 0.0),
                                                  (20, 1.0, 0.5, 0.10), (20, 9.0, 0.5, 0.20)])
def test_seeded_simulation_subset(tasks, kappa, mu, delta):
    """A few cells of bench/sequential.py, fewer runs: wrong decisions and coverage at the
    stopping time (the bench's targets, with room for 400 runs' noise: 5% + 2 SE, 93% - 2 SE)."""
    bench = _bench()
    rng = np.random.default_rng(7)
    c = bench.seq_cell(rng, 400, tasks, 1, 1.0, mu, kappa, delta, sq.BUDGET_REPEATS, sq.FIRST_REPEATS, 0.1,
                       compare_fixed=False)
    assert c.wrong <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 400)
    assert c.coverage >= 0.93 - 2 * np.sqrt(0.07 * 0.93 / 400)
    assert c.episodes <= c.budget_episodes
    if delta >= 0.2:
        assert c.power > 0.85 and c.episodes < 0.6 * c.budget_episodes   # a large difference stops early


def test_report_marks_shared_machine_speed_and_the_order(tmp_path):
    import json

    from fixtures_report import BASE, OTHER, make_run

    from agent_host.report import write_reports

    run = make_run(tmp_path)
    m = json.loads((run / "manifest.json").read_text())
    m.update(shared_machine=[BASE, OTHER], order_mode="servers up together: 2 local model servers fit")
    (run / "manifest.json").write_text(json.dumps(m))
    written = write_reports(run, baseline=BASE)
    md = next(run.rglob("report.md")).read_text()
    html = next(run.rglob("report.html")).read_text()
    assert f"| {OTHER} (shared machine) |" in md and f"| {BASE} (shared machine) |" in md
    assert "interleaved, randomised by the seed: servers up together" in md
    assert "(shared machine)" in html and "Shared machine:" in html
    assert written["results"]["sequential"] is None and "Sequential comparison" not in md


def test_fixed_design_from_one_repeat_is_not_all_between_task_spread():
    # 12 tasks at one repeat: the baseline always succeeds, the build fails half the tasks
    states = [sq.TaskState(f"t{i}", ka=1, na=1, kb=i % 2, nb=1, repeats=1) for i in range(12)]
    fixed = sq.fixed_design(states, 0.1)
    assert fixed["repeats"] is not None and fixed["repeats"] > 1, fixed
    assert fixed["episodes"] == 2 * fixed["repeats"] * 12
    # builds that agree everywhere still need episodes to show a 10 pp difference is absent
    same = [sq.TaskState(f"t{i}", ka=1, na=1, kb=1, nb=1, repeats=1) for i in range(12)]
    assert sq.fixed_design(same, 0.1)["repeats"] > 1
