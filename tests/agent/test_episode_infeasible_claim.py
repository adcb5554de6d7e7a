"""Giving up at once on a feasible task is a claim of infeasibility, not collateral damage: the
whole-state judge's `clean` (the scope changed by exactly the asked change) is false before
any change, so the label asks whether anything changed at all (`untouched`). Found when a
`task_infeasible`-at-once build was labelled `collateral` on every feasible base task."""

from __future__ import annotations

from agent_host.agent.episode import run_episode
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone

GIVE_UP = [{"task_infeasible": {"reason": "cannot"}}]
CHANGE_THEN_GIVE_UP = [{"open_app": {"name": "settings"}}, {"tap": {"text": "Network & internet"}},
                       {"tap": {"text": "Airplane mode"}}, {"task_infeasible": {"reason": "cannot"}}]


def test_giving_up_untouched_is_a_claim_and_after_a_change_is_collateral(virtual_phone, policy_server,
                                                                          virtual_profile, tmp_path):
    phone = Phone.connect(virtual_phone.serial)
    [wifi] = [t for t in load_tasks(["wifi-on"], variants=("base",))]
    rec = run_episode(wifi, phone, policy_server(GIVE_UP).endpoint("b"), out_dir=tmp_path / "a",
                      profile=virtual_profile, screenshots=False)
    assert rec.outcome == "infeasible_claimed", rec.outcome
    rec = run_episode(wifi, phone, policy_server(CHANGE_THEN_GIVE_UP).endpoint("b"), out_dir=tmp_path / "b",
                      profile=virtual_profile, screenshots=False)
    assert rec.outcome == "collateral", (rec.outcome, rec.error)
