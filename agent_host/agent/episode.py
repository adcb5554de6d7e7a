"""One episode: setup, the goal after setup (step 0), the step loop, teardown, the record.

Files in `out_dir` (docs/architecture.md, "Records"):
- `steps.jsonl`: one StepRecord per line, step 0 (after setup) first, each line flushed and
  fsynced as the step ends, so a crash loses at most the step in flight;
- `step-000.png` after setup, `step-NNN.png` the screen before step N's action;
- `episode.json`: the EpisodeRecord, written atomically (temporary file + rename) at the end;
- `error.txt`: the traceback, when the harness itself failed;
- `start_state.json`: the task's scope and the snapshot of it after setup, that every step's
  goal is judged against (judge/checks.py).

Every episode starts clean: before the task's setup, every kind of state in the task's scope is
emptied (phone/state.py `reset_commands`: the contacts, events, texts, calls, alarms and
folders it touches), so no earlier episode's leftovers reach this one; the setup then seeds
what the task needs.

Failures of the phone or the server end the episode with outcome `error` and the reason in
`error`; they never count against the model. A base variant whose goal already holds after
setup (or a verify variant whose goal does not) is an `error` too: setup did not produce the
start state the task needs, so the episode would measure nothing.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agent_host import watchdog
from agent_host.errors import is_disk_error
from agent_host.agent.model_client import Reply
from agent_host.agent.loop import (ContextExceeded, LoopState, ModelClient, Observation, ServerError, StepLoop,
                                   observe_xml, cached_share, render_key, tally_record)
from agent_host.config.builds import Sampling
from agent_host.config.observation import TEXT, ObservationSpec
from agent_host.config.outcome import label
from agent_host.config.phones import PhoneProfile
from agent_host.config.records import EpisodeIdentity, EpisodeRecord, PhaseTimes, StepRecord, Usage, write_json_atomic
from agent_host.config.requests import Json
from agent_host.config.requirements import UnboundPhoneFact
from agent_host.config.tasks import TaskInstance
from agent_host.config.phone_variation import Variation, choose
from agent_host.config.phone_variation import apply as apply_variation
from agent_host.judge.checks import Judge, Verdict
from agent_host.phone.device import (Phone, PhoneError, PhoneUnresponsive, RoundTripTally, counting_into, png_bytes,
                                     submit_beside)
from agent_host.phone.requirements import bind_task
from agent_host.phone.state import clean_start
from agent_host.phone.steps import StepFailed, run_steps
from agent_host.config.server_metrics import prefix_hit_rate
from agent_host.serving import metrics
from agent_host.serving.endpoint import Endpoint
from agent_host.watchdog import timed

if TYPE_CHECKING:   # annotations only: importing these costs the CLI's start
    import openai
    from PIL.Image import Image as PngImage

T = TypeVar("T")
SETTLE_S = 3.0
START_STATE = "start_state.json"
DEADLINE_GRACE_S = 2.0    # past --episode-timeout the watchdog abandons calls (the limits fire first)
TEARDOWN_LIMIT_S = 30.0   # teardown steps, in total


class _SetupFailed(Exception):
    """Setup did not make the start state the variant needs (the goal after setup)."""


class LimitReached(Exception):
    """A user-set bound on waiting fired (per-request model timeout, episode wall clock)."""


def settle_min_s(profile: PhoneProfile | None) -> float:
    """How long to let an action start before the first settle dump (PhoneProfile.settle_min_s)."""
    return profile.settle_min_s if profile is not None else PhoneProfile.model_fields["settle_min_s"].default


def settle_confirm(profile: PhoneProfile | None) -> bool:
    """Whether this phone's dumps need confirming by a second one (PhoneProfile.settle_confirm)."""
    return profile.settle_confirm if profile is not None else False


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Shots:
    """Screenshots, off the step's critical path: a step's screen is captured on a worker thread
    while the model thinks (the model call does not touch the phone; Phone's lock serialises
    the rest) and the loop waits for the capture before acting (`barrier`); PNG encoding and
    writing run on another worker. `close()` waits for all writes."""

    def __init__(self, out_dir: Path, enabled: bool = True):
        self.out_dir = out_dir
        self.enabled = enabled
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="screenshots")
        self.capture_pool = ThreadPoolExecutor(1, thread_name_prefix="capture")
        self.futures: list[Future[None]] = []
        self.pending: Future[str | None] | None = None   # save() gives the file name it wrote
        self.failures: list[str] = []
        self.latest: PngImage | None = None     # the last screen captured (a vision build's prompt image)

    def capture(self, name: str, phone: Phone) -> str | None:
        """Start capturing the current screen into `name`; `barrier()` waits for it."""
        if not self.enabled:
            return None
        self.barrier()
        self.latest = None     # a capture that fails leaves no image, not the last step's
        self.pending = submit_beside(self.capture_pool, lambda: self.save(name, phone.screenshot()))
        return name

    def barrier(self) -> None:
        """Wait for the capture in flight. A screenshot is optional for the episode: a capture
        that fails leaves the step without one and never ends the episode (a phone that is
        really gone fails the next action anyway)."""
        pending, self.pending = self.pending, None
        self.result(pending)

    def result(self, capture: Future[T] | None) -> T | None:
        """A capture's result, or None when there is none or it failed (noted in `failures`)."""
        try:
            return capture.result() if capture is not None else None
        except Exception as exc:
            self.failures.append(f"{type(exc).__name__}: {exc}"[:300])
            return None

    def save(self, name: str, img: PngImage | None) -> str | None:
        if not self.enabled or img is None:
            return None
        self.latest = img
        def write() -> None:
            (self.out_dir / name).write_bytes(png_bytes(img))
        self.futures.append(submit_beside(self.pool, write))
        return name

    def taken(self) -> PngImage | None:
        """The screen captured for this step, once the capture in flight is in."""
        self.barrier()
        return self.latest

    def store(self, ref: str, data: bytes) -> None:
        """A prompt image, written once by content (images/<sha>.png), beside the step."""
        path = self.out_dir / ref
        def write() -> None:
            path.parent.mkdir(exist_ok=True)
            if not path.exists():
                path.write_bytes(data)
        self.futures.append(submit_beside(self.pool, write))

    def close(self) -> None:
        try:
            self.barrier()
        except Exception:  # the episode already ended (or failed) without this screenshot
            pass
        self.capture_pool.shutdown(wait=True)
        for f in self.futures:
            try:
                f.result()
            except OSError:
                pass
        self.pool.shutdown(wait=True)


class _StepLog:
    def __init__(self, path: Path, on_step: Callable[[StepRecord], object] | None):
        self.f = path.open("w", encoding="utf-8")
        self.on_step = on_step

    def write(self, rec: StepRecord) -> None:
        # a text build's line as it always was: `image` only where a prompt carried one
        self.f.write(rec.model_dump_json(exclude={"image"} if rec.image is None else None) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())
        if self.on_step is not None:
            try:
                self.on_step(rec)
            except Exception:  # a display callback must not end an episode
                pass

    def close(self) -> None:
        self.f.close()


@dataclass
class _Start:
    """What setup leaves for the loop: the judge, the first screen, its verdict and screenshot."""
    task: TaskInstance     # bound to this phone's facts
    judge: Judge
    first: Observation
    verdict: Verdict
    shot0: PngImage | None


class _Files:
    """The episode's files while it runs (steps.jsonl, screenshots, requests.json) and the
    loop state they come from; `close()` finishes them, whatever ended the episode."""

    def __init__(self, out_dir: Path, on_step: Callable[[StepRecord], object] | None, screenshots: bool):
        self.out_dir = out_dir
        self.log = _StepLog(out_dir / "steps.jsonl", on_step)
        self.shots = _Shots(out_dir, screenshots)
        self.setup_times = PhaseTimes()
        self.verdict0: Verdict | None = None   # the goal after setup, once judged
        self.loop: StepLoop | None = None

    def state(self) -> LoopState:
        if self.loop is not None:
            return self.loop.state
        v = self.verdict0
        return (LoopState(goals=[v.goal], asked=[v.asked], clean=[v.clean], untouched=[v.untouched])
                if v is not None else LoopState(goals=[]))

    def close(self, endpoint: Endpoint, task: TaskInstance, values: int | None = None) -> None:
        self.log.close()
        self.shots.close()
        if self.loop is not None:
            _write_requests(self.out_dir, self.loop, endpoint, task, values)


def run_episode(task: TaskInstance, phone: Phone, endpoint: Endpoint, *, out_dir: Path,
                profile: PhoneProfile | None, seed: int = 0, sampling: Sampling | None = None,
                build_id: str = "", repeat: int = 0,
                on_step: Callable[[StepRecord], object] | None = None, settle_s: float = SETTLE_S,
                request_timeout: float = 120.0, client: openai.OpenAI | None = None,
                screenshots: bool = True, identity: EpisodeIdentity | None = None,
                episode_timeout: float | None = None, observation: ObservationSpec = TEXT) -> EpisodeRecord:
    """Run one episode of `task` on `phone` against `endpoint`; always returns a record.

    `sampling`: the build's Sampling (temperature, top_p, max_tokens); `seed` goes into every
    chat request; `on_step(StepRecord)` is called after each step is written (step 0 too);
    `client`: an openai.OpenAI to use instead of one made from `endpoint` (tests);
    `identity`: the episode's id, build, repeat, seed, attempt and run (from the run's plan;
    without it one is made from `build_id`, `repeat` and `seed`); `observation`: what the
    build is shown (a vision build's screenshots are taken whatever `screenshots` says).
    `episode.json` is written here, once."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started_at, t_start = _now(), time.monotonic()
    if identity is None:
        identity = EpisodeIdentity.of(build_id or endpoint.build_id or endpoint.model or "model", task, repeat, seed)
    variation = varied_phone(task, identity, profile)
    task = apply_variation(task, variation)
    metrics_before = _metrics(endpoint)
    files = _Files(out_dir, on_step, screenshots or observation.images)
    error: str | None = None
    unresponsive = False
    # The backstop behind every phone and model call of the episode: a call that never
    # returns (a frozen phone, a trickling server) is abandoned at the episode's deadline.
    deadline = watchdog.enter(episode_timeout + DEADLINE_GRACE_S if episode_timeout else None,
                              f"the episode's limit of {episode_timeout or 0:g} s, --episode-timeout")
    try:
        task = bind_task(task, phone)   # {phone.calendar_id}, {phone.time:...}: this phone's values
        start = _set_up(task, phone, profile, files, settle_s)
        model = Bounded(ModelClient(endpoint, sampling=sampling, seed=identity.seed, timeout=request_timeout,
                                    client=client, task=task.key, values=variation.values),
                        request_timeout, episode_timeout, t_start)
        files.loop = _loop(start, phone, model, profile, files, settle_s, observation)
        files.loop.run()
    except Exception as exc:
        error, unresponsive = _fault(exc, out_dir)
    finally:
        watchdog.leave(deadline)
        files.close(endpoint, task, variation.values)
    _tear_down(task, phone, profile, out_dir, skip=unresponsive)
    rec = _record(task, phone, endpoint, identity, files, error, started_at, t_start,
                  _server_metrics(endpoint, metrics_before), variation)
    write_json_atomic(out_dir / "episode.json", rec.model_dump(mode="json"))
    return rec


# -- the phases of an episode -------------------------------------------------------------------


def varied_phone(task: TaskInstance, identity: EpisodeIdentity, profile: PhoneProfile | None) -> Variation:
    """What the episode's condition varies on this phone, drawn from the episode's seed: the
    same for every build and every attempt (config/variation.py)."""
    return choose(task, identity.vary, identity.seed, simulated=profile is not None and profile.simulated)



def _set_up(task: TaskInstance, phone: Phone, profile: PhoneProfile | None, files: _Files,
            settle_s: float) -> _Start:
    """Setup steps, the first screen, the goal after setup (step 0's record); a start state
    that is not the variant's raises _SetupFailed."""
    judge = Judge(task, profile)
    shots, times = files.shots, files.setup_times
    tally = RoundTripTally()
    t0 = time.monotonic()
    with counting_into(tally):
        with timed(times, "settle"):
            run_steps(clean_start(task.scope) + list(task.setup), phone, profile)
            first = observe_xml(phone.settle(settle_s, min_s=settle_min_s(profile),
                                             confirm=settle_confirm(profile), key=render_key))
        capture0 = submit_beside(shots.capture_pool, phone.screenshot) if shots.enabled else None
        with timed(times, "judge"):
            verdict = judge.evaluate(phone, first.screen)      # beside the screenshot
        with timed(times, "observe"):
            shot0 = shots.result(capture0)
            name0 = shots.save("step-000.png", shot0)
    files.verdict0 = verdict
    if judge.start is not None:
        write_json_atomic(files.out_dir / START_STATE, {"scope": task.scope.as_dict(), "state": judge.start})
    files.log.write(StepRecord(step=0, observation=first.text, package=first.screen.package or None,
                               screenshot=name0, times=times, wall_s=round(watchdog.elapsed(t0), 4),
                               round_trips=tally_record(tally), goal=verdict.goal, asked=verdict.asked,
                               clean=verdict.clean, untouched=verdict.untouched, check_detail=verdict.detail))
    # a base variant's check must not hold yet (its goal cannot: the asked-for change is still
    # to be made); a verify variant's goal must hold
    held = verdict.goal if task.variant == "verify" else bool(verdict.asked)
    if not task.infeasible and held != (task.variant == "verify"):
        want = "not hold" if task.variant == "base" else "hold"
        raise _SetupFailed(f"setup: the goal does {'' if held else 'not '}hold after setup "
                           f"({task.variant} variant: it must {want}); check: {json.dumps(verdict.detail)[:300]}")
    return _Start(task, judge, first, verdict, shot0)


def _loop(start: _Start, phone: Phone, model: Bounded, profile: PhoneProfile | None, files: _Files,
          settle_s: float, observation: ObservationSpec) -> StepLoop:
    shots = files.shots

    def screenshot(n: int) -> str | None:
        if not shots.enabled:
            return None
        if n == 1:  # step 1 sees the screen after setup
            return shots.save("step-001.png", start.shot0)
        return shots.capture(f"step-{n:03d}.png", phone)

    return StepLoop(goal=start.task.goal, phone=phone, model=model, judge=start.judge, profile=profile,
                    max_steps=start.task.max_steps, first=start.first, initial=start.verdict,
                    screenshot=screenshot, before_act=shots.barrier, write_step=files.log.write,
                    settle_s=settle_s, settle_min_s=settle_min_s(profile), settle_confirm=settle_confirm(profile),
                    observation=observation, image=shots.taken, store_image=shots.store)


# What ended an episode early, by kind of failure, and the prefix its `error` gets: none of
# these counts against the model (an `error` episode is retried by the run).
_FAULTS: tuple[tuple[type[Exception] | tuple[type[Exception], ...], str], ...] = (
    (_SetupFailed, ""),                            # its message starts "setup:"
    ((StepFailed, UnboundPhoneFact), "setup: "),   # the start state was not made
    (PhoneError, "phone: "),
    (LimitReached, "limit: "),
    (ServerError, "server: "),
)


def _fault(exc: Exception, out_dir: Path) -> tuple[str, bool]:
    """(the episode's `error`, whether the phone stopped answering). Anything else is a harness
    bug: its traceback goes next to the record. A run directory that cannot be written stops
    the run (runs.execute), with no retry."""
    for kinds, prefix in _FAULTS:
        if isinstance(exc, kinds):
            return f"{prefix}{exc}", isinstance(exc, PhoneUnresponsive)
    if is_disk_error(exc, inside=out_dir):
        raise exc
    (out_dir / "error.txt").write_text(traceback.format_exc(), encoding="utf-8")
    return f"harness: {type(exc).__name__}: {exc}", False


def _tear_down(task: TaskInstance, phone: Phone, profile: PhoneProfile | None, out_dir: Path, *,
               skip: bool) -> None:
    """Teardown steps; a failure is noted in error.txt and the outcome stands (the next
    episode's health check finds out about the phone)."""
    try:
        if skip:  # asking a phone that stopped answering would only wait again
            raise PhoneUnresponsive("skipped: the phone did not answer during the episode")
        with watchdog.deadline(TEARDOWN_LIMIT_S, "teardown"):
            run_steps(task.teardown, phone, profile)
    except Exception as exc:
        with (out_dir / "error.txt").open("a", encoding="utf-8") as f:
            f.write(f"teardown: {type(exc).__name__}: {exc}\n")


def _server_metrics(endpoint: Endpoint, before: dict[str, float] | None) -> dict[str, float] | None:
    after = _metrics(endpoint) if before is not None else None
    if before is None or after is None:
        return None
    try:
        return metrics.delta(before, after)
    except Exception:
        return None


def _record(task: TaskInstance, phone: Phone, endpoint: Endpoint, identity: EpisodeIdentity, files: _Files,
            error: str | None, started_at: str, t_start: float,
            server_metrics: dict[str, float] | None, variation: Variation) -> EpisodeRecord:
    """The episode's record: the outcome label from the goals and the final actions."""
    state = files.state()
    goals = state.goals
    j = label(goals, complete_step=state.complete_step, infeasible_step=state.infeasible_step,
              infeasible_task=bool(task.infeasible), error=error if error or goals else "no goal recorded",
              exhausted=state.exhausted is not None, asked=state.asked, clean=state.clean,
              untouched=state.untouched)
    share, share_source = episode_cached_share(state.usage_after_first, server_metrics)
    return EpisodeRecord(
        episode_id=identity.episode_id, run_id=identity.run_id, attempt=identity.attempt,
        build=identity.build, model=endpoint.model, task=task.id, task_id=task.task_id,
        task_file=str(task.source), variant=task.variant, infeasible=bool(task.infeasible),
        repeat=identity.repeat, seed=identity.seed, phone=phone.serial,
        outcome=j.outcome,
        error=error, goal_initial=j.goal_initial, goal_first_step=j.goal_first_step,
        goal_lost_step=j.goal_lost_step, goal_final=j.goal_final, complete_step=j.complete_step,
        infeasible_step=j.infeasible_step, steps=state.steps, max_steps=task.max_steps,
        wasted_steps=state.wasted, started_at=started_at, ended_at=_now(),
        wall_s=round(watchdog.elapsed(t_start), 3), times=_sum_times(files.setup_times, state.times),
        usage=state.usage, server_metrics=server_metrics, cached_share=share,
        cached_share_source=share_source,
        reason=state.reason if state.reason is not None else state.stop, answer=state.answer,
        exhausted=state.exhausted if j.outcome == "exhausted" else None,
        vary=identity.vary, variation=variation.as_dict() if variation.kinds else None)


def _write_requests(out_dir: Path, loop: StepLoop, endpoint: Endpoint, task: TaskInstance,
                    values: int | None = None) -> None:
    """requests.json: what every request sent, to rebuild it byte for byte (config/requests.py)."""
    from agent_host.config.requests import REQUESTS, RequestLog
    from agent_host.serving.endpoint import task_header

    log = RequestLog(model=endpoint.model, headers=task_header(task.key, values), tools=loop.tools,
                     messages=loop.messages, requests=loop.requests,
                     history_images=loop.spec.history_images if loop.spec.images else None)
    write_json_atomic(out_dir / REQUESTS, log.dump())


def episode_cached_share(after_first: Usage, server_metrics: dict[str, float] | None
                         ) -> tuple[float | None, str | None]:
    """The prefix-cache share of prompt tokens: from the responses' counts over steps 2.., else
    the /metrics prefix-cache hits over queries of the whole episode (step 1 included)."""
    share = cached_share(after_first)
    if share is not None:
        return share, "usage"
    rate = prefix_hit_rate(server_metrics or {})
    return (round(rate, 4), "metrics") if rate is not None else (None, None)


class Bounded:
    """The model client under the episode's limits: each request may take at most
    `request_timeout` s and no longer than the episode has left; a request that ran out of
    time is not retried here (the run retries the episode as infrastructure)."""

    def __init__(self, model: ModelClient, request_timeout: float, episode_timeout: float | None, t_start: float):
        self.model = model
        self.request_timeout = request_timeout
        self.episode_timeout = episode_timeout
        self.deadline = t_start + episode_timeout if episode_timeout else None
        self.base = model.client

    def __getattr__(self, name: str) -> Any:   # Any: whatever the wrapped client's attribute is
        # Everything but chat() is the wrapped client's (max_tokens(), sampling, ...).
        return getattr(self.model, name)

    def chat(self, messages: list[Json], tools: list[Json]) -> Reply:
        timeout = self.request_timeout
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise LimitReached(f"episode wall-clock limit of {self.episode_timeout:g} s reached "
                                   f"(--episode-timeout)")
            timeout = min(timeout, left)
        if hasattr(self.base, "with_options"):
            self.model.client = self.base.with_options(timeout=timeout, max_retries=0)
        self.model.timeout = timeout
        t0 = time.monotonic()
        try:
            return self.model.chat(messages, tools)
        except ServerError as exc:
            import openai
            if not isinstance(exc.__cause__, openai.APITimeoutError):
                raise
            if timeout < self.request_timeout:
                raise LimitReached(f"episode wall-clock limit of {self.episode_timeout:g} s reached while "
                                   f"waiting for the model (--episode-timeout)") from exc
            raise LimitReached(f"model request timed out after {watchdog.elapsed(t0):.0f} s "
                               f"(limit {self.request_timeout:g} s, --request-timeout)") from exc


def _sum_times(a: PhaseTimes, b: PhaseTimes) -> PhaseTimes:
    return PhaseTimes(**{k: round(getattr(a, k) + getattr(b, k), 4) for k in PhaseTimes.model_fields})


METRICS_LIMIT_S = 10.0


def _metrics(endpoint: Endpoint) -> dict[str, float] | None:
    if not endpoint.metrics_url:
        return None
    try:
        return watchdog.call(lambda: metrics.snapshot(endpoint), METRICS_LIMIT_S, "metrics")
    except Exception:  # a server that trickles /metrics costs the episode its counters, no more
        return None


__all__ = ["run_episode", "ContextExceeded", "Usage"]
