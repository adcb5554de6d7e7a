"""Run planned episodes: per build, bring its server up, spread episodes over the phones
(one worker thread per phone), store each finished episode, then take the server down.

Failures of the harness, the phone or the server come back from the agent as `error`
episodes: they are stored (so the report can count them apart), retried up to a limit,
and never count against the model. A phone that fails its health check leaves the pool;
a server that died is restarted.
"""

from __future__ import annotations

import datetime as dt
import logging
import queue
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from agent_host.config.records import EpisodeRecord
from agent_host.errors import UserError
from agent_host.runs.plan import PlannedEpisode
from agent_host.runs.store import RunStore, write_json_atomic


@dataclass
class BuildProgress:
    build: str
    total: int
    done: int = 0
    outcomes: Counter = field(default_factory=Counter)
    retries: int = 0


@dataclass
class RunOptions:
    profile: Any                    # PhoneProfile
    max_attempts: int = 3
    startup_timeout: float | None = None
    run_id: str = ""


ProgressHook = Callable[[BuildProgress, EpisodeRecord | None], None]
log = logging.getLogger(__name__)


def _notify(hook: ProgressHook, progress: BuildProgress, rec: EpisodeRecord | None) -> None:
    try:
        hook(progress, rec)
    except Exception:  # a display problem must not stop a worker
        log.exception("progress hook")


def _harness_error(ep: PlannedEpisode, build: Any, serial: str, why: str) -> EpisodeRecord:
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")
    return EpisodeRecord(episode_id=ep.episode_id, build=build.id, model=build.id, task=ep.task.id,
                         task_file=str(getattr(ep.task, "source", "") or ""), variant=ep.variant,
                         infeasible=bool(getattr(ep.task, "infeasible", False)), repeat=ep.repeat,
                         seed=ep.seed, phone=serial, outcome="error", error=why,
                         max_steps=getattr(ep.task, "max_steps", 0), started_at=now, ended_at=now)


def _phone_alive(serial: str) -> bool:
    from agent_host.phone.device import Phone  # imported here: keeps the CLI start fast
    try:
        phone = Phone.connect(serial)
        phone.shell("echo ok")
        return True
    except Exception:
        return False


class _Pool:
    """The phones still usable; a worker that finds its phone dead removes it."""

    def __init__(self, serials: Sequence[str]):
        self.alive = list(serials)
        self.dead: dict[str, str] = {}
        self._lock = threading.Lock()

    def kill(self, serial: str, why: str) -> None:
        with self._lock:
            if serial in self.alive:
                self.alive.remove(serial)
                self.dead[serial] = why


def run_build(build: Any, episodes: list[PlannedEpisode], store: RunStore, pool: _Pool,
              opts: RunOptions, progress: BuildProgress, hook: ProgressHook,
              attempts: dict[str, int]) -> None:
    from agent_host.agent.episode import run_episode
    from agent_host.phone.device import Phone
    from agent_host.serving import server as serving

    todo: queue.Queue[PlannedEpisode] = queue.Queue()
    for ep in episodes:
        todo.put(ep)
    server_lock = threading.Lock()

    with serving.start(build, log_dir=store.servers_dir, seed=0,
                       startup_timeout=opts.startup_timeout or build.startup_timeout_s) as server:

        def ensure_server() -> None:
            with server_lock:
                if not server.alive():
                    server.restart()

        def worker(serial: str) -> None:
            try:
                phone = Phone.connect(serial)
            except Exception as exc:  # a phone that cannot even connect leaves the pool
                pool.kill(serial, f"connect failed: {exc}")
                return
            while serial in pool.alive:
                try:
                    ep = todo.get_nowait()
                except queue.Empty:
                    return
                attempt = attempts.get(ep.episode_id, 0) + 1
                attempts[ep.episode_id] = attempt
                out_dir = store.fresh_episode_dir(ep.episode_id)
                try:
                    rec = run_episode(ep.task, phone, server.endpoint, out_dir=out_dir, profile=opts.profile,
                                      sampling=build.sampling, identity=ep.identity(attempt, opts.run_id))
                except Exception as exc:  # a harness bug must cost an attempt, not the episode
                    log.exception("episode %s", ep.episode_id)
                    rec = _harness_error(ep, build, serial, f"harness: {type(exc).__name__}: {exc}")
                    rec = rec.model_copy(update={"attempt": attempt, "run_id": opts.run_id})
                    write_json_atomic(out_dir / "episode.json", rec.model_dump(mode="json"))
                store.append(rec)
                progress.outcomes[rec.outcome] += 1
                if rec.outcome != "error":
                    progress.done += 1
                    _notify(hook, progress, rec)
                    continue
                # An error: find whose fault, then retry unless the attempts are spent.
                if attempt < opts.max_attempts:
                    progress.retries += 1
                    todo.put(ep)
                else:
                    progress.done += 1
                _notify(hook, progress, rec)
                if not server.alive():
                    ensure_server()
                if not _phone_alive(serial):
                    pool.kill(serial, rec.error or "phone stopped answering")
                    return
                try:
                    phone = Phone.connect(serial)
                except Exception as exc:
                    pool.kill(serial, f"reconnect failed: {exc}")
                    return

        while not todo.empty():
            if not pool.alive:
                raise UserError(f"no phones left ({'; '.join(f'{s}: {w}' for s, w in pool.dead.items())}); "
                                f"fix them and resume with --resume {store.dir}")
            threads = [threading.Thread(target=worker, args=(s,), name=f"phone-{s}", daemon=True)
                       for s in list(pool.alive)]
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(0.2)


def execute(builds: Sequence[Any], planned: Sequence[PlannedEpisode], store: RunStore,
            phones: Sequence[str], opts: RunOptions, hook: ProgressHook | None = None) -> dict[str, BuildProgress]:
    """Run what is missing from the store; return per-build progress."""
    hook = hook or (lambda p, r: None)
    finished = store.finished()
    attempts = dict(store.error_attempts())
    pool = _Pool(phones)
    result: dict[str, BuildProgress] = {}
    for build in builds:
        mine = [p for p in planned if p.build == build.id]
        todo = [p for p in mine if p.episode_id not in finished
                and attempts.get(p.episode_id, 0) < opts.max_attempts]
        prog = BuildProgress(build.id, total=len(mine), done=len(mine) - len(todo))
        for p in mine:
            if p.episode_id in finished:
                prog.outcomes[finished[p.episode_id].outcome] += 1
        result[build.id] = prog
        hook(prog, None)
        if todo:
            run_build(build, todo, store, pool, opts, prog, hook, attempts)
    return result
