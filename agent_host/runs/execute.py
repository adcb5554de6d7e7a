"""Run planned episodes: per build, bring its server up, spread episodes over the phones
(one worker thread per phone), store each finished episode, then take the server down.

Failures of the harness, the phone, the server or a time limit come back from the agent as
`error` episodes: they are stored (so the report can count them apart), retried up to a
limit, and never count against the model. A phone that fails its health check is waited for
with bounded backoff and used again when it answers (else it is reported away); a server
that died is restarted. A failure to record (full disk, I/O error) or any exception in a
worker stops the run with one message saying what is recorded and how to resume.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import logging
import queue
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from agent_host.config.records import EpisodeRecord, write_json_atomic
from agent_host.errors import UserError
from agent_host.runs.plan import PlannedEpisode
from agent_host.runs.store import RunStore

REQUEST_TIMEOUT_S = 120.0      # one model request (a step's answer); was 600 s, retried once
EPISODE_TIMEOUT_S = 1200.0     # one episode, wall clock
PHONE_WAIT_S = 60.0            # a phone that stopped answering is waited for this long
PROBE_S = 10.0                 # one health probe of a phone (connect, `echo ok`), in total


@dataclass
class BuildProgress:
    build: str
    total: int
    done: int = 0
    outcomes: Counter = field(default_factory=Counter)
    retries: int = 0
    away: dict[str, str] = field(default_factory=dict)   # phones not answering: serial -> why


@dataclass
class RunOptions:
    profile: Any                    # PhoneProfile
    max_attempts: int = 3
    startup_timeout: float | None = None
    run_id: str = ""
    request_timeout: float | None = None   # seconds per model request (None: the build's)
    episode_timeout: float | None = None   # wall-clock seconds per episode (None: the build's)
    phone_wait: float = PHONE_WAIT_S       # how long a phone that stopped answering is waited for
    stop: Any = None                       # a threading.Event: once set, no new episode starts
    servers: dict | None = None            # build id -> a server already up (runs/sequential.py keeps them)


class RecordingFailed(UserError):
    """The run directory cannot be written (disk full, read-only, I/O error) or a worker failed:
    the run stops, and says what is recorded and how to resume."""


ProgressHook = Callable[[BuildProgress, EpisodeRecord | None], None]
log = logging.getLogger(__name__)

# errno values that mean the run directory cannot take more data
_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG}


def _notify(hook: ProgressHook, progress: BuildProgress, rec: EpisodeRecord | None) -> None:
    try:
        hook(progress, rec)
    except Exception:  # a display problem must not stop a worker
        log.exception("progress hook")


def _harness_error(ep: PlannedEpisode, build: Any, serial: str, why: str) -> EpisodeRecord:
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")
    return EpisodeRecord(episode_id=ep.episode_id, build=build.id, model=build.id, task=ep.task.id,
                         task_id=getattr(ep.task, "task_id", None),
                         task_file=str(getattr(ep.task, "source", "") or ""), variant=ep.variant,
                         infeasible=bool(getattr(ep.task, "infeasible", False)), repeat=ep.repeat,
                         seed=ep.seed, phone=serial, outcome="error", error=why,
                         max_steps=getattr(ep.task, "max_steps", 0), started_at=now, ended_at=now)


def _is_disk_error(exc: BaseException) -> bool:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS:
            return True
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return False


def _phone_alive(serial: str) -> bool:
    from agent_host.phone.device import Phone  # imported here: keeps the CLI start fast
    try:
        phone = Phone.connect(serial, timeout=PROBE_S)
        phone.shell("echo ok", timeout=PROBE_S)
        return True
    except Exception:
        return False


def backoff_delays(total: float, first: float = 0.5, factor: float = 2.0, most: float = 8.0) -> list[float]:
    """Waits between probes of a phone that stopped answering: 0.5, 1, 2, 4, 8, 8, ... s,
    summing to at most `total` (the last one cut short)."""
    out: list[float] = []
    d, left = first, total
    while left > 1e-9:
        out.append(min(d, left))
        left -= out[-1]
        d = min(d * factor, most)
    return out


def reconnect(serial: str, wait: float, give_up: Callable[[], bool] = lambda: False) -> tuple[Any, str]:
    """(a connected, answering Phone, "") within `wait` seconds of backoff, else (None, why).
    `give_up()` is asked between probes (the run is stopping, or no work is left)."""
    from agent_host.phone.device import Phone
    why = "not answering"
    for n, delay in enumerate([0.0, *backoff_delays(wait)]):
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:
            if give_up():
                return None, f"not answering ({why})"
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
        if n and give_up():
            return None, f"not answering ({why})"
        try:
            phone = Phone.connect(serial, timeout=PROBE_S)
            phone.shell("echo ok", timeout=PROBE_S)
            return phone, ""
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"[:200]
    return None, f"not back after {wait:g} s ({why})"


class _Pool:
    """Phones of the run. A phone that stops answering is waited for (bounded backoff) and
    given work again when it answers; one that stays away is marked away (named in the
    progress line and the summary) and leaves this round."""

    def __init__(self, serials: Sequence[str]):
        self.serials = list(serials)
        self.away: dict[str, str] = {}
        self._lock = threading.Lock()

    @property
    def alive(self) -> list[str]:
        with self._lock:
            return [s for s in self.serials if s not in self.away]

    def set_away(self, serial: str, why: str) -> None:
        with self._lock:
            self.away[serial] = why

    def back(self, serial: str) -> None:
        with self._lock:
            self.away.pop(serial, None)


def limits_for(build: Any, opts: RunOptions) -> tuple[float, float]:
    """(seconds per model request, wall-clock seconds per episode): the run's flag, else the
    build's field, else the default."""
    return (opts.request_timeout or getattr(build, "request_timeout_s", None) or REQUEST_TIMEOUT_S,
            opts.episode_timeout or getattr(build, "episode_timeout_s", None) or EPISODE_TIMEOUT_S)


def run_build(build: Any, episodes: list[PlannedEpisode], store: RunStore, pool: _Pool,
              opts: RunOptions, progress: BuildProgress, hook: ProgressHook,
              attempts: dict[str, int]) -> None:
    from agent_host.agent.episode import run_episode
    from agent_host.serving import server as serving

    todo: queue.Queue[PlannedEpisode] = queue.Queue()
    for ep in episodes:
        todo.put(ep)
    server_lock = threading.Lock()
    stop = threading.Event()
    fatal: list[tuple[str, BaseException]] = []
    progress.away = pool.away
    request_timeout, episode_timeout = limits_for(build, opts)

    shared = (opts.servers or {}).get(build.id)
    with (contextlib.nullcontext(shared) if shared is not None else
          serving.start(build, log_dir=store.servers_dir, seed=0,
                        startup_timeout=opts.startup_timeout or build.startup_timeout_s)) as server:

        def ensure_server() -> None:
            with server_lock:
                if not server.alive():
                    server.restart()

        def one_episode(serial: str, phone: Any, ep: PlannedEpisode) -> EpisodeRecord:
            attempt = attempts.get(ep.episode_id, 0) + 1
            attempts[ep.episode_id] = attempt
            out_dir = store.fresh_episode_dir(ep.episode_id)
            try:
                rec = run_episode(ep.task, phone, server.endpoint, out_dir=out_dir, profile=opts.profile,
                                  sampling=build.sampling, identity=ep.identity(attempt, opts.run_id),
                                  request_timeout=request_timeout, episode_timeout=episode_timeout)
            except Exception as exc:  # a harness bug must cost an attempt, not the episode
                if _is_disk_error(exc):
                    raise
                log.exception("episode %s", ep.episode_id)
                rec = _harness_error(ep, build, serial, f"harness: {type(exc).__name__}: {exc}")
                rec = rec.model_copy(update={"attempt": attempt, "run_id": opts.run_id})
                write_json_atomic(out_dir / "episode.json", rec.model_dump(mode="json"))
            store.append(rec)
            return rec

        def work(serial: str) -> None:
            phone = None
            while not stop.is_set():
                if phone is None:
                    phone, why = reconnect(serial, opts.phone_wait, lambda: stop.is_set() or todo.empty())
                    if phone is None:
                        pool.set_away(serial, why)
                        _notify(hook, progress, None)
                        return
                    if serial in pool.away:
                        pool.back(serial)
                        _notify(hook, progress, None)
                try:
                    ep = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    rec = one_episode(serial, phone, ep)
                except BaseException:
                    todo.put(ep)  # not recorded: it is still to do when the run resumes
                    raise
                progress.outcomes[rec.outcome] += 1
                if rec.outcome != "error":
                    progress.done += 1
                    _notify(hook, progress, rec)
                    continue
                # An error: retry unless the attempts are spent, then find whose fault.
                if attempts[ep.episode_id] < opts.max_attempts:
                    progress.retries += 1
                    todo.put(ep)
                else:
                    progress.done += 1
                _notify(hook, progress, rec)
                if not server.alive():
                    ensure_server()
                phone = None  # a fresh connection (and uiautomator session) at the top of the loop
                if not _phone_alive(serial):  # then waited for with backoff there
                    pool.set_away(serial, rec.error or "phone stopped answering")
                    _notify(hook, progress, None)

        def worker(serial: str) -> None:
            try:
                work(serial)
            except BaseException as exc:  # never a silent death: the run stops and says why
                fatal.append((serial, exc))
                stop.set()

        first_round = True
        while not todo.empty() and not fatal:
            # each build first probes every phone again, the ones away before included
            alive = list(pool.serials) if first_round else pool.alive
            first_round = False
            if not alive:
                raise UserError(f"no phones left ({'; '.join(f'{s}: {w}' for s, w in pool.away.items())}); "
                                f"fix them and resume with --resume {store.dir}")
            threads = [threading.Thread(target=worker, args=(s,), name=f"phone-{s}", daemon=True)
                       for s in alive]
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        if fatal:
            raise _failure(fatal[0], store)


def _failure(item: tuple[str, BaseException], store: RunStore) -> RecordingFailed:
    serial, exc = item
    try:
        recorded = len(store.finished())
    except Exception:
        recorded = None
    what = "cannot write the run directory" if _is_disk_error(exc) or isinstance(exc, OSError) \
        else f"the worker for phone {serial} failed"
    count = f"{recorded} episode(s) recorded" if recorded is not None else "the recorded episodes are kept"
    return RecordingFailed(f"{what} ({type(exc).__name__}: {exc}); run stopped, {count} in "
                           f"{store.log_path}; fix it, then resume with: agent-host run --resume {store.dir}")


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
