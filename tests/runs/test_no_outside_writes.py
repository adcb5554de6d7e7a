"""Nothing outside agent-host's own folders is written. The audit's attacks, each reproduced:
a symlink another user planted in the predictable phone lock folder had its (root-owned)
target truncated by the next `agent-host episode`; `run --resume` through a symlinked
`episodes.jsonl` truncated and appended to the outside file; a symlinked `.lock` overwrote its
target; `report` read a symlinked `replay/` folder from outside with no warning."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from agent_host.config.records import EpisodeRecord, NotOwnFile
from agent_host.config.replay_log import ReplayLog, replay_dir
from agent_host.runs.lock import RunLock, RunLocked
from agent_host.runs.phone_lock import LockDirUnsafe, PhoneBusy, PhoneLocks, holder, lock_dir, lock_path
from agent_host.runs.store import RunStore
from agent_host.config.manifest import RunManifest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixtures_cli import agent_host, assert_user_error  # noqa: E402
from fixtures_report import make_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PRECIOUS = "a file the attacker wants truncated\n"


@pytest.fixture
def victim(tmp_path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text(PRECIOUS)
    return path


@pytest.fixture
def locks(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "locks"
    monkeypatch.setenv("AGENT_HOST_LOCK_DIR", str(d))
    return d


# -- the phone lock folder ------------------------------------------------------------

def test_a_symlink_planted_in_the_lock_folder_is_refused_and_its_target_kept(locks, victim):
    PhoneLocks(["p1"]).acquire().release()            # the folder exists, as after any earlier run
    path = lock_path("p1")
    path.unlink(missing_ok=True)
    path.symlink_to(victim)                           # planted by another user
    with pytest.raises(PhoneBusy, match=rf"{path}: a symbolic link; refused"):
        PhoneLocks(["p1"]).acquire()
    assert victim.read_text() == PRECIOUS             # before: truncated to 0 bytes
    assert holder("p1") is None                       # `devices` does not read through it either


def test_the_lock_folder_and_files_are_private(locks):
    locks.mkdir(mode=0o755)                           # as an older agent-host left it
    with PhoneLocks(["p1"]):
        assert stat.S_IMODE(os.lstat(locks).st_mode) == 0o700
        assert stat.S_IMODE(os.lstat(lock_path("p1")).st_mode) == 0o600


def test_a_lock_folder_that_is_a_symlink_is_refused(tmp_path, monkeypatch):
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    (tmp_path / "locks").symlink_to(real)
    monkeypatch.setenv("AGENT_HOST_LOCK_DIR", str(tmp_path / "locks"))
    with pytest.raises(LockDirUnsafe, match=r"locks: a symbolic link; refused"):
        PhoneLocks(["p1"]).acquire()
    assert not any(real.iterdir())


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder another user's needs root")
def test_a_lock_folder_of_another_user_is_refused(locks):
    locks.mkdir(mode=0o777)
    os.chown(locks, 65534, 65534)
    with pytest.raises(LockDirUnsafe, match=rf"{locks}: owned by uid 65534, not by this user"):
        PhoneLocks(["p1"]).acquire()
    assert not any(locks.iterdir())


def test_the_lock_folder_prefers_xdg_runtime_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENT_HOST_LOCK_DIR", raising=False)
    runtime = tmp_path / "run-user"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert lock_dir() == runtime / "agent-host" / "phones"
    with PhoneLocks(["p1"]):
        assert lock_path("p1").parent == runtime / "agent-host" / "phones"
        assert stat.S_IMODE(os.lstat(runtime / "agent-host").st_mode) == 0o700
    os.chmod(runtime, 0o777)                          # anyone may write it: not usable
    assert lock_dir() == Path("/tmp") / f"agent-host-{os.getuid()}" / "phones"


# -- the run directory ----------------------------------------------------------------

def _rec(eid: str) -> EpisodeRecord:
    return EpisodeRecord(episode_id=eid, build="b", model="m", task="t", phone="p", outcome="success")


def _linked_log(tmp_path: Path, victim: Path) -> RunStore:
    store = RunStore(tmp_path / "run")
    store.create(RunManifest.model_validate({"run_id": "x"}))
    store.log_path.unlink()
    store.log_path.symlink_to(victim)
    return store


def test_a_symlinked_episode_log_is_refused_and_its_target_kept(tmp_path, victim):
    store = _linked_log(tmp_path, victim)
    with pytest.raises(NotOwnFile, match=r"episodes.jsonl: a symbolic link; refused"):
        RunStore(store.dir).open_existing()           # before: the "torn tail" cut, then appends
    with pytest.raises(NotOwnFile):
        store.append(_rec("a"))
    with pytest.raises(NotOwnFile):
        store.records()
    assert victim.read_text() == PRECIOUS


def test_run_resume_through_a_symlinked_episode_log_fails_in_one_line(tmp_path, victim):
    store = _linked_log(tmp_path, victim)
    before = sorted(p.name for p in store.dir.iterdir())
    out = agent_host("run", "--resume", str(store.dir), cwd=ROOT, tmpdir=tmp_path / "tmp")
    assert_user_error(out, "episodes.jsonl", "symbolic link")
    assert victim.read_text() == PRECIOUS
    assert sorted(p.name for p in store.dir.iterdir()) == before


def test_a_symlinked_run_lock_is_refused_and_its_target_kept(tmp_path, victim):
    run = tmp_path / "run"
    run.mkdir()
    (run / ".lock").symlink_to(victim)
    with pytest.raises(RunLocked, match=r"\.lock: a symbolic link; refused"):
        RunLock(run).acquire()
    assert victim.read_text() == PRECIOUS             # before: overwritten with the holder's name


def test_a_symlinked_episodes_folder_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    store = RunStore(tmp_path / "run")
    store.create(RunManifest.model_validate({"run_id": "x"}))
    store.episodes_dir.rmdir()
    store.episodes_dir.symlink_to(outside)
    with pytest.raises(NotOwnFile, match=r"episodes: a symbolic link"):
        RunStore(store.dir).open_existing()


def test_a_replay_writes_nothing_through_a_symlinked_folder(tmp_path, victim):
    outside = tmp_path / "outside"
    outside.mkdir()
    run = tmp_path / "run"
    run.mkdir()
    (run / "replay").symlink_to(outside)
    with pytest.raises(NotOwnFile, match=r"replay: a symbolic link"):
        ReplayLog(replay_dir(run, "ref")).open()
    assert not any(outside.iterdir())
    (run / "replay").unlink()
    replay_dir(run, "ref").mkdir(parents=True)
    (replay_dir(run, "ref") / "replay.jsonl").symlink_to(victim)
    with pytest.raises(NotOwnFile, match=r"replay.jsonl: a symbolic link"):
        ReplayLog(replay_dir(run, "ref")).open()
    assert victim.read_text() == PRECIOUS


def test_report_does_not_read_a_symlinked_replay_folder_and_says_so(tmp_path):
    run = make_run(tmp_path)
    outside = tmp_path / "outside" / "ref"
    outside.mkdir(parents=True)
    (outside / "replay.json").write_text(json.dumps({"reference": "ref", "candidates": {}}))
    (outside / "replay.jsonl").write_text("")
    (run / "replay").symlink_to(outside.parent)
    out = agent_host("report", str(run), "--no-screenshots", cwd=ROOT, tmpdir=tmp_path / "tmp")
    assert out.returncode == 0, out.stderr
    results = json.loads((run / "results.json").read_text())
    assert any("replay" in w and "outside the run directory" in w for w in results["warnings"]), results["warnings"]
    assert "ref" not in (run / "report.md").read_text().split("## ")[0]
