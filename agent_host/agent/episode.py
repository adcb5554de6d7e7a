"""One episode: setup, the goal after setup (step 0), the step loop, teardown, the record.

Files in `out_dir` (docs/architecture.md, "Records"):
- `steps.jsonl`: one StepRecord per line, step 0 (after setup) first, each line flushed and
  fsynced as the step ends, so a crash loses at most the step in flight;
- `step-000.png` after setup, `step-NNN.png` the screen before step N's action;
- `episode.json`: the EpisodeRecord, written atomically (temporary file + rename) at the end;
- `error.txt`: the traceback, when the harness itself failed.

Failures of the phone or the server end the episode with outcome `error` and the reason in
`error`; they never count against the model. A base variant whose goal already holds after
setup (or a verify variant whose goal does not) is an `error` too: setup did not produce the
start state the task needs, so the episode would measure nothing.
"""

from __future__ import annotations

import errno
import json
import os
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agent_host.agent.loop import (ContextExceeded, LoopState, ModelClient, ServerError, StepLoop, observe_xml,
                                   cached_share, render_key, tally_record)
from agent_host.config.records import EpisodeIdentity, EpisodeRecord, PhaseTimes, StepRecord, Usage, write_json_atomic
from agent_host.judge.checks import Judge
from agent_host.config.outcome import label
from agent_host import watchdog
from agent_host.config.requirements import UnboundPhoneFact
from agent_host.phone.device import (PhoneError, PhoneUnresponsive, RoundTripTally, counting_into, png_bytes,
                                     submit_beside)
from agent_host.phone.requirements import bind_task
from agent_host.phone.steps import StepFailed, run_steps
from agent_host.serving import metrics

SETTLE_S = 3.0
DEADLINE_GRACE_S = 2.0    # past --episode-timeout the watchdog abandons calls (the limits fire first)
TEARDOWN_LIMIT_S = 30.0   # teardown steps, in total
_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG}


def settle_min_s(profile: Any) -> float:
    """How long to let an action start before the first settle dump (PhoneProfile.settle_min_s)."""
    return float(getattr(profile, "settle_min_s", 0.3))


def settle_confirm(profile: Any) -> bool:
    """Whether this phone's dumps need confirming by a second one (PhoneProfile.settle_confirm)."""
    return bool(getattr(profile, "settle_confirm", False))


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
        self.futures: list[Any] = []
        self.pending: Any = None
        self.failures: list[str] = []

    def capture(self, name: str, phone: Any) -> str | None:
        """Start capturing the current screen into `name`; `barrier()` waits for it."""
        if not self.enabled:
            return None
        self.barrier()

        self.pending = submit_beside(self.capture_pool, lambda: self.save(name, phone.screenshot()))
        return name

    def barrier(self) -> None:
        """Wait for the capture in flight. A screenshot is optional for the episode: a capture
        that fails leaves the step without one and never ends the episode (a phone that is
        really gone fails the next action anyway)."""
        pending, self.pending = self.pending, None
        if pending is not None:
            try:
                pending.result()
            except Exception as exc:
                self.failures.append(f"{type(exc).__name__}: {exc}"[:300])

    def save(self, name: str, img: Any) -> str | None:
        if not self.enabled or img is None:
            return None
        def write() -> None:
            (self.out_dir / name).write_bytes(png_bytes(img))
        self.futures.append(self.pool.submit(write))
        return name

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
    def __init__(self, path: Path, on_step: Callable[[StepRecord], Any] | None):
        self.f = path.open("w", encoding="utf-8")
        self.on_step = on_step

    def write(self, rec: StepRecord) -> None:
        self.f.write(rec.model_dump_json() + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())
        if self.on_step is not None:
            try:
                self.on_step(rec)
            except Exception:  # a display callback must not end an episode
                pass

    def close(self) -> None:
        self.f.close()


def run_episode(task: Any, phone: Any, endpoint: Any, *, out_dir: Path, profile: Any, seed: int = 0,
                sampling: Any = None, build_id: str = "", repeat: int = 0,
                on_step: Callable[[StepRecord], Any] | None = None, settle_s: float = SETTLE_S,
                request_timeout: float = 120.0, client: Any = None,
                screenshots: bool = True, identity: EpisodeIdentity | None = None,
                episode_timeout: float | None = None) -> EpisodeRecord:
    """Run one episode of `task` on `phone` against `endpoint`; always returns a record.

    `sampling`: the build's Sampling (temperature, top_p, max_tokens); `seed` goes into every
    chat request; `on_step(StepRecord)` is called after each step is written (step 0 too);
    `client`: an openai.OpenAI to use instead of one made from `endpoint` (tests);
    `identity`: the episode's id, build, repeat, seed, attempt and run (from the run's plan;
    without it one is made from `build_id`, `repeat` and `seed`). `episode.json` is written
    here, once."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started_at = _now()
    t_start = time.monotonic()
    if identity is None:
        build = build_id or getattr(endpoint, "build_id", "") or endpoint.model or "model"
        identity = EpisodeIdentity.of(build, task, repeat, seed)
    build, seed = identity.build, identity.seed

    metrics_before = _metrics(endpoint)
    log = _StepLog(out_dir / "steps.jsonl", on_step)
    shots = _Shots(out_dir, screenshots)
    error: str | None = None
    state = LoopState(goals=[])
    setup_times = PhaseTimes()
    loop: StepLoop | None = None
    # The backstop behind every phone and model call of the episode: a call that never
    # returns (a frozen phone, a trickling server) is abandoned at the episode's deadline.
    deadline = watchdog.enter(episode_timeout + DEADLINE_GRACE_S if episode_timeout else None,
                              f"the episode's limit of {episode_timeout or 0:g} s, --episode-timeout")
    unresponsive = False
    try:
        task = bind_task(task, phone)   # {phone.calendar_id}, {phone.time:...}: this phone's values
        judge = Judge(task, profile)
        t0 = time.monotonic()
        tally0 = RoundTripTally()
        with counting_into(tally0):
            run_steps(task.setup, phone, profile)
            first = observe_xml(phone.settle(settle_s, min_s=settle_min_s(profile),
                                             confirm=settle_confirm(profile), key=render_key))
            setup_times.settle = watchdog.elapsed(t0)
            t1 = time.monotonic()
            capture0 = submit_beside(shots.capture_pool, phone.screenshot) if screenshots else None
            verdict = judge.evaluate(phone, first.screen)      # beside the screenshot
            setup_times.judge = watchdog.elapsed(t1)
            t2 = time.monotonic()
            try:
                shot0 = capture0.result() if capture0 is not None else None
            except Exception as exc:  # optional, as every screenshot (see _Shots.barrier)
                shots.failures.append(f"{type(exc).__name__}: {exc}"[:300])
                shot0 = None
            name0 = shots.save("step-000.png", shot0)
            setup_times.observe = watchdog.elapsed(t2)
        state.goals = [verdict.goal]
        log.write(StepRecord(step=0, observation=first.text, package=first.screen.package or None,
                             screenshot=name0, times=setup_times, wall_s=round(watchdog.elapsed(t0), 4),
                             round_trips=tally_record(tally0),
                             goal=verdict.goal, check_detail=verdict.detail))
        if not task.infeasible and verdict.goal != (task.variant == "verify"):
            want = "not hold" if task.variant == "base" else "hold"
            raise _SetupFailed(f"setup: the goal does {'' if verdict.goal else 'not '}hold after setup "
                               f"({task.variant} variant: it must {want}); check: {json.dumps(verdict.detail)[:300]}")

        def screenshot(n: int) -> str | None:
            if not screenshots:
                return None
            if n == 1:  # step 1 sees the screen after setup
                return shots.save("step-001.png", shot0)
            return shots.capture(f"step-{n:03d}.png", phone)

        model = Bounded(ModelClient(endpoint, sampling=sampling, seed=seed, timeout=request_timeout,
                                    client=client, task=task.key), request_timeout, episode_timeout, t_start)
        loop = StepLoop(goal=task.goal, phone=phone, model=model, judge=judge, profile=profile,
                        max_steps=task.max_steps, first=first, goal_initial=verdict.goal,
                        screenshot=screenshot, before_act=shots.barrier, write_step=log.write,
                        settle_s=settle_s, settle_min_s=settle_min_s(profile),
                        settle_confirm=settle_confirm(profile))
        state = loop.run()
    except _SetupFailed as exc:
        error = str(exc)
    except (StepFailed, UnboundPhoneFact) as exc:   # the start state was not made: not the model's
        error = f"setup: {exc}"
    except PhoneError as exc:
        error = f"phone: {exc}"
        unresponsive = isinstance(exc, PhoneUnresponsive)
        state = loop.state if loop is not None else state
    except LimitReached as exc:
        error = f"limit: {exc}"
        state = loop.state if loop is not None else state
    except ServerError as exc:
        error = f"server: {exc}"
        state = loop.state if loop is not None else state
    except Exception as exc:  # a harness bug: keep the traceback next to the record
        if isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS:
            raise  # the run directory is full or broken: the run stops (runs.execute), no retry
        error = f"harness: {type(exc).__name__}: {exc}"
        (out_dir / "error.txt").write_text(traceback.format_exc(), encoding="utf-8")
        state = loop.state if loop is not None else state
    finally:
        watchdog.leave(deadline)
        log.close()
        shots.close()
        if loop is not None:
            _write_requests(out_dir, loop, endpoint, task)

    teardown_error = None
    try:
        if unresponsive:  # asking a phone that stopped answering would only wait again
            raise PhoneUnresponsive("skipped: the phone did not answer during the episode")
        with watchdog.deadline(TEARDOWN_LIMIT_S, "teardown"):
            run_steps(task.teardown, phone, profile)
    except Exception as exc:  # the outcome stands; the next episode finds out about the phone
        teardown_error = f"teardown: {type(exc).__name__}: {exc}"
        with (out_dir / "error.txt").open("a", encoding="utf-8") as f:
            f.write(teardown_error + "\n")

    goals = state.goals
    j = label(goals, complete_step=state.complete_step, infeasible_step=state.infeasible_step,
              infeasible_task=bool(task.infeasible), error=error if error or goals else "no goal recorded",
              exhausted=state.exhausted is not None)
    metrics_after = _metrics(endpoint) if metrics_before is not None else None
    server_metrics = None
    if metrics_before is not None and metrics_after is not None:
        try:
            server_metrics = metrics.delta(metrics_before, metrics_after)
        except Exception:
            server_metrics = None
    share, share_source = episode_cached_share(state.usage_after_first, server_metrics)
    reason = state.reason
    if reason is None and state.stop:
        reason = state.stop
    rec = EpisodeRecord(
        episode_id=identity.episode_id, run_id=identity.run_id, attempt=identity.attempt,
        build=build, model=endpoint.model, task=task.id, task_id=task.task_id, task_file=str(task.source),
        variant=task.variant, infeasible=bool(task.infeasible), repeat=identity.repeat, seed=seed,
        phone=getattr(phone, "serial", str(phone)), outcome=j.outcome,  # type: ignore[arg-type]
        error=error, goal_initial=j.goal_initial, goal_first_step=j.goal_first_step,
        goal_lost_step=j.goal_lost_step, goal_final=j.goal_final, complete_step=j.complete_step,
        infeasible_step=j.infeasible_step, steps=state.steps, max_steps=task.max_steps,
        wasted_steps=state.wasted, started_at=started_at, ended_at=_now(),
        wall_s=round(watchdog.elapsed(t_start), 3), times=_sum_times(setup_times, state.times),
        usage=state.usage, server_metrics=server_metrics, cached_share=share,
        cached_share_source=share_source, reason=reason, answer=state.answer,
        exhausted=state.exhausted if j.outcome == "exhausted" else None)
    write_json_atomic(out_dir / "episode.json", rec.model_dump(mode="json"))
    return rec


def _write_requests(out_dir: Path, loop: StepLoop, endpoint: Any, task: Any) -> None:
    """requests.json: what every request sent, to rebuild it byte for byte (config/requests.py)."""
    from agent_host.config.requests import REQUESTS, RequestLog
    from agent_host.serving.endpoint import task_header

    log = RequestLog(model=endpoint.model, headers=task_header(task.key), tools=loop.tools,
                     messages=loop.messages, requests=loop.requests)
    write_json_atomic(out_dir / REQUESTS, log.model_dump(mode="json"))


def episode_cached_share(after_first: Usage, server_metrics: dict[str, float] | None
                         ) -> tuple[float | None, str | None]:
    """The prefix-cache share of prompt tokens: from the responses' counts over steps 2.., else
    the /metrics prefix-cache hits over queries of the whole episode (step 1 included)."""
    share = cached_share(after_first)
    if share is not None:
        return share, "usage"
    queries = (server_metrics or {}).get("vllm:prefix_cache_queries_total", 0.0)
    if queries > 0:
        return round(server_metrics.get("vllm:prefix_cache_hits_total", 0.0) / queries, 4), "metrics"
    return None, None


class _SetupFailed(Exception):
    pass


class LimitReached(Exception):
    """A user-set bound on waiting fired (per-request model timeout, episode wall clock)."""


class Bounded:
    """The model client under the episode's limits: each request may take at most
    `request_timeout` s and no longer than the episode has left; a request that ran out of
    time is not retried here (the run retries the episode as infrastructure)."""

    def __init__(self, model: Any, request_timeout: float, episode_timeout: float | None, t_start: float):
        self.model = model
        self.request_timeout = request_timeout
        self.episode_timeout = episode_timeout
        self.deadline = t_start + episode_timeout if episode_timeout else None
        self.base = model.client

    def __getattr__(self, name: str) -> Any:
        # Everything but chat() is the wrapped client's (max_tokens(), sampling, ...).
        return getattr(self.model, name)

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
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


def _metrics(endpoint: Any) -> dict[str, float] | None:
    if not getattr(endpoint, "metrics_url", None):
        return None
    try:
        return watchdog.call(lambda: metrics.snapshot(endpoint), METRICS_LIMIT_S, "metrics")
    except Exception:  # a server that trickles /metrics costs the episode its counters, no more
        return None


__all__ = ["run_episode", "ContextExceeded", "Usage"]
