"""The teach split (teach/split.py): a pure, seeded function of the suite's task and instance
ids; every instance has exactly one kind; both held-out kinds are present."""

from __future__ import annotations

import pytest

from agent_host.config.taught import KINDS, TaughtSplit, instance_id, load_split
from agent_host.config.tasks import load_tasks
from agent_host.errors import UserError
from agent_host.teach.split import choose_split


@pytest.fixture(scope="module")
def suite():
    return load_tasks([], ("base", "verify"))


def test_the_split_is_deterministic_and_seeded(suite):
    a, b = choose_split(suite, seed=0), choose_split(list(reversed(suite)), seed=0)
    assert a == b                                           # the order of the tasks does not matter
    assert choose_split(suite, seed=1).instances != a.instances


def test_every_instance_has_one_kind_and_variants_follow_their_instance(suite):
    split = choose_split(suite, seed=0)
    assert set(split.instances) == {instance_id(t.key) for t in suite}
    for t in suite:
        assert split.kind_of(t.key) == split.instances[t.id]       # `X@verify` goes with X
    assert sum(split.count(k) for k in KINDS) == len(split.instances)


def test_both_held_out_kinds_are_present_and_disjoint_by_task(suite):
    split = choose_split(suite, seed=0)
    assert all(split.count(k) > 0 for k in KINDS)
    by_task: dict[str, set[str]] = {}
    for inst, kind in split.instances.items():
        by_task.setdefault(split.tasks[inst], set()).add(kind)
    for task, kinds in by_task.items():
        # a held-out task is held out whole; a taught task keeps at most one held-out parameter set
        assert kinds == {"held-out-task"} or "held-out-task" not in kinds, task
    for task, kinds in by_task.items():
        if "held-out-params" in kinds:
            assert "taught" in kinds, task                    # another parameter set of it is taught
            assert sum(1 for i, k in split.instances.items()
                       if split.tasks[i] == task and k == "held-out-params") == 1


def test_a_tasks_kind_does_not_depend_on_the_other_tasks(suite):
    whole = choose_split(suite, seed=0)
    half = [t for t in suite if t.task_id < "m"]
    part = choose_split(half, seed=0)
    assert all(whole.instances[i] == k for i, k in part.instances.items())


def test_a_split_file_round_trips_and_a_bad_one_is_one_line(tmp_path, suite):
    split = choose_split(suite[:10], seed=3)
    path = tmp_path / "split.json"
    path.write_text(split.model_dump_json())
    assert load_split(path) == split
    path.write_text(split.model_dump_json().replace('"taught"', '"learnt"', 1))
    with pytest.raises(UserError, match=r"split.json: instances\..*"):
        load_split(path)
    with pytest.raises(UserError, match="no such split file"):
        load_split(tmp_path / "missing.json")
    assert isinstance(split, TaughtSplit)
