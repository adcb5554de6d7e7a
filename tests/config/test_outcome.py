"""Outcome labels exactly as docs/concepts.md defines them (agent_host.config.outcome)."""

from __future__ import annotations

import itertools

import pytest

from agent_host.config.records import OUTCOMES
from agent_host.config.outcome import label

T, F = True, False


@pytest.mark.parametrize(
    "goals, kw, outcome, first, lost",
    [
        # success: D exists and G(D) true
        ([F, F, T], dict(complete_step=2), "success", 2, None),
        ([F, T, T], dict(complete_step=2), "success", 1, None),
        # complete where the goal holds again after being lost earlier: still success
        ([F, T, F, T], dict(complete_step=3), "success", 1, 2),
        # verify variant confirmed at once
        ([T, T], dict(complete_step=1), "success", 1, None),
        # premature: D, G(D) false, G never true before D
        ([F, F], dict(complete_step=1), "premature", None, None),
        ([F, F, F, F], dict(complete_step=3), "premature", None, None),
        # undone with D: the goal held, then was undone, then complete
        ([F, T, F, F], dict(complete_step=3), "undone", 1, 2),
        # verify variant turned off, then complete
        ([T, F, F], dict(complete_step=2), "undone", None, 1),
        # undone without D: goal held, false at the end (ran out of steps)
        ([F, T, T, F], {}, "undone", 1, 3),
        # goal true only at step 0 (verify), then lost: undone
        ([T, F, F], {}, "undone", None, 1),
        # unrecognised: G true at the end, no D
        ([F, F, T, T], {}, "unrecognised", 2, None),
        ([F, T, F, T], {}, "unrecognised", 1, 2),
        # verify variant, the agent never confirms
        ([T, T, T], {}, "unrecognised", 1, None),
        # nav_fail: never true, no D
        ([F, F, F], {}, "nav_fail", None, None),
        ([F], {}, "nav_fail", None, None),
        # infeasible_claimed, on an infeasible task and on a feasible one
        ([F, F, F], dict(infeasible_step=2, infeasible_task=True), "infeasible_claimed", None, None),
        ([F, T, T], dict(infeasible_step=2), "infeasible_claimed", 1, None),
        # task_complete on an infeasible task is premature whatever the check says
        ([F, F], dict(complete_step=1, infeasible_task=True), "premature", None, None),
        ([F, T], dict(complete_step=1, infeasible_task=True), "premature", 1, None),
        # an infeasible task that ran out of steps
        ([F, F, F], dict(infeasible_task=True), "nav_fail", None, None),
        # error wins over everything
        ([F, T, T], dict(complete_step=2, error="phone dropped"), "error", 1, None),
        ([F], dict(error="setup failed"), "error", None, None),
        ([], {}, "error", None, None),
    ],
)
def test_labels(goals, kw, outcome, first, lost):
    j = label(goals, **kw)
    assert j.outcome == outcome
    assert j.goal_first_step == first
    assert j.goal_lost_step == lost
    if goals:
        assert j.goal_initial == goals[0]
        assert j.goal_final == goals[-1]


def test_every_label_is_reachable():
    cases = [
        label([F, T], complete_step=1), label([F, F], complete_step=1),
        label([F, T, F]), label([F, T]), label([F, F], infeasible_step=1),
        label([F, F]), label([F], error="x"), label([F, T], exhausted=True),
        label([F, F], complete_step=1, asked=[F, T], clean=[F, F]),
    ]
    assert sorted(j.outcome for j in cases) == sorted(OUTCOMES)


@pytest.mark.parametrize(
    "goals, asked, clean, kw, outcome",
    [
        # the asked-for change is there and so is a stray: collateral, not premature
        ([F, F], [F, T], [F, F], dict(complete_step=1), "collateral"),
        # the goal held, then a stray was made, then task_complete: collateral (not undone)
        ([F, T, F], [F, T, T], [F, T, F], dict(complete_step=2), "collateral"),
        # neither half: premature as before
        ([F, F], [F, F], [F, F], dict(complete_step=1), "premature"),
        # clean but the asked-for change missing: premature
        ([F, F], [F, F], [T, T], dict(complete_step=1), "premature"),
        # a change in scope, then task_infeasible: collateral on any task
        ([F, F], [None, None], [T, F], dict(infeasible_step=1, infeasible_task=True), "collateral"),
        ([F, F], [F, F], [F, F], dict(infeasible_step=1), "collateral"),
        # nothing changed, then task_infeasible: claimed
        ([F, F], [None, None], [T, T], dict(infeasible_step=1, infeasible_task=True), "infeasible_claimed"),
        # collateral needs a final action: a stray without task_complete is a navigation failure
        ([F, F], [F, T], [F, F], {}, "nav_fail"),
        # old records (no halves judged) are never collateral
        ([F, F], None, None, dict(complete_step=1), "premature"),
        # both halves: success
        ([F, T], [F, T], [F, T], dict(complete_step=1), "success"),
    ],
)
def test_collateral(goals, asked, clean, kw, outcome):
    assert label(goals, asked=asked, clean=clean, **kw).outcome == outcome


def test_bad_inputs():
    with pytest.raises(ValueError):
        label([F, T], complete_step=1, infeasible_step=1)
    with pytest.raises(ValueError):
        label([F, T], complete_step=2)
    with pytest.raises(ValueError):
        label([F, T], complete_step=0)


def _all_sequences(max_len=6):
    for n in range(1, max_len + 1):
        yield from itertools.product([F, T], repeat=n)


def test_definitions_hold_for_every_sequence():
    """Each sentence of docs/concepts.md's label table, checked on every goal sequence up to 6 steps and every ending."""
    for goals in _all_sequences():
        n = len(goals)
        endings = [{}] + [dict(complete_step=n - 1), dict(infeasible_step=n - 1)] * (n > 1)
        for kw in endings:
            for infeasible_task in (False, True):
                j = label(goals, infeasible_task=infeasible_task, **kw)
                d = kw.get("complete_step")
                ever = any(goals)
                assert j.outcome in OUTCOMES
                if "infeasible_step" in kw:
                    assert j.outcome == "infeasible_claimed"
                    continue
                if d is not None:
                    if infeasible_task:
                        assert j.outcome == "premature"
                    elif goals[d]:
                        assert j.outcome == "success"
                    elif any(goals[:d]):
                        assert j.outcome == "undone"
                    else:
                        assert j.outcome == "premature"
                else:
                    if goals[-1]:
                        assert j.outcome == "unrecognised"
                    elif ever:
                        assert j.outcome == "undone"
                    else:
                        assert j.outcome == "nav_fail"
                # recorded steps
                firsts = [t for t in range(1, n) if goals[t]]
                assert j.goal_first_step == (firsts[0] if firsts else None)
                if j.goal_lost_step is not None:
                    assert not goals[j.goal_lost_step]
                    assert any(goals[:j.goal_lost_step])
                    assert all(goals[t] for t in range(goals.index(True), j.goal_lost_step))
                else:
                    assert not ever or all(goals[goals.index(True):])


def test_exhausted_is_never_nav_fail_and_error_still_wins():
    # before: a context window that ran out at step 2 was labelled nav_fail
    assert label([F, F], exhausted=True).outcome == "exhausted"
    assert label([F, T, T], exhausted=True).outcome == "exhausted"     # not unrecognised either
    assert label([F, F], exhausted=True, error="server: gone").outcome == "error"
    with pytest.raises(ValueError):
        label([F, T], complete_step=1, exhausted=True)


@pytest.mark.parametrize(
    "clean, untouched, kw, outcome",
    [
        # a feasible task asks for a change, so before it `clean` (changed by exactly the asked
        # change) is false: giving up having touched nothing is a claim, not damage
        ([F, F], [T, T], dict(infeasible_step=1), "infeasible_claimed"),
        # something was changed, then the agent gave up: damage
        ([F, F], [T, F], dict(infeasible_step=1), "collateral"),
        ([F, T], [T, F], dict(infeasible_step=1), "collateral"),
        # an infeasible task asks for no change: the two agree
        ([T, T], [T, T], dict(infeasible_step=1, infeasible_task=True), "infeasible_claimed"),
        ([T, F], [T, F], dict(infeasible_step=1, infeasible_task=True), "collateral"),
    ],
)
def test_an_infeasible_claim_is_collateral_only_when_something_changed(clean, untouched, kw, outcome):
    assert label([F, F], asked=[F, F] if not kw.get("infeasible_task") else [None, None], clean=clean,
                 untouched=untouched, **kw).outcome == outcome
