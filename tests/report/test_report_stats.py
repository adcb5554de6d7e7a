"""Report statistics checked against numbers computed by hand on the fixture run.

The fixture (tests/fixtures_report.py), per task instance, sorted (impossible, wifi-on,
wifi-on@verify); S = success (for `impossible`, an infeasible task, S = infeasible_claimed):
    w4a16: impossible S F F (1/3)   wifi-on S S F (2/3)   verify S F(undone) S (2/3)
    w4a8:  impossible F F err (0/2) wifi-on F F F (0/3)   verify S S S (3/3)
The statistics' unit is the task: wifi-on and wifi-on@verify are one task of two instances
(pooled where a rate counts both); impossible is a task of one. Success, comparisons and
pass^k count base variants only (w4a16 1/3 and 2/3, w4a8 0/2 and 0/3); the verify variant
feeds recognition (sensitivity).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from agent_host.config.records import EpisodeRecord
from agent_host.report import intervals, power, selection, stats
from agent_host.report.load import load_run
from agent_host.report.results import analyse
from fixtures_report import BASE, OTHER, make_run

Z = 1.959963984540054          # normal 0.975 quantile
T1 = 12.706204736174698        # Student t 0.975 quantile, 1 degree of freedom
T2 = 4.302652729911275         # Student t 0.975 quantile, 2 degrees of freedom


def wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    p = k / n
    denom = 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / denom
    half = Z / denom * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    run = load_run(make_run(tmp_path_factory.mktemp("stats")))
    return analyse(run).as_dict()


@pytest.fixture(scope="module")
def by_build(results):
    return {b["build"]: b for b in results["builds"]}


def test_wilson_matches_closed_formula():
    for k, n in [(0, 3), (1, 3), (2, 3), (3, 3), (0, 2), (7, 20)]:
        lo, hi = stats.wilson_limits(k, n)
        elo, ehi = wilson_by_hand(k, n)
        assert lo == pytest.approx(elo, abs=1e-9) and hi == pytest.approx(ehi, abs=1e-9), (k, n)
    assert stats.wilson_limits(0, 0) is None


def test_per_task_counts_and_wilson(results):
    rows = {t["instance"]: t["builds"] for t in results["per_task"]}
    assert list(rows) == ["impossible", "wifi-on", "wifi-on@verify"]   # verify is its own unit
    expect = {("impossible", BASE): (1, 3, 0), ("wifi-on", BASE): (2, 3, 0), ("wifi-on@verify", BASE): (2, 3, 0),
              ("impossible", OTHER): (0, 2, 1), ("wifi-on", OTHER): (0, 3, 0), ("wifi-on@verify", OTHER): (3, 3, 0)}
    for (unit, build), (k, n, err) in expect.items():
        c = rows[unit][build]
        assert (c["k"], c["n"], c["errors"]) == (k, n, err), (unit, build)
        lo, hi = wilson_by_hand(k, n)
        assert c["low"] == pytest.approx(lo, abs=1e-9) and c["high"] == pytest.approx(hi, abs=1e-9)
    # 2/3: centre (2/3 + 0.6402)/2.2805 ...; spot-check one value against a literal
    assert rows["wifi-on"][BASE]["low"] == pytest.approx(0.2077, abs=1e-4)


def wilson_float(x: float, n: float) -> tuple[float, float]:
    p = x / n
    denom = 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / denom
    half = Z / denom * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


def test_headline_is_mean_of_task_rates_with_korn_graubard_interval(by_build):
    s = by_build[BASE]["rates"]["success"]
    # success is over base variants: impossible 1/3 and wifi-on 2/3 (3 episodes each): mean 1/2;
    # var of the mean (1/18)/2 = 1/36; p(1-p) = 1/4 -> n_eff = 9, capped at the 6 episodes;
    # df T - 1 = 1 -> 6 (z / t_1)^2 = 0.14, below T = 2 tasks, so n* = 2 (the least T tasks
    # are worth); Wilson at x = n*/2
    assert 6 * (Z / T1) ** 2 < 2
    n_star = 2.0
    lo, hi = wilson_float(0.5 * n_star, n_star)
    assert s["mean"] == pytest.approx(1 / 2)
    rates, counts = np.array([1 / 3, 2 / 3]), np.array([3.0, 3.0])
    assert intervals.korn_graubard(rates, counts, penalty=1.0)[1:] == pytest.approx((lo, hi))
    # the report calibrates the exponent of that penalty per run and per limit
    # (intervals.calibrated_penalty): each limit is the Korn-Graubard one at its exponent, within
    # the full-penalty interval
    g_lo, g_hi = (float(g) for g in intervals.calibrated_penalty(rates, counts))
    assert s["low"] == pytest.approx(intervals.korn_graubard(rates, counts, penalty=g_lo)[1])
    assert s["high"] == pytest.approx(intervals.korn_graubard(rates, counts, penalty=g_hi)[2])
    assert lo - 1e-12 <= s["low"] and s["high"] <= hi + 1e-12
    assert 0 < s["low"] < s["high"] < 1
    assert (s["n_tasks"], s["n_instances"], s["k"], s["n"]) == (2, 2, 3, 6)
    o = by_build[OTHER]["rates"]["success"]
    # (0/2 + 0/3) / 2: w4a8's 3/3 at the goal is recognition, not success (pooled, it was 1/4)
    assert o["mean"] == 0 and (o["k"], o["n"]) == (0, 5)


def test_t_interval_unclipped():
    t = stats.t_interval([1 / 3, 2 / 3, 2 / 3])
    half = T2 * (math.sqrt(3) / 9) / math.sqrt(3)
    assert (t["low"], t["high"]) == (pytest.approx(5 / 9 - half), pytest.approx(5 / 9 + half))


def test_navigation_recognition_and_labels(by_build):
    b, o = by_build[BASE]["rates"], by_build[OTHER]["rates"]
    # navigation over base variants of feasible tasks only: w4a16 wifi-on ever-true 2/3
    # (verify variants start at the goal and are not navigation evidence)
    assert b["navigation"]["mean"] == pytest.approx(2 / 3) and b["navigation"]["n_tasks"] == 1
    assert (b["navigation"]["low"], b["navigation"]["high"]) == pytest.approx(wilson_by_hand(2, 3))
    # recognition after navigating (base): wifi-on 2/2; sensitivity, at the goal (verify): 2/3
    assert b["recognition_base"]["mean"] == pytest.approx(1.0)
    assert b["sensitivity"]["mean"] == pytest.approx(2 / 3) and b["sensitivity"]["n_tasks"] == 1
    # w4a8: wifi-on ever-true 1/3 (the unrecognised one); recognition 0/1 (base), 3/3 (verify)
    assert o["navigation"]["mean"] == pytest.approx(1 / 3)
    assert o["recognition_base"]["mean"] == 0.0 and o["sensitivity"]["mean"] == 1.0
    # specificity, base episodes without a task_complete while the goal did not hold:
    # w4a16 impossible 2/3 (the premature one is not), wifi-on 3/3; w4a8 impossible 1/2, wifi-on 3/3
    assert b["specificity"]["mean"] == pytest.approx((2 / 3 + 1) / 2) and b["specificity"]["n_tasks"] == 2
    assert o["specificity"]["mean"] == pytest.approx((1 / 2 + 1) / 2)
    # balanced: the mean of the two, its limits the means of theirs
    bal = by_build[BASE]["balanced"]
    assert bal["mean"] == pytest.approx((2 / 3 + 5 / 6) / 2)
    assert bal["low"] == pytest.approx((b["sensitivity"]["low"] + b["specificity"]["low"]) / 2)
    assert bal["high"] == pytest.approx((b["sensitivity"]["high"] + b["specificity"]["high"]) / 2)
    assert "recognition" not in b        # the mixture of the two was the misleading number
    # premature over tasks: w4a16 (1/3 + 0/6)/2; w4a8 (1/2 + 0/6)/2
    assert b["premature"]["mean"] == pytest.approx(1 / 6)
    assert o["premature"]["mean"] == pytest.approx(1 / 4)
    # undone: w4a16's one on wifi-on@verify, pooled into wifi-on (1/6); unrecognised likewise
    assert b["undone"]["mean"] == pytest.approx(1 / 12) and o["undone"]["mean"] == 0
    assert o["unrecognised"]["mean"] == pytest.approx(1 / 12)


def test_outcome_bars_sum_to_one_and_errors_apart(by_build):
    for b in by_build.values():
        assert sum(x["fraction"] for x in b["outcomes"].values()) == pytest.approx(1.0)
    o = by_build[OTHER]
    assert o["episodes"] == 8
    assert o["errors"] == {"episodes": 1, "attempts": 3, "retried_ok": 2}
    assert o["outcomes"]["nav_fail"]["count"] == 3          # the error is in no bar
    assert by_build[BASE]["outcomes"]["success"]["count"] == 5   # includes the correct infeasible claim


def test_pass_hat_k_and_pass_at_k(by_build):
    b, o = by_build[BASE], by_build[OTHER]
    # as success, over base variants: first k repeats all succeed: impossible S F F, wifi-on S S F
    assert [x["value"] for x in b["pass_hat_k"]] == [pytest.approx(1.0), pytest.approx(1 / 2), 0.0]
    # pass@k = 1 - C(n-c,k)/C(n,k): k=1 mean c/n = 1/2; k=2 (1 - 1/3, 1) -> 5/6; k=3 -> 1
    assert [x["value"] for x in b["pass_at_k"]] == [pytest.approx(1 / 2), pytest.approx(5 / 6), pytest.approx(1.0)]
    # w4a8: impossible has only 2 counted repeats, so it leaves k=3; its verify 3/3 does not count
    assert [x["value"] for x in o["pass_hat_k"]] == [0.0, 0.0, 0.0]
    assert [x["n_tasks"] for x in o["pass_hat_k"]] == [2, 2, 1]
    assert [x["value"] for x in o["pass_at_k"]] == [0.0, 0.0, 0.0]


def test_comparison_against_baseline(results):
    (c,) = results["comparisons"]
    # success, so base variants only: the verify variant is not compared
    assert (c["baseline"], c["build"], c["n_tasks"], c["n_instances"]) == (BASE, OTHER, 2, 2)
    assert c["per_task"] == {"impossible": pytest.approx(-1 / 3), "wifi-on": pytest.approx(-2 / 3)}
    # per task, paired: impossible 0/2 - 1/3, wifi-on 0/3 - 2/3 -> mean -1/2
    assert c["mean_diff"] == pytest.approx(-1 / 2)
    assert c["sd"] == pytest.approx(math.sqrt(2) / 6)       # deviations -1/6, +1/6
    # MOVER of the two builds' Korn-Graubard limits over tasks, task-level correlation
    ra, rb = np.array([1 / 3, 2 / 3]), np.array([0.0, 0.0])
    d, lo, hi = intervals.mover_difference(ra, np.array([3.0, 3]), rb, np.array([2.0, 3]))
    assert (c["low"], c["high"]) == (pytest.approx(float(lo)), pytest.approx(float(hi)))
    assert -1 < c["low"] < c["mean_diff"] < c["high"] < 1
    assert (c["won"], c["lost"], c["tied"]) == (0, 2, 0)
    # sign flips of |d| = (2, 4)/6, |sum| observed 6/6: the 4 sums (x6) are +-6, +-2 -> 2 of 4
    assert c["sign_flip"]["p"] == pytest.approx(0.5)
    assert c["sign_flip"]["method"].startswith("exact") and c["sign_flip"]["patterns"] == 4
    # pairs (unit, repeat, seed): impossible r0 S/F, r1 F/F, (r2 unpaired: w4a8 errored),
    # wifi-on r0 S/F, r1 S/F, r2 F/F -> 3 baseline-only, 0 build-only;
    # two-sided exact binomial: 2 * P(X <= 0 | n=3, 1/2) = 2 / 8
    m = c["mcnemar"]
    assert (m["pairs"], m["baseline_only"], m["build_only"], m["both"], m["neither"], m["unpaired"]) == (5, 3, 0, 0, 2, 1)
    assert m["p"] == pytest.approx(2 / 8)
    # 2 tasks: even a 100 pp difference has power < 0.8 -> not detectable
    assert c["mde"]["value"] is None and "cannot detect" in c["mde"]["note"]


def test_sign_flip_by_enumeration_and_monte_carlo():
    d = [0.5, 0.25, 0.0, 0.1, -0.05]
    obs = abs(sum(d))
    hits = 0
    for mask in range(1 << 4):      # the zero does not matter: enumerate the 4 non-zero
        nz = [x for x in d if x]
        s = sum(x if mask >> i & 1 else -x for i, x in enumerate(nz))
        hits += abs(s) >= obs - 1e-12
    res = stats.sign_flip_test(d)
    assert res["p"] == pytest.approx(hits / 16) and res["n_nonzero"] == 4
    assert stats.sign_flip_test([0.0, 0.0])["p"] == 1.0
    big = [0.1 * (1 + i % 3) for i in range(25)]            # all positive: p tiny
    mc = stats.sign_flip_test(big)
    assert mc["method"].startswith("Monte Carlo") and mc["p"] < 1e-3
    assert stats.sign_flip_test(big)["p"] == mc["p"]        # fixed seed: reproducible


def test_mde_has_the_stated_power():
    sd, n = 0.2, 10
    mde = power.min_detectable_effect(sd, n)
    t975, t80 = 2.2621571627409915, 0.8834038337044026      # t quantiles, 9 df
    assert mde["approx"] == pytest.approx((t975 + t80) * sd / math.sqrt(n))
    # simulate the paired t test at the MDE: it should reject about 80% of the time
    rng = np.random.default_rng(1)
    x = rng.normal(mde["value"], sd, size=(40_000, n))
    t = x.mean(1) / (x.std(1, ddof=1) / math.sqrt(n))
    assert (np.abs(t) > t975).mean() == pytest.approx(0.8, abs=0.01)
    assert power.min_detectable_effect(0.0, 5)["value"] is None
    # 2 tasks (1 df): power 0.8 is out of reach within 100 pp -> no value, a note (no crash)
    two = power.min_detectable_effect(0.35, 2)
    assert two["value"] is None and "cannot detect" in two["note"]
    assert power.min_detectable_effect(0.3, 1)["value"] is None


def _rec(**kw) -> EpisodeRecord:
    base = dict(episode_id="e", build="b", model="m", task="t", phone="p", outcome="success")
    base.update(kw)
    return EpisodeRecord(**base)


def test_infeasible_and_verify_handling():
    # infeasible: the claim is the success; task_complete there is premature
    assert selection.is_success(_rec(infeasible=True, outcome="infeasible_claimed"))
    assert selection.effective_label(_rec(infeasible=True, outcome="success")) == "premature"
    # feasible: an infeasible claim is a failure
    assert not selection.is_success(_rec(outcome="infeasible_claimed"))
    assert selection.instance_of(_rec(variant="verify")) == "t@verify" and selection.instance_of(_rec()) == "t"
    assert selection.goal_ever_true(_rec(variant="verify", goal_initial=True, outcome="undone"))


def test_latest_attempt_counts_and_errors_are_apart():
    recs = [_rec(episode_id="a", outcome="error", attempt=1), _rec(episode_id="a", outcome="nav_fail", attempt=2),
            _rec(episode_id="b", outcome="success", attempt=1), _rec(episode_id="c", outcome="error", attempt=1)]
    sel = selection.select_latest(recs)
    assert [r.outcome for r in sel.counted] == ["nav_fail", "success"]
    assert [r.episode_id for r in sel.errored] == ["c"]
    assert len(sel.error_attempts) == 2 and sel.superseded == 1
    s = stats.build_summary("b", recs)
    assert s["rates"]["success"]["k"] == 1 and s["rates"]["success"]["n"] == 2
    assert s["rates"]["success"]["method"] == "wilson (one task)"   # one task: Wilson of its episodes
    lo, hi = wilson_by_hand(1, 2)
    assert s["rates"]["success"]["low"] == pytest.approx(lo)


def test_speed_from_server_metrics(by_build):
    b, o = by_build[BASE]["speed"], by_build[OTHER]["speed"]
    # ITL count/sum = 60/1.2 per episode -> 50 tok/s; TTFT 0.3/3 = 0.1 s
    assert b["decode_tok_s"] == pytest.approx(50.0) and b["ttft_s"] == pytest.approx(0.1)
    assert b["decode_source"].startswith("server metrics")
    # no metrics: completion tokens / model time = 60/3.0
    assert o["decode_tok_s"] == pytest.approx(20.0) and o["decode_source"].startswith("approx")
    assert b["step_s"] == pytest.approx(1.0) and b["tokens_per_episode"] == pytest.approx(6060)
