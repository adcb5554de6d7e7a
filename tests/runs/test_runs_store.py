"""The run directory's episode log: atomic appends, torn tails, resume bookkeeping, planning."""

from types import SimpleNamespace

import pytest

from agent_host.config.records import EpisodeRecord
from agent_host.runs.plan import derive_seed, episode_id, plan
from agent_host.runs.store import RunStore, read_records
from agent_host.config.manifest import RunManifest


def rec(eid: str, outcome: str = "success", attempt: int = 1) -> EpisodeRecord:
    return EpisodeRecord(episode_id=eid, build="b", model="m", task="t", phone="p", outcome=outcome, attempt=attempt)


def test_torn_last_line_is_ignored_then_cut_before_appending(tmp_path):
    store = RunStore(tmp_path / "run")
    store.create(RunManifest.model_validate({"run_id": "x"}))
    store.append(rec("a"))
    with open(store.log_path, "ab") as f:          # a kill -9 in the middle of a write
        f.write(b'{"episode_id": "b", "bui')
    assert [r.episode_id for r in read_records(store.log_path)] == ["a"]
    RunStore(store.dir).open_existing()
    store.append(rec("c"))
    assert [r.episode_id for r in read_records(store.log_path)] == ["a", "c"]
    assert store.log_path.read_bytes().endswith(b"\n")


def test_finished_ignores_errors_and_counts_attempts(tmp_path):
    store = RunStore(tmp_path / "run")
    store.create(RunManifest.model_validate({}))
    store.append(rec("a", "error"))
    store.append(rec("a", "nav_fail", attempt=2))
    store.append(rec("b", "error"))
    assert set(store.finished()) == {"a"}
    assert store.finished()["a"].outcome == "nav_fail"
    assert store.error_attempts() == {"a": 1, "b": 1}


def test_create_refuses_an_existing_run(tmp_path):
    RunStore(tmp_path / "run").create(RunManifest.model_validate({}))
    with pytest.raises(FileExistsError):
        RunStore(tmp_path / "run").create(RunManifest.model_validate({}))


def test_fresh_episode_dir_keeps_earlier_attempt_aside(tmp_path):
    store = RunStore(tmp_path / "run")
    store.create(RunManifest.model_validate({}))
    d = store.fresh_episode_dir("e1")
    (d / "steps.jsonl").write_text("x\n")
    d2 = store.fresh_episode_dir("e1")
    assert d2 == d and not any(d2.iterdir())
    assert (store.episodes_dir / "e1~1" / "steps.jsonl").read_text() == "x\n"


def test_plan_pairs_builds_and_seeds_do_not_depend_on_build():
    tasks = [SimpleNamespace(id="wifi-on", key="wifi-on", variant="base", vary_full=True),
             SimpleNamespace(id="wifi-on", key="wifi-on@verify", variant="verify", vary_full=True)]
    eps = plan(["A", "B"], tasks, repeats=2, seed=7)
    assert len(eps) == 8
    by = {(e.build, e.task_key, e.repeat): e.seed for e in eps}
    for key in ("wifi-on", "wifi-on@verify"):
        for r in range(2):
            assert by[("A", key, r)] == by[("B", key, r)]
    assert len({e.seed for e in eps if e.build == "A"}) == 4
    assert derive_seed(7, "wifi-on", 0) != derive_seed(8, "wifi-on", 0)
    assert episode_id("w4a8/x", "alarm[0]", "base", 1) == "w4a8_x__alarm_0___base__r1"


def test_limits_come_from_the_flag_then_the_build_then_the_default():
    from agent_host.config.builds import Build
    from agent_host.runs.execute import EPISODE_TIMEOUT_S, REQUEST_TIMEOUT_S, RunOptions, limits_for

    plain = Build(id="p", weight_path="scripted", server="policy", script="x.yaml")
    set_ = plain.model_copy(update={"request_timeout_s": 30.0, "episode_timeout_s": 300.0})
    assert limits_for(plain, RunOptions(profile=None)) == (REQUEST_TIMEOUT_S, EPISODE_TIMEOUT_S)
    assert limits_for(set_, RunOptions(profile=None)) == (30.0, 300.0)
    assert limits_for(set_, RunOptions(profile=None, request_timeout=5, episode_timeout=50)) == (5, 50)
    assert REQUEST_TIMEOUT_S * 3 < 600 and EPISODE_TIMEOUT_S <= 1200      # well below 600 s x retries
    with pytest.raises(ValueError):
        Build(id="p", weight_path="scripted", server="policy", script="x.yaml", request_timeout_s=0)


def test_backoff_is_bounded_and_grows():
    from agent_host.runs.execute import backoff_delays
    d = backoff_delays(20)
    assert d[:5] == [0.5, 1, 2, 4, 8] and abs(sum(d) - 20) < 1e-9 and max(d) <= 8
    assert backoff_delays(0) == []


def test_an_append_that_fails_leaves_no_partial_line(tmp_path, monkeypatch):
    import errno
    import os as os_mod

    store = RunStore(tmp_path / "run")
    store.create(RunManifest.model_validate({}))
    store.append(rec("a"))
    real_write = os_mod.write

    def half(fd, data):
        real_write(fd, data[:10])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("agent_host.runs.store.os.write", half)
    with pytest.raises(OSError):
        store.append(rec("b"))
    monkeypatch.undo()
    assert store.log_path.read_bytes().endswith(b"\n")
    assert [r.episode_id for r in read_records(store.log_path)] == ["a"]


def test_a_task_no_variation_can_change_is_left_out_of_full_only():
    """android-version's answer is the phone's own: a blind replay passed it on every varied
    phone, so its `vary.full: false` leaves it out of `--vary full` (and nothing else)."""
    from agent_host.config.tasks import load_tasks

    tasks = load_tasks(["android-version", "wifi-on"], ("base",))
    assert [t.vary_full for t in tasks] == [False, True]
    eps = plan(["A"], tasks, repeats=2, seed=0, vary=("none", "light", "full"))
    played = {(e.task_key, e.vary) for e in eps}
    assert ("android-version", "full") not in played and ("wifi-on", "full") in played
    assert {("android-version", "none"), ("android-version", "light")} <= played
    assert len(eps) == 2 * (3 + 2)
