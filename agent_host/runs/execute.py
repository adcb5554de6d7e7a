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
import logging
import queue
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from agent_host.config.builds import Build
from agent_host.config.phones import PhoneProfile
from agent_host.config.records import EpisodeRecord, write_json_atomic
from agent_host.errors import UserError, is_disk_error
from agent_host.runs.plan import PlannedEpisode
from agent_host.runs.requirements import servable, take
from agent_host.runs.store import RunStore

if TYPE_CHECKING:   # annotations only: these are imported when a build is played (CLI start time)
    from agent_host.phone.device import Phone
    from agent_host.serving.server import ManagedServer

REQUEST_TIMEOUT_S = 120.0      # one model request (a step's answer); was 600 s, retried once
EPISODE_TIMEOUT_S = 1200.0     # one episode, wall clock
PHONE_WAIT_S = 60.0            # a phone that stopped answering is waited for this long
PROBE_S = 10.0                 # one health probe of a phone (connect, `echo ok`), in total
MIN_PROBE_S = 1.0              # the least a probe inside a phone wait is given
# (build, log_dir=, startup_timeout=) -> a context manager giving its server (RunOptions.served)
Served = Callable[..., "contextlib.AbstractContextManager[ManagedServer]"]


@dataclass
class BuildProgress:
    build: str
    total: int
    done: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    retries: int = 0
    away: dict[str, str] = field(default_factory=dict)   # phones not answering: serial -> why


@dataclass
class RunOptions:
    profile: PhoneProfile | None
    max_attempts: int = 3
    startup_timeout: float | None = None
    run_id: str = ""
    request_timeout: float | None = None   # seconds per model request (None: the build's)
    episode_timeout: float | None = None   # wall-clock seconds per episode (None: the build's)
    phone_wait: float = PHONE_WAIT_S       # how long a phone that stopped answering is waited for
    serves: Callable[[str, PlannedEpisode], bool] | None = None   # (serial, episode): the phone has what it requires
    stop: threading.Event | None = None    # once set, no new episode starts
    servers: dict[str, ManagedServer] | None = None            # build id -> a server already up (runs/sequential.py keeps them)
    # (build, log_dir=, startup_timeout=) -> a context manager giving its server: the demo's
    # serving/kept.KeptServers.served, which keeps it up for the replay; None: start and stop one
    served: Served | None = None


class RecordingFailed(UserError):
    """The run directory cannot be written (disk full, read-only, I/O error) or a worker failed:
    the run stops, and says what is recorded and how to resume."""


ProgressHook = Callable[[BuildProgress, EpisodeRecord | None], None]
log = logging.getLogger(__name__)

def _notify(hook: ProgressHook, progress: BuildProgress, rec: EpisodeRecord | None) -> None:
    try:
        hook(progress, rec)
    except Exception:  # a display problem must not stop a worker
        log.exception("progress hook")


def _harness_error(ep: PlannedEpisode, build: Build, serial: str, why: str) -> EpisodeRecord:
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")
    return EpisodeRecord(episode_id=ep.episode_id, build=build.id, model=build.id, task=ep.task.id,
                         task_id=ep.task.task_id,
                         task_file=str(ep.task.source), variant=ep.variant,
                         infeasible=ep.task.infeasible, repeat=ep.repeat,
                         seed=ep.seed, phone=serial, outcome="error", error=why,
                         max_steps=ep.task.max_steps, started_at=now, ended_at=now)


def _probe(serial: str, within: float) -> Phone:
    """A connected phone that answers `echo ok`, both within `within` seconds together."""
    from agent_host.phone.device import Phone  # imported here: keeps the CLI start fast
    end = time.monotonic() + within
    phone = Phone.connect(serial, timeout=within)
    phone.shell("echo ok", timeout=max(0.5, end - time.monotonic()))
    return phone


def _phone_alive(serial: str) -> bool:
    try:
        _probe(serial, PROBE_S)
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


def reconnect(serial: str, wait: float, give_up: Callable[[], bool] = lambda: False) -> tuple[Phone | None, str]:
    """(a connected, answering Phone, "") within `wait` seconds, probing with backoff, else
    (None, why). The probes share the wait's deadline (each once took its own 10 s on top of it,
    so `--phone-wait 10` waited about 70 s); the first probe gets at least MIN_PROBE_S.
    `give_up()` is asked before each probe (the run is stopping, or no work is left): a
    worker back from an error with nothing left to do no longer probes a frozen phone first."""
    why = "not answering"
    end = time.monotonic() + wait
    for n, delay in enumerate([0.0, *backoff_delays(wait)]):
        deadline = min(time.monotonic() + delay, end)
        while time.monotonic() < deadline:
            if give_up():
                return None, f"not answering ({why})"
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
        if give_up():
            return None, f"not answering ({why})"
        left = end - time.monotonic()
        if n and left <= 0:
            break
        try:
            return _probe(serial, min(PROBE_S, max(MIN_PROBE_S, left))), ""
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


def limits_for(build: Build, opts: RunOptions) -> tuple[float, float]:
    """(seconds per model request, wall-clock seconds per episode): the run's flag, else the
    build's field, else the default."""
    return (opts.request_timeout or build.request_timeout_s or REQUEST_TIMEOUT_S,
            opts.episode_timeout or build.episode_timeout_s or EPISODE_TIMEOUT_S)


def run_build(build: Build, episodes: list[PlannedEpisode], store: RunStore, pool: _Pool,
              opts: RunOptions, progress: BuildProgress, hook: ProgressHook,
              attempts: dict[str, int]) -> None:
    """One build's episodes: its server up (or the one `opts.servers` keeps), then rounds of
    one worker thread per phone until nothing is left to do, then the server down."""
    from agent_host.serving import server as serving

    shared = (opts.servers or {}).get(build.id)
    timeout = opts.startup_timeout or build.startup_timeout_s
    with (contextlib.nullcontext(shared) if shared is not None else
          opts.served(build, log_dir=store.servers_dir, startup_timeout=timeout) if opts.served else
          serving.start(build, log_dir=store.servers_dir, seed=0, startup_timeout=timeout)) as server:
        play = _BuildPlay(build, store, pool, opts, progress, hook, attempts, server)
        for ep in episodes:
            play.todo.put(ep)
        play.rounds()


@dataclass
class _BuildPlay:
    """The state one build's workers share: what is left to do, the server, why they stop."""
    build: Build
    store: RunStore
    pool: _Pool
    opts: RunOptions
    progress: BuildProgress
    hook: ProgressHook
    attempts: dict[str, int]     # episode id -> attempts so far (across builds and resumes)
    server: ManagedServer
    todo: queue.Queue[PlannedEpisode] = field(default_factory=queue.Queue)
    server_lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)      # the workers stop
    halted: threading.Event = field(default_factory=threading.Event)    # a second signal: nothing more is recorded
    fatal: list[tuple[str, BaseException]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.progress.away = self.pool.away
        self.request_timeout, self.episode_timeout = limits_for(self.build, self.opts)

    def stopping(self) -> bool:
        return self.opts.stop is not None and self.opts.stop.is_set()

    def rounds(self) -> None:
        """Rounds of workers until nothing is left (a phone back from away joins the next)."""
        first_round = True
        while not self.todo.empty() and not self.fatal and not self.stopping():
            # each build first probes every phone again, the ones away before included
            alive = list(self.pool.serials) if first_round else self.pool.alive
            first_round = False
            self._refuse_if_stuck(alive)
            threads = [threading.Thread(target=self.worker, args=(s,), name=f"phone-{s}", daemon=True)
                       for s in alive]
            for t in threads:
                t.start()
            try:
                for t in threads:
                    while t.is_alive():
                        t.join(0.2)
            except BaseException:  # a second signal: stop at once, record nothing more
                self.halted.set()
                self.stop.set()
                raise
        if self.fatal:
            raise _failure(self.fatal[0], self.store)

    def _refuse_if_stuck(self, alive: list[str]) -> None:
        away = "; ".join(f"{s}: {w}" for s, w in self.pool.away.items())
        if not alive:
            raise UserError(f"no phones left ({away}); fix them and resume with --resume {self.store.dir}")
        if self.opts.serves is not None and not servable(self.todo, alive, self.opts.serves):
            raise UserError(f"{self.todo.qsize()} episode(s) left need what only phones now away have "
                            f"({away or 'none'}); resume with --resume {self.store.dir}")

    def worker(self, serial: str) -> None:
        try:
            self.work(serial)
        except BaseException as exc:  # never a silent death: the run stops and says why
            self.fatal.append((serial, exc))
            self.stop.set()

    def work(self, serial: str) -> None:
        """Take episodes this phone serves until none is left; after an error, check the
        server and the phone before the next."""
        phone = None
        while not self.stop.is_set() and not self.stopping():
            if phone is None and (phone := self._connect(serial)) is None:
                return
            ep = take(self.todo, lambda e: self.opts.serves is None or self.opts.serves(serial, e))
            if ep is None:
                return
            try:
                rec = self.one_episode(serial, phone, ep)
            except _Interrupted:
                return
            except BaseException:
                self.todo.put(ep)  # not recorded: it is still to do when the run resumes
                raise
            self._count(ep, rec)
            if rec.outcome != "error":
                continue
            if self.stopping():
                return
            self._after_error(serial, rec)
            phone = None  # a fresh connection (and uiautomator session) at the top of the loop

    def _connect(self, serial: str) -> Phone | None:
        phone, why = reconnect(serial, self.opts.phone_wait, lambda: self.stop.is_set() or self.todo.empty())
        if phone is None:
            self.pool.set_away(serial, why)
            _notify(self.hook, self.progress, None)
        elif serial in self.pool.away:
            self.pool.back(serial)
            _notify(self.hook, self.progress, None)
        return phone

    def _count(self, ep: PlannedEpisode, rec: EpisodeRecord) -> None:
        """Tally a recorded episode; an error is retried unless its attempts are spent."""
        self.progress.outcomes[rec.outcome] += 1
        if rec.outcome == "error" and self.attempts[ep.episode_id] < self.opts.max_attempts:
            self.progress.retries += 1
            self.todo.put(ep)
        else:
            self.progress.done += 1
        _notify(self.hook, self.progress, rec)

    def _after_error(self, serial: str, rec: EpisodeRecord) -> None:
        """Find whose fault an error was: a dead server is restarted; a phone that does not
        answer is marked away (then waited for with backoff when the worker reconnects).
        With nothing left to do there is nothing to decide: probing a frozen phone then only
        kept a finished run waiting (a run exited 17 s after its last episode's limit)."""
        if self.todo.empty():
            return
        if not self.server.alive():
            with self.server_lock:
                if not self.server.alive():
                    self.server.restart()
        if not _phone_alive(serial):
            self.pool.set_away(serial, rec.error or "phone stopped answering")
            _notify(self.hook, self.progress, None)

    def one_episode(self, serial: str, phone: Phone, ep: PlannedEpisode) -> EpisodeRecord:
        from agent_host.agent.episode import run_episode
        attempt = self.attempts.get(ep.episode_id, 0) + 1
        self.attempts[ep.episode_id] = attempt
        out_dir = self.store.fresh_episode_dir(ep.episode_id)
        try:
            rec = run_episode(ep.task, phone, self.server.endpoint, out_dir=out_dir, profile=self.opts.profile,
                              sampling=self.build.sampling, identity=ep.identity(attempt, self.opts.run_id),
                              request_timeout=self.request_timeout, episode_timeout=self.episode_timeout,
                              observation=self.build.observation_spec())
        except Exception as exc:  # a harness bug must cost an attempt, not the episode
            if is_disk_error(exc, inside=self.store.dir):
                raise
            log.exception("episode %s", ep.episode_id)
            rec = _harness_error(ep, self.build, serial, f"harness: {type(exc).__name__}: {exc}")
            rec = rec.model_copy(update={"attempt": attempt, "run_id": self.opts.run_id})
            write_json_atomic(out_dir / "episode.json", rec.model_dump(mode="json"))
        if self.halted.is_set() or (rec.outcome == "error" and self.stopping()):
            # stopped by a signal: an episode cut short is not the model's failure nor an
            # attempt spent; it stays to do, and its folder says why
            _mark_interrupted(out_dir, rec)
            raise _Interrupted()
        self.store.append(rec)
        return rec


class _Interrupted(Exception):
    """The episode in hand was cut short by a stop signal; it is not recorded."""


def _mark_interrupted(out_dir: Path, rec: EpisodeRecord) -> None:
    try:
        (out_dir / "interrupted.txt").write_text(
            f"interrupted by a stop signal, not recorded (it runs again on resume): {rec.outcome}"
            f"{': ' + rec.error if rec.error else ''}\n", encoding="utf-8")
    except OSError:
        pass


def _failure(item: tuple[str, BaseException], store: RunStore) -> RecordingFailed:
    serial, exc = item
    try:
        recorded = len(store.finished())
    except Exception:
        recorded = None
    what = "cannot write the run directory" if is_disk_error(exc) or isinstance(exc, OSError) \
        else f"the worker for phone {serial} failed"
    count = f"{recorded} episode(s) recorded" if recorded is not None else "the recorded episodes are kept"
    return RecordingFailed(f"{what} ({type(exc).__name__}: {exc}); run stopped, {count} in "
                           f"{store.log_path}; fix it, then resume with: agent-host run --resume {store.dir}")


def execute(builds: Sequence[Build], planned: Sequence[PlannedEpisode], store: RunStore,
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
        if todo and not (opts.stop is not None and opts.stop.is_set()):
            run_build(build, todo, store, pool, opts, prog, hook, attempts)
    return result
