"""The play order of a run's episodes (runs/order.py): seeded, complete, and what it is for:
a drift over time biases the paired difference one build after the other, not interleaved."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agent_host.runs.order import interleave, order_record, segments, servers_kept, servers_together
from agent_host.runs.plan import plan


@dataclass(frozen=True)
class Task:
    id: str
    key: str
    variant: str
    task_id: str
    vary_full: bool = True


def tasks(n: int, instances: int = 1) -> list[Task]:
    return [Task(f"t{i}[{j}]", f"t{i}[{j}]", "base", f"t{i}") for i in range(n) for j in range(instances)]


def test_interleaved_order_is_seeded_complete_and_keeps_a_task_s_builds_together():
    planned = plan(["a", "b"], tasks(6, 2), repeats=3, seed=4)
    one = interleave(planned, seed=4, together=True)
    assert order_record(one) == order_record(interleave(planned, seed=4, together=True))
    assert order_record(one) != order_record(interleave(planned, seed=5, together=True))
    assert sorted(order_record(one)) == sorted(p.episode_id for p in planned)
    # each block (task, repeat) is contiguous: both builds' episodes of it, 2 instances each
    blocks = [(p.task.task_id, p.repeat) for p in one]
    for i in range(0, len(blocks), 4):
        assert len(set(blocks[i:i + 4])) == 1
    # the build that goes first varies between blocks
    firsts = {one[i].build for i in range(0, len(one), 4)}
    assert firsts == {"a", "b"}


def test_alternating_blocks_when_servers_cannot_be_up_together():
    planned = plan(["a", "b"], tasks(5), repeats=4, seed=1)
    order = interleave(planned, seed=1, together=False)
    segs = segments(order)
    # per repeat A(3 tasks) B(3) B(2) A(2); a repeat's last A stretch merges with the next's first
    assert [s[0].build for s in segs] == ["a", "b", "a", "b", "a", "b", "a", "b", "a"]
    assert [len(s) for s in segs] == [3, 5, 5, 5, 5, 5, 5, 5, 2]
    for r in range(4):   # every task's two builds within one repeat
        assert {p.task.id for p in order[10 * r:10 * r + 10]} == {t.id for t in tasks(5)}
    assert sorted(order_record(order)) == sorted(p.episode_id for p in planned)


class _Build:
    def __init__(self, server: str):
        from agent_host.config.builds import SERVER_KINDS
        self.server, self.traits = server, SERVER_KINDS[server]


def test_servers_together_says_why():
    ok, why = servers_together([_Build("policy"), _Build("openai")], cores=2, memory_gib=4)
    assert ok and "together" in why
    ok, why = servers_together([_Build("vllm"), _Build("vllm")], cores=2, memory_gib=8)
    assert not ok and "alternate" in why and "12 GiB" in why
    ok, _ = servers_together([_Build("vllm"), _Build("vllm")], cores=8, memory_gib=64)
    assert ok


def test_servers_kept_idle_need_memory_not_cores():
    """The demo's two small builds on 2 cores and 24 GiB: not up together for interleaving (two
    cores each), but each kept up, idle while the other plays."""
    two = [_Build("vllm"), _Build("vllm")]
    assert not servers_together(two, cores=2, memory_gib=23.5)[0]
    ok, why = servers_kept(two, memory_gib=23.5)
    assert ok and "started once" in why
    ok, why = servers_kept(two, memory_gib=8)
    assert not ok and "12 GiB" in why
    assert servers_kept([_Build("vllm"), _Build("policy")], memory_gib=None)[0]


def _paired_differences(order_of, runs: int, slope: float, seed: int) -> np.ndarray:
    """Mean over tasks of B - A success rates for `runs` simulated runs of two identical builds
    whose failure probability rises linearly with the episode's position in the play order."""
    rng = np.random.default_rng(seed)
    ts = tasks(20)
    out = []
    for r in range(runs):
        planned = plan(["a", "b"], ts, repeats=3, seed=r)
        order = order_of(planned, r)
        base = dict(zip((t.id for t in ts), rng.uniform(0.5, 0.9, len(ts))))   # each task's own rate
        ok = {}
        for pos, p in enumerate(order):
            rate = base[p.task.id] - slope * pos / len(order)
            ok[p.episode_id] = rng.random() < rate
        diff = [np.mean([ok[p.episode_id] for p in planned if p.task.id == t.id and p.build == "b"])
                - np.mean([ok[p.episode_id] for p in planned if p.task.id == t.id and p.build == "a"])
                for t in ts]
        out.append(np.mean(diff))
    return np.array(out)


def test_a_drift_biases_one_build_after_the_other_and_not_interleaved():
    slope = 0.4          # the success rate falls 40 pp from the first episode to the last
    runs = 150
    sequential = _paired_differences(lambda planned, r: list(planned), runs, slope, seed=3)
    mixed = _paired_differences(lambda planned, r: interleave(planned, r, together=True), runs, slope, seed=3)
    se_seq, se_mix = sequential.std(ddof=1) / np.sqrt(runs), mixed.std(ddof=1) / np.sqrt(runs)
    # build-major: B's episodes all come after A's, about half the drift apart (-20 pp)
    assert sequential.mean() < -0.15 and abs(sequential.mean() + 0.2) < 4 * se_seq
    # interleaved: no bias beyond the simulation's noise
    assert abs(mixed.mean()) < 4 * se_mix and abs(mixed.mean()) < 0.01
    # alternating blocks (ABBA) cancels a linear drift too
    abba = _paired_differences(lambda planned, r: interleave(planned, r, together=False), runs, slope, seed=3)
    assert abs(abba.mean()) < 4 * abba.std(ddof=1) / np.sqrt(runs) and abs(abba.mean()) < 0.015
