"""The report's intervals and tests, checked by seeded simulation (a fast subset of
bench/coverage.py) and against scipy; the rates over the right episodes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sst

from agent_host.config.records import EpisodeRecord, Exhaustion
from agent_host.report import intervals, power, selection, stats
from agent_host.report.load import Run
from agent_host.report.model import Results
from agent_host.report.render import render_markdown, viewer_data
from agent_host.report.results import analyse, csv_rows
from agent_host.config.manifest import RunManifest

_spec = importlib.util.spec_from_file_location("coverage_bench", Path(__file__).parents[2] / "bench" / "coverage.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["coverage_bench"] = bench          # dataclasses look their module up
_spec.loader.exec_module(bench)


def test_binomial_limits_match_scipy():
    for k, n in [(0, 5), (1, 5), (3, 8), (8, 8), (7, 20)]:
        cp = sst.binomtest(k, n).proportion_ci(method="exact")
        lo, hi = intervals.clopper_pearson(k, n)
        assert (float(lo), float(hi)) == pytest.approx((cp.low, cp.high), abs=1e-9)
        w = sst.binomtest(k, n).proportion_ci(method="wilson")
        lo, hi = intervals.wilson(k, n)
        assert (float(lo), float(hi)) == pytest.approx((w.low, w.high), abs=1e-9)


# Cells where the previous method (t over tasks) fell far short; 2000 runs each, seeded.
HARD = [(1.0, 0.9, 8, 1), (9.0, 0.1, 8, 1), (1.0, 0.02, 60, 10), (1.0, 0.98, 100, 10), (9.0, 0.9, 20, 3),
        (1.0, 0.1, 20, 10), (9.0, 0.5, 20, 5)]


def test_coverage_subset_meets_target_where_the_t_interval_failed():
    rng = np.random.default_rng(7)
    cells = [bench.proportion_cell(rng, 2000, t, r, mu, kappa) for kappa, mu, t, r in HARD]
    for c in cells:
        assert c.coverage >= 0.93, c
        assert c.zero_width == 0, c
    assert min(c.old_coverage for c in cells) < 0.6          # the old method: 55% at 8 x 1, 0.9
    assert max(c.old_zero_width for c in cells) > 0.3


def test_one_task_off_the_boundary_does_not_explode_the_interval():
    # 26 tasks x 2 repeats, 51 of 52 successes (one task at 1/2): the df cap of 1.5 x one
    # informative task made t = 7.6 and printed [56.3%, 100%]; Clopper-Pearson on the 52
    # episodes is [89.7%, 99.95%]. Now n* = T = 26 (the least a run of 26 tasks is worth).
    rates, counts = np.array([0.5] + [1.0] * 25), np.full(26, 2.0)
    _, lo, hi = intervals.korn_graubard(rates, counts)
    cp = sst.binomtest(51, 52).proportion_ci(method="exact")
    assert float(hi - lo) <= 1.6 * (cp.high - cp.low)
    assert float(lo) > 0.8 and float(hi) < 1.0


def test_effective_size_stays_between_the_tasks_and_the_episodes():
    # the interval is never wider than Wilson's at n* = T joined with the all-or-nothing bounds
    # (Clopper-Pearson over tasks), nor narrower than Wilson's at n* = n
    # 300 runs over 28 designs (T up to 39, 2 to 5 repeats): the calibration bootstraps each new
    # design's coverage table (~0.15 s a grid point), which made ~130 designs drawn at random 50 s
    # of CI; the bounds checked hold by construction for any exponent it picks, so the runs'
    # rates, not the number of designs, are what exercises them
    rng = np.random.default_rng(13)
    designs = [(t, r) for t in (2, 3, 5, 8, 13, 21, 39) for r in (2, 3, 4, 5)]
    for _ in range(300):
        t, r = designs[int(rng.integers(len(designs)))]
        k = rng.binomial(r, rng.beta(0.3, 0.3, t) if rng.random() < 0.5 else rng.uniform(0.9, 1, t))
        p, lo, hi = intervals.korn_graubard(k / r, np.full(t, float(r)))
        wt_lo, wt_hi = intervals.wilson(p * t, t)
        wn_lo, wn_hi = intervals.wilson(p * t * r, t * r)
        cp_lo, cp_hi, _ = intervals.all_or_nothing_bounds(k / r)
        widest = max(wt_hi, cp_hi) - min(wt_lo, cp_lo)
        assert wn_hi - wn_lo - 1e-9 <= hi - lo <= widest + 1e-9, (k, lo, hi)


def test_paired_tests_hold_their_size_on_null_runs():
    rng = np.random.default_rng(11)
    for t, r, mu, kappa in [(8, 3, 0.5, 1.0), (20, 3, 0.1, 9.0), (20, 10, 0.9, 1.0)]:
        c = bench.paired_cell(rng, 2000, t, r, mu, kappa, 0.0)
        assert c.sign_flip_reject <= 0.055 and c.mcnemar_reject <= 0.055, c
        assert c.coverage >= 0.93, c
    power = bench.paired_cell(rng, 1000, 20, 10, 0.5, 9.0, 0.2)
    assert power.sign_flip_reject > 0.8                       # a 20 pp drop is seen at 20 x 10


def _rec(build, task, variant, repeat, outcome, **kw):
    verify = variant == "verify"
    goal = dict(goal_initial=verify, goal_final=outcome in ("success", "unrecognised") or
                (verify and outcome == "exhausted"))
    if outcome == "success":
        goal.update(complete_step=1 if verify else 3, goal_first_step=None if verify else 2)
    return EpisodeRecord(episode_id=f"{build}-{task}-{variant}-{repeat}", build=build, model="m", task=task,
                         variant=variant, repeat=repeat, seed=repeat, phone="p", outcome=outcome,
                         steps=3, max_steps=5, **goal, **kw)


def _run(records, manifest=None):
    return Run(Path("/nonexistent-run"), RunManifest.model_validate(manifest or {}), records)


def test_only_verify_successes_is_navigation_zero():
    # the demo's case: base variants never reach the goal, verify variants start there
    recs = [_rec("b", t, "base", i, "nav_fail") for t in ("wifi-on", "dnd-on") for i in range(2)]
    recs += [_rec("b", t, "verify", i, "success") for t in ("wifi-on", "dnd-on") for i in range(2)]
    (b,) = analyse(_run(recs)).as_dict()["builds"]
    r = b["rates"]
    assert r["navigation"]["mean"] == 0.0 and r["navigation"]["n_tasks"] == 2        # was 50%
    assert r["navigation"]["high"] > 0                                                # never zero width
    assert r["sensitivity"]["mean"] == 1.0 and r["sensitivity"]["low"] < 1.0
    assert r["success"]["mean"] == 0.0 and r["specificity"]["mean"] == 1.0      # success was 50%
    assert r["recognition_base"]["n_tasks"] == 0 and r["recognition_base"]["mean"] is None


def test_exhausted_episodes_are_apart_and_warned():
    ex = Exhaustion(kind="context", step=4, tokens=2040, limit=2048)
    recs = [_rec("b", "wifi-on", "base", 0, "success"), _rec("b", "wifi-on", "base", 1, "exhausted", exhausted=ex),
            _rec("b", "dnd-on", "base", 0, "nav_fail"), _rec("b", "dnd-on", "base", 1, "nav_fail")]
    res = analyse(_run(recs)).as_dict()
    (b,) = res["builds"]
    assert b["episodes"] == 3 and b["exhausted"]["episodes"] == 1
    assert b["exhausted"]["list"][0] == {"episode_id": "b-wifi-on-base-1", "instance": "wifi-on", "kind": "context",
                                         "step": 4, "tokens": 2040, "limit": 2048}
    assert b["rates"]["navigation"]["k"] == 1 and b["rates"]["navigation"]["n"] == 3
    assert "exhausted" not in b["outcomes"]
    assert any("harness budget ran out" in w for w in res["warnings"])
    md = render_markdown(Results.model_validate(res))
    assert "context at step 4, 2040 tokens (limit 2048)" in md
    header, rows = csv_rows(recs)
    row = dict(zip(header, list(rows)[1]))
    assert (row["outcome"], row["latest_attempt"], row["counted"], row["success"]) == ("exhausted", True, False, "")
    shown = viewer_data(_run(recs), "b", screenshots=False)["episodes"]
    assert [e["outcome"] for e in shown].count("exhausted") == 1          # the viewer lists it too


def test_reference_role_is_the_default_baseline_and_flag_overrides():
    recs = [_rec(b, "wifi-on", "base", i, "success") for b in ("first", "ref") for i in range(2)]
    manifest = {"builds": [{"id": "first", "role": "candidate"}, {"id": "ref", "role": "reference"}]}
    assert analyse(_run(recs, manifest)).as_dict()["baseline"] == "ref"                       # was "first"
    assert analyse(_run(recs, manifest), baseline="first").as_dict()["baseline"] == "first"
    assert analyse(_run(recs, {**manifest, "baseline": "first"})).as_dict()["baseline"] == "first"


def test_plan_and_what_a_run_would_need():
    p3, p10 = power.plan(20, 3), power.plan(20, 10)
    assert p10["mde"]["value"] < p3["mde"]["value"] < 1
    assert power.plan(60, 3)["mde"]["value"] < p3["mde"]["value"]
    assert power.plan(2, 3)["mde"]["value"] is None
    # after a run: the tasks it says are needed do detect the target, one fewer does not
    rng = np.random.default_rng(3)
    recs = []
    for t in range(12):
        pa = rng.uniform(0.2, 0.9)
        for i in range(3):
            recs.append(_rec("a", f"t{t}", "base", i, "success" if rng.random() < pa else "nav_fail"))
            recs.append(_rec("b", f"t{t}", "base", i, "success" if rng.random() < pa - 0.15 else "nav_fail"))
    c = stats.compare("a", "b", recs, target=0.10)
    need = c["needed"]
    assert need["tasks"] and power.min_detectable_effect(c["sd"], need["tasks"])["value"] <= 0.10
    assert power.min_detectable_effect(c["sd"], need["tasks"] - 1)["value"] > 0.10


def test_a_design_that_already_detects_needs_one_repeat():
    # 216 task instances x 1 repeat at a 78% baseline detects 10 pp (MDE 9.6 pp): the report
    # said "or 2 repeats at 216 tasks", as if one were not enough (the search started at 2)
    assert power.plan(216, 1, rate=0.778)["mde"]["value"] <= 0.10
    assert power.plan_needed(216, 1, 0.10, rate=0.778)["repeats"] == 1
    assert power.fewest(lambda n: True, 50, start=1) == 1
    assert power.fewest(lambda n: n >= 7, 50, start=1) == 7
    assert power.fewest(lambda n: n >= 7, 6, start=1) is None


def test_one_errored_episode_does_not_shrink_the_design_to_one_repeat():
    # a 216 x 2 run with one episode ended `error` printed "this design (216 tasks x 1 repeats)"
    recs = [_rec(b, f"t{t}", "base", i, "success" if (t + i) % 2 else "nav_fail")
            for b in ("a", "b") for t in range(20) for i in range(3)]
    recs = [r for r in recs if not (r.build == "a" and r.task == "t0" and r.repeat > 0)]
    recs.append(_rec("a", "t0", "base", 1, "error"))
    w = analyse(_run(recs), target=0.10).as_dict()["power"]
    assert (w["tasks"], w["repeats"]) == (20, 3)
    assert w["mde"] == pytest.approx(power.plan(20, 3, rate=0.5)["mde"]["value"], abs=0.02)


def test_report_says_what_the_design_detects_and_needs():
    recs = [_rec(b, f"t{t}", "base", i, "success" if (t + i) % 2 else "nav_fail")
            for b in ("a", "b") for t in range(20) for i in range(3)]
    w = analyse(_run(recs), target=0.10).as_dict()["power"]
    assert (w["tasks"], w["repeats"]) == (20, 3)
    assert w["mde"] == pytest.approx(power.plan(20, 3, rate=0.5)["mde"]["value"])
    need = w["needed"]
    assert need["tasks"] > 20 and power.plan(need["tasks"], 3)["mde"]["value"] <= 0.10
    assert power.plan(need["tasks"] - 1, 3)["mde"]["value"] > 0.10
    r = need["repeats"]                     # at 20 tasks: many repeats, as episode noise is only part of it
    assert power.plan(20, r)["mde"]["value"] <= 0.10 < power.plan(20, r - 1)["mde"]["value"]


def _cli(*argv: str):
    import os
    import subprocess
    import sys
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    return subprocess.run([sys.executable, "-m", "agent_host", *argv], capture_output=True, text=True, env=env,
                          timeout=120)


def test_run_plan_prints_the_mde_without_running(tmp_path):
    out = _cli("run", "--plan", "--tasks", "wifi-on,fm-radio-on", "--variants", "base,verify", "--repeats", "3")
    assert out.returncode == 0, out.stderr
    # success, what a comparison compares, is over base variants: wifi-on@verify is no unit of it
    # (it was "1 task (2 task instances)" for wifi-on, and 10 pp at 60 tasks: verify counted twice)
    assert ("2 tasks (2 base instances; 1 verify instance for recognition only) x 3 repeats" in out.stdout
            and "no difference up to 100 pp" in out.stdout)
    assert "60: 13 pp" in out.stdout                      # at 60 tasks of 1 base instance, 3 repeats
    assert power.plan(60, 3, instances=1)["mde"]["value"] == pytest.approx(0.13, abs=0.005)
    # beside it, what doing nothing scores on these tasks (fm-radio-on is infeasible)
    assert "complete at once 0.0%, infeasible at once 50.0% success" in out.stdout
    verify = _cli("run", "--plan", "--tasks", "wifi-on", "--variants", "verify")
    assert verify.returncode == 2 and "success is over base variants" in verify.stderr
    bad = _cli("run", "--plan", "--tasks", "wifi-on", "--plan-rate", "1.5")
    assert bad.returncode != 0 and "--plan-rate" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_the_report_headline_is_the_simulated_method():
    # what the coverage test checks is what the report computes, episode records to interval
    rng = np.random.default_rng(5)
    for _ in range(30):
        t, r = int(rng.integers(2, 12)), int(rng.integers(1, 6))
        _, k = bench.draw(rng, 1, t, r, 0.9, 1.0)
        recs = [_rec("b", f"t{i}", "base", j, "success" if j < k[0, i] else "nav_fail")
                for i in range(t) for j in range(r)]
        got = analyse(_run(recs)).as_dict()["builds"][0]["rates"]["success"]
        _, lo, hi = intervals.korn_graubard(k / r, np.full((1, t), float(r)))
        assert (got["low"], got["high"]) == (pytest.approx(float(lo[0])), pytest.approx(float(hi[0])))
        assert got["high"] > got["low"]


def _paired_counts(pa, pb, reps, rng, shared):
    """Two builds' InstanceCounts over tasks with success rates pa, pb; `shared`: both builds'
    episodes of one (task, repeat) draw the same uniform (as a shared seed can make them)."""
    ua, ub = {}, {}
    for t, (a, b) in enumerate(zip(pa, pb)):
        ca, cb = (selection.InstanceCounts(f"t{t}", f"t{t}", "base", False) for _ in range(2))
        for r in range(reps):
            u = rng.random()
            v = u if shared else rng.random()
            for c, p, x in ((ca, a, u), (cb, b, v)):
                ok = bool(x < p)
                c.n += 1
                c.successes += ok
                c.by_repeat.append((r, ok))
        ua[ca.instance], ub[cb.instance] = ca, cb
    return ua, ub


def _sd_of(ua, ub):
    return float(np.std([ub[u].rate - ua[u].rate for u in ua], ddof=1))


@pytest.mark.parametrize("shared", [False, True], ids=["independent", "paired-seed"])
def test_repeats_needed_matches_simulation(shared):
    """Seeded simulation: 60 tasks x 2 repeats, true per-task differences -10 +- 5 pp. The
    repeats the report says would detect 10 pp are (within one) the repeats at which simulated
    runs' SD of differences does. The noise split once took one build's episode noise for
    the paired difference's: with independent episodes it said no number of repeats would do
    (truth: 7); with episodes sharing a seed, 3 (truth: 2)."""
    rng = np.random.default_rng(5)
    tasks = 60
    pa = rng.uniform(0.3, 0.9, tasks)
    pb = np.clip(pa + rng.normal(-0.1, 0.05, tasks), 0, 1)
    ua, ub = _paired_counts(pa, pb, 2, rng, shared)
    need = power.design_needed(ua, ub, sorted(ua), _sd_of(ua, ub), 0.10)

    def simulated_sd(r):
        return float(np.mean([_sd_of(*_paired_counts(pa, pb, r, rng, shared)) for _ in range(20)]))

    truth = next(r for r in range(1, 40) if power.min_detectable_effect(simulated_sd(r), tasks)["value"] <= 0.10)
    assert need["repeats"] is not None and abs(need["repeats"] - truth) <= 1, (need, truth)


def _cell(kappa, mu, scan, tasks=8, repeats=3):
    return bench.Cell(kappa, mu, tasks, repeats, coverage=scan[-1], width=0.3, zero_width=0.0, old_coverage=0.9,
                      old_width=0.2, old_zero_width=0.0, floor=0.95, scan=tuple(scan))


def test_trade_off_is_named_only_where_every_penalty_fails_one_side():
    n = len(bench.PENALTIES)
    hot = [0.99] * n                                   # over 97.5% at every exponent
    cooling = [0.96] * 5 + [0.99] * (n - 5)            # at 97.5% or less for the small exponents
    fine = [0.95] * n
    ok_above = [0.92] * 5 + [0.95] * (n - 5)           # a neighbour that falls below 93% for them
    # the neighbour falls below 93% exactly where the hot cell would come down: a trade-off
    design = [_cell(9.0, 0.5, cooling), _cell(1.0, 0.5, ok_above)] + [_cell(1.0, m, fine) for m in (0.1, 0.9)]
    assert bench.tradeoff_reason(design[0], design) is not None
    # the same cell with neighbours that hold 93% everywhere: a smaller penalty would do, so the method
    design = [_cell(9.0, 0.5, cooling)] + [_cell(1.0, m, fine) for m in (0.1, 0.5, 0.9)]
    assert bench.tradeoff_reason(design[0], design) is None
    assert bench.best_under_floor(design[0], design) == (0.96, 0.0)
    # over 97.5% at every exponent with the neighbours fine: a trade-off of the cell with itself is none,
    # but no penalty brings it down either, so it is named (at best 99%)
    design = [_cell(9.0, 0.5, hot)] + [_cell(1.0, m, fine) for m in (0.1, 0.5, 0.9)]
    assert "99.0%" in bench.tradeoff_reason(design[0], design)


def test_penalty_exponents_bracket_the_calibrated_interval_and_the_scan_reuses_its_runs():
    rng = np.random.default_rng(5)
    k = rng.binomial(5, rng.beta(0.5, 4.5, (200, 8)))
    rates, counts = k / 5, np.full((200, 8), 5.0)
    _, lo0, hi0 = intervals.korn_graubard(rates, counts, penalty=0.0)
    _, lo1, hi1 = intervals.korn_graubard(rates, counts, penalty=1.0)
    _, lo, hi = intervals.korn_graubard(rates, counts)
    assert np.all(hi0 - lo0 <= hi1 - lo1 + 1e-12) and np.any(hi0 - lo0 < hi1 - lo1 - 1e-6)
    assert np.all(hi - lo <= hi1 - lo1 + 1e-12) and np.all(hi - lo >= hi0 - lo0 - 1e-12)
    c = bench.proportion_cell(np.random.default_rng(3), 2000, 5, 10, 0.1, 9.0)
    assert len(c.scan) == len(bench.PENALTIES) and c.scan[0] < c.scan[-1]


def test_calibrated_penalty_brings_small_designs_at_low_heterogeneity_under_the_ceiling():
    """Seeded: 5 tasks x 5 repeats at 10%, ICC 0.1 covers 99% with Korn-Graubard's full
    penalty and is narrower with the calibrated one, while the same design at ICC 0.5 and
    20 x 10 at 90%, ICC 0.5 (the grid's worst cell before the all-or-nothing bounds) hold 93%."""
    def cover(tasks, repeats, mu, kappa, penalty):
        _, k = bench.draw(np.random.default_rng(11), 3000, tasks, repeats, mu, kappa)
        rates = k / repeats
        _, lo, hi = intervals.korn_graubard(rates, np.full_like(rates, float(repeats)), penalty=penalty)
        return np.mean((lo <= mu) & (mu <= hi)), np.mean(hi - lo)
    assert intervals.PENALTY == "calibrated"
    full, w_full = cover(5, 5, 0.1, 9.0, 1.0)
    cal, w_cal = cover(5, 5, 0.1, 9.0, None)
    assert full > 0.975 and 0.93 <= cal < 0.975 and w_cal < w_full
    assert cover(5, 5, 0.1, 1.0, None)[0] >= 0.93
    assert cover(20, 10, 0.9, 1.0, None)[0] >= 0.93
    # deterministic (seeded, cached tables) and computed per run's design
    r = np.array([1, 1, 2 / 3, 1, 0, 1, 1, 1 / 3])
    a = intervals.korn_graubard(r, np.full(8, 3.0))
    intervals._TABLES.clear()
    assert np.allclose(a, intervals.korn_graubard(r, np.full(8, 3.0)))


def test_difference_of_builds_that_agree_on_every_task_is_not_collapsed():
    """The demo (4 task instances x 2 repeats, both builds 0/2, 2/2, 0/2, 2/2) printed "95% CI
    -0.1 to +0.1 pp": per-task rates that agree exactly give a correlation of 1, and MOVER then
    cancels both builds' margins. Eight concordant pairs cannot rule out a difference of a few
    points, so the difference must be at least as uncertain as one build's rate."""
    for rates, reps in (([0, 1, 0, 1], 2), ([0, 1, 0, 1, 1, 0, 1, 1, 0, 1], 3), ([1 / 3, 2 / 3, 1, 0, 2 / 3], 3)):
        r = np.array(rates, float)
        c = np.full(len(r), float(reps))
        p, lo, hi = intervals.korn_graubard(r, c)
        d, dlo, dhi = intervals.mover_difference(r, c, r, c)
        assert d == 0
        assert dhi >= hi - p - 1e-12 and dlo <= -(p - lo) + 1e-12, (rates, dlo, dhi, lo, hi)


def test_difference_of_perfectly_correlated_builds_keeps_its_width():
    """The bench found MOVER at [19.9, 20.1] pp for 5 tasks x 3 repeats with build A at 0, 0, 1,
    0, 1 and build B at 1/3, 1/3, 1, 1/3, 1: per-task rates perfectly correlated (B = 1/3 + 2/3 A),
    so r = 1 survived the Fisher shrink. Five tasks cannot show a correlation that cancels
    almost all of both margins."""
    ra = np.array([0, 0, 1, 0, 1], float)
    rb = np.array([1, 1, 3, 1, 3], float) / 3
    c = np.full(5, 3.0)
    d, lo, hi = intervals.mover_difference(ra, c, rb, c)
    assert d == pytest.approx(0.2)
    assert hi - lo > 0.2, (lo, hi)


def _all_or_nothing_tails(tasks: int, repeats: int, mu: float) -> tuple[float, float]:
    """Exact (P(interval below mu), P(interval above mu)) when every task is all-or-nothing
    (probability 0 or 1, the ICC -> 1 end of any heterogeneity): the run is then k tasks at
    1/1 and the rest at 0, k ~ binomial(tasks, mu)."""
    k = np.arange(tasks + 1)
    rates = (np.arange(tasks)[None, :] < k[:, None]).astype(float)
    _, lo, hi = intervals.korn_graubard(rates, np.full_like(rates, float(repeats)))
    pk = sst.binom.pmf(k, tasks, mu)
    return float(pk[hi < mu].sum()), float(pk[lo > mu].sum())


@pytest.mark.parametrize("tasks", [3, 5, 8, 20])
@pytest.mark.parametrize("repeats", [1, 3])
def test_each_limit_holds_its_share_when_tasks_are_all_or_nothing(tasks, repeats):
    """Before: with repeats, all-or-nothing runs got Wilson over T tasks, whose limits are not
    one-sided 97.5% bounds there: 5 tasks x 3 repeats at a mean of 2% covered 90.4% (one task
    at 3/3 gives a lower limit of 3.6%). A heterogeneity the interval cannot see must not cost it
    its level, and this is the limit of every heterogeneity."""
    for mu in np.linspace(0.01, 0.99, 99):
        below, above = _all_or_nothing_tails(tasks, repeats, mu)
        assert below <= 0.025 + 1e-12 and above <= 0.025 + 1e-12, (mu, below, above)


def test_a_limit_is_never_beyond_the_all_or_nothing_bound():
    """More successes may not lower the upper limit below what all-fail tasks need: the upper
    limit is at least Clopper-Pearson's over the tasks that succeeded every time (so a run
    of 5 tasks with one success in 15 episodes is not more sure of a low rate than 0 of 15)."""
    counts = np.full(5, 3.0)
    _, _, hi_none = intervals.korn_graubard(np.zeros(5), counts)
    _, _, hi_one = intervals.korn_graubard(np.array([1 / 3, 0, 0, 0, 0]), counts)
    bound = intervals.clopper_pearson(0, 5)[1]
    assert float(hi_none) == pytest.approx(float(bound))
    assert float(hi_one) >= float(bound) - 1e-12


@pytest.mark.parametrize("rho,tasks,repeats,mu", [(0.99, 8, 10, 0.02), (0.95, 8, 3, 0.02), (0.8, 20, 3, 0.1),
                                                  (0.8, 5, 10, 0.3)])
def test_coverage_holds_when_repeats_of_a_task_nearly_always_agree(rho, tasks, repeats, mu):
    """ICC near 1 is what a build decoding greedily gives (its repeats of a task mostly agree);
    the bench's grid stops at ICC 0.5. Before the all-or-nothing bounds the first two cells
    covered 84.7% and 86.7%; Clopper-Pearson for all-agreeing runs alone (no bounds on the
    others) mended those and left the last two at 92.8% and 92.4%."""
    rng = np.random.default_rng(99)
    k = 1 / rho - 1
    rates = rng.binomial(repeats, rng.beta(mu * k, (1 - mu) * k, size=(3000, tasks))) / repeats
    _, lo, hi = intervals.korn_graubard(rates, np.full_like(rates, float(repeats)))
    assert np.mean((lo <= mu) & (mu <= hi)) >= 0.93


def test_valid_floor_of_cells_few_tasks_force():
    # 5 tasks: 0/5 all-or-nothing tasks has P >= 2.5% at any mean below 52%, and 5/5 above 48%,
    # so at 50% neither limit of a valid interval may ever exclude the mean
    assert bench.valid_floor(5, 3, 0.5, 9.0) == pytest.approx(1.0)
    # one repeat: exactly binomial(8, 0.5), whose equal-tailed exact interval covers 99.2%
    cp_lo, cp_hi = intervals.clopper_pearson(np.arange(9), np.full(9, 8))
    pk = sst.binom.pmf(np.arange(9), 8, 0.5)
    assert bench.valid_floor(8, 1, 0.5, 9.0) == pytest.approx(float(pk[(cp_lo <= 0.5) & (0.5 <= cp_hi)].sum()))
    # 8 tasks at 10%: the upper limit can never miss (0 of 8 allows 36.9%): at least 97.5%
    assert bench.valid_floor(8, 10, 0.1, 9.0) >= 0.975
    # many tasks in the middle: nothing forced
    assert bench.valid_floor(60, 3, 0.5, 9.0) == pytest.approx(0.95)


def test_exact_cells_agree_with_simulation():
    k, w = bench.exact_runs(8, 3, 0.1, 1.0)
    assert w.sum() == pytest.approx(1.0) and len(w) == 165          # C(11, 3) runs of 8 unordered tasks
    _, sim = bench.draw(np.random.default_rng(5), 40000, 8, 3, 0.1, 1.0)
    assert w @ k.sum(1) == pytest.approx(sim.sum(1).mean(), rel=0.02)
    assert w @ (k.sum(1) == 0) == pytest.approx(np.mean(sim.sum(1) == 0), abs=0.01)
    assert bench.exact_runs(100, 10, 0.5, 1.0) is None                # too many to enumerate


def test_beyond_the_grid_families_have_the_stated_mean():
    rng = np.random.default_rng(2)
    for family, spread in bench.FAMILIES:
        for mu in (0.02, 0.5, 0.9):
            p = bench.task_probabilities(rng, family, spread, mu, 200000)
            assert p.mean() == pytest.approx(mu, abs=0.004), (family, spread, mu)


def test_least_valid_coverage_is_sharper_than_the_floor_and_agrees_where_it_forces():
    for cell in [(5, 3, 0.5, 9.0), (8, 3, 0.1, 9.0), (8, 3, 0.5, 9.0), (8, 3, 0.5, 1.0)]:
        least = bench.least_valid_coverage(*cell)
        assert bench.valid_floor(*cell) - 1e-9 <= least <= 1.0 + 1e-9, cell
    assert bench.least_valid_coverage(5, 3, 0.5, 9.0) == pytest.approx(1.0)
    # 8 x 3 at 50%, ICC 0.1 is not forced: a valid interval could cover ~95% there
    assert bench.least_valid_coverage(8, 3, 0.5, 9.0) < 0.96
    assert bench.least_valid_coverage(100, 10, 0.5, 9.0) is None


def test_each_limit_is_calibrated_where_it_can_be_wrong():
    """Exact, over the 165 distinct runs of 8 tasks x 3 repeats at 50%, ICC 0.1: with one exponent
    for both limits, asked of both across the whole interval, the cell covered 97.51%, over the
    97.5% that nothing forces there (least_valid_coverage: ~95%); the same design at ICC 0.5
    keeps each limit's miss at 2.5% or less."""
    for kappa, low, high in ((9.0, 0.95, 0.975), (1.0, 0.95, 0.975)):
        k, w = bench.exact_runs(8, 3, 0.5, kappa)
        _, lo, hi = intervals.korn_graubard(k / 3, np.full(k.shape, 3.0))
        assert low <= w @ ((lo <= 0.5) & (0.5 <= hi)) <= high, kappa
        assert w @ (lo > 0.5) <= 0.025 and w @ (hi < 0.5) <= 0.025, kappa


def test_the_instances_of_one_task_are_one_cluster():
    """A task's parameter sets and verify variant are pooled into one unit for every interval,
    test and power figure (they succeed or fail together). Before, each instance was its own
    unit: 6 tasks x (2 parameter sets x base, verify) counted as 24 independent tasks."""
    recs = []
    for t in range(6):
        ok = t % 2 == 0                    # a task that works works in every instance
        for i in range(2):
            for v in ("base", "verify"):
                for r in range(2):
                    recs.append(_rec("a", f"t{t}[{i}]", v, r, "success" if ok else "nav_fail", task_id=f"t{t}"))
                    recs.append(_rec("b", f"t{t}[{i}]", v, r, "success" if ok and (t, i) != (0, 0) else "nav_fail",
                                     task_id=f"t{t}"))
    res = analyse(_run(recs)).as_dict()
    a = res["builds"][0]
    s = a["rates"]["success"]
    assert (a["tasks"], a["instances"]) == (6, 24)
    assert (s["n_tasks"], s["n_instances"]) == (6, 12)                      # success: base instances
    pooled = np.array([1.0 if t % 2 == 0 else 0.0 for t in range(6)])
    _, lo, hi = intervals.korn_graubard(pooled, np.full(6, 4.0))
    assert (s["low"], s["high"]) == (pytest.approx(float(lo)), pytest.approx(float(hi)))
    assert res["builds"][0]["rates"]["navigation"]["n_tasks"] == 6          # base instances, pooled per task
    assert res["builds"][0]["rates"]["sensitivity"]["n_tasks"] == 6         # verify instances, pooled per task
    (c,) = res["comparisons"]
    assert (c["n_tasks"], c["n_instances"]) == (6, 12)
    assert (c["won"], c["lost"], c["tied"]) == (0, 1, 5)                    # t0 lost in 1 of its 2 base instances
    assert c["mean_diff"] == pytest.approx(-(2 / 4) / 6)
    assert c["sign_flip"]["patterns"] == 2                                  # one task differs: 2 sign patterns
    assert len(c["per_task"]) == 12                                         # the table keeps every base instance
    assert res["power"]["tasks"] == 6 and res["power"]["instances"] == pytest.approx(2)


def test_records_without_a_task_id_fall_back_to_the_instance_id():
    old = _rec("a", "alarm-set[1]", "verify", 0, "success")
    assert old.task_id is None and selection.cluster_of(old) == "alarm-set"
    assert selection.cluster_of(_rec("a", "wifi-on", "base", 0, "success")) == "wifi-on"
    assert selection.cluster_of(_rec("a", "alarm-0730", "base", 0, "success", task_id="alarm-set")) == "alarm-set"


def test_correlated_instances_hold_when_pooled_by_task():
    """Seeded simulation: 10 tasks x 4 instances (each sharing its task's probability with
    chance 0.9) x 3 repeats, ICC 0.5, mean 0.5. Taking each instance as its own unit covered
    about 72%; pooled by task, the report's rate holds its 95%."""
    c = bench.instance_cell(np.random.default_rng(11), 2000, 10, 4, 3, 0.5, 1.0, 0.9)
    assert c.unit_coverage < 0.8
    assert c.coverage >= 0.93 and c.pair_coverage >= 0.93
