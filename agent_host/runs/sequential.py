"""`run --until-decided`: a run of two builds that goes on in rounds until the comparison is decided.

The rounds are recorded in the manifest (`sequential.rounds`): each round's extra repeats per
task, its play order (runs/order.py) and, once its episodes are in, the decision at its look.
A round is written before its first episode runs, so a resume after a kill continues the
same sequence: it plays what the last round is missing (the episode log says what is done),
then decides at that look exactly as the uninterrupted run would have. The statistics (where
the next repeats go, when to stop) are the report layer's (report/sequential.py); the CLI
passes them in as `judge`, since runs may not import report.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypedDict

from agent_host.config.records import episode_id
from agent_host.config.variation import plays
from agent_host.runs.execute import BuildProgress, ProgressHook, RunOptions, execute
from agent_host.runs.order import interleave, segments
from agent_host.runs.plan import PlannedEpisode, derive_seed
from agent_host.runs.store import RunStore

if TYPE_CHECKING:
    from agent_host.config.builds import Build
    from agent_host.config.records import EpisodeRecord
    from agent_host.config.tasks import TaskInstance

# judge(records, repeats per task, budget_left) -> the decision as a dict (report/sequential.Decision)
Judge = Callable[[list["EpisodeRecord"], dict[str, int], bool], dict[str, Any]]


class Round(TypedDict):
    """One round as the manifest's `sequential.rounds` keeps it."""
    round: int
    add: dict[str, int]            # task -> repeats added
    order: list[str]               # episode ids in play order
    decision: dict[str, Any] | None   # the judge's, as JSON (report/sequential.Decision)


def task_of(t: TaskInstance) -> str:
    return t.task_id or t.key


def round_episodes(builds: Sequence[str], tasks: Sequence[TaskInstance], start: dict[str, int], add: dict[str, int],
                   seed: int, vary: str = "none") -> list[PlannedEpisode]:
    """The episodes of one round: every instance of each task in `add`, repeats start..start+add-1,
    on every build (identities and seeds as runs/plan.py makes them), under the run's one
    variation condition."""
    out = []
    for t in tasks:
        k = task_of(t)
        for r in range(start.get(k, 0), start.get(k, 0) + add.get(k, 0)):
            for b in builds:
                out.append(PlannedEpisode(episode_id(b, t.id, t.variant, r), b, t, t.key, t.variant, r,
                                          derive_seed(seed, t.key, r), vary))
    return out


@dataclass
class SequentialResult:
    progress: dict[str, BuildProgress]
    decision: dict[str, Any]    # the last round's (report/sequential.Decision as JSON)
    planned: int


def repeats_after(rounds: Sequence[Round]) -> dict[str, int]:
    out: Counter[str] = Counter()
    for r in rounds:
        out.update(r["add"])
    return dict(out)


def run_rounds(builds: Sequence[Build], tasks: Sequence[TaskInstance], store: RunStore, phones: Sequence[str],
               opts: RunOptions, judge: Judge, *, seed: int, together: bool, first: int,
               duration: float | None = None, hook: ProgressHook | None = None,
               vary: str = "none") -> SequentialResult:
    """Play rounds until `judge` says the run is final; every round and decision goes to the
    manifest before the next begins."""
    hook = hook or (lambda p, r: None)
    tasks = [t for t in tasks if plays(t.vary_full, vary)]   # as runs/plan.py leaves them out
    ids = [b.id for b in builds]
    state = dict(store.read_manifest().sequential or {})
    rounds: list[Round] = state.setdefault("rounds", [])
    elapsed0 = float(state.get("elapsed_s", 0.0))
    t0 = time.monotonic()
    totals = {b: BuildProgress(b, total=0) for b in ids}
    for rec in store.finished().values():
        if rec.build in totals:
            totals[rec.build].done += 1
            totals[rec.build].outcomes[rec.outcome] += 1

    def save() -> None:
        state["rounds"] = rounds
        state["elapsed_s"] = elapsed0 + time.monotonic() - t0
        store.update_manifest(sequential=state, episodes_planned=sum(
            len(r["order"]) for r in rounds))

    relay = _relay(totals, hook)

    if not rounds:
        add = {task_of(t): first for t in tasks}
        rounds.append(_round(ids, tasks, {}, add, seed, 0, together))
        save()
    with contextlib.ExitStack() as stack:
        if together:
            _servers_up(stack, builds, store, opts)
        while True:
            current = rounds[-1]
            if current.get("decision") is None:
                by_id = {p.episode_id: p for p in round_episodes(
                    ids, tasks, repeats_after(rounds[:-1]), current["add"], seed, vary)}
                ordered = [by_id[i] for i in current["order"]]
                for b in ids:
                    totals[b].total = sum(len(r["order"]) for r in rounds) // len(ids)
                play(ordered, builds, store, phones, opts, relay)
                left = duration is None or elapsed0 + time.monotonic() - t0 < duration
                current["decision"] = judge(store.records(), repeats_after(rounds), left)
                save()
            decision = current["decision"]
            assert decision is not None   # judged just above, or before the run stopped
            if decision["final"]:
                break
            rounds.append(_round(ids, tasks, repeats_after(rounds), decision["allocation"], seed,
                                 len(rounds), together))
            save()
    return SequentialResult(totals, decision, sum(len(r["order"]) for r in rounds))


def _relay(totals: dict[str, BuildProgress], hook: ProgressHook | None) -> ProgressHook:
    """A hook for execute's per-stretch progress that keeps the whole run's per-build totals
    (each execute call counts only its own stretch) and passes those on."""
    def relay(p: BuildProgress, rec: EpisodeRecord | None) -> None:
        tot = totals[p.build]
        if rec is not None:
            tot.outcomes[rec.outcome] += 1
            if rec.outcome != "error":
                tot.done += 1
        tot.retries, tot.away = p.retries, p.away
        if hook is not None:
            hook(tot, rec)
    return relay


def _servers_up(stack: contextlib.ExitStack, builds: Sequence[Build], store: RunStore, opts: RunOptions) -> None:
    """Every build's server up for the whole run (closed by `stack`), handed to execute."""
    from agent_host.serving import server as serving
    opts.servers = {b.id: stack.enter_context(serving.start(
        b, log_dir=store.servers_dir, seed=0, startup_timeout=opts.startup_timeout or b.startup_timeout_s))
        for b in builds}


def play(ordered: Sequence[PlannedEpisode], builds: Sequence[Build], store: RunStore, phones: Sequence[str],
         opts: RunOptions, hook: ProgressHook) -> None:
    """Play episodes in this order: each stretch of one build's episodes is one execute call
    (its phones in parallel); what is already finished is skipped, as on any resume."""
    for seg in segments(ordered):
        build = next(b for b in builds if b.id == seg[0].build)
        execute([build], seg, store, phones, opts, hook)


def interleaved_driver(builds: Sequence[Build], tasks: Sequence[TaskInstance], store: RunStore, phones: Sequence[str],
                       opts: RunOptions, hook: ProgressHook | None) -> tuple[dict[str, BuildProgress], int]:
    """A fixed run played interleaved (`run --interleave`): the order the manifest recorded
    (`order`), servers up together when `order_together` says they can be."""
    from agent_host.runs.plan import plan

    m = store.read_manifest()
    assert m.repeats is not None and m.seed is not None   # a started run's manifest has both
    planned = {p.episode_id: p for p in plan([b.id for b in builds], tasks, m.repeats, m.seed, m.vary)}
    ordered = [planned[i] for i in m.order or []]
    totals = {b.id: BuildProgress(b.id, total=sum(1 for p in ordered if p.build == b.id)) for b in builds}
    for rec in store.finished().values():
        if rec.build in totals and rec.episode_id in planned:
            totals[rec.build].done += 1
            totals[rec.build].outcomes[rec.outcome] += 1

    relay = _relay(totals, hook)

    with contextlib.ExitStack() as stack:
        if m.order_together:
            _servers_up(stack, builds, store, opts)
        play(ordered, builds, store, phones, opts, relay)
    return totals, len(ordered)


def _round(ids: Sequence[str], tasks: Sequence[TaskInstance], start: dict[str, int], add: dict[str, int], seed: int,
           index: int, together: bool) -> Round:
    eps = round_episodes(ids, tasks, start, add, seed)
    order = interleave(eps, seed=hash_seed(seed, index), together=together)
    return {"round": index, "add": dict(add), "order": [p.episode_id for p in order], "decision": None}


def hash_seed(seed: int, index: int) -> int:
    return derive_seed(seed, "order-round", index)


# Any: the manifest's `sequential` block, JSON
def make_driver(judge_factory: Callable[[dict[str, Any]], Judge]) -> Callable[..., tuple[dict[str, BuildProgress], int]]:
    """The driver runs/run.py calls for a sequential run (start and resume alike): its settings
    come from the manifest, so a resume decides exactly as the first process would have."""

    def drive(builds: Sequence[Build], tasks: Sequence[TaskInstance], store: RunStore, phones: Sequence[str],
              opts: RunOptions, hook: ProgressHook | None) -> tuple[dict[str, BuildProgress], int]:
        m = store.read_manifest()
        st = m.sequential or {}
        assert m.seed is not None   # a started run's manifest has it
        res = run_rounds(builds, tasks, store, phones, opts, judge_factory(st), seed=m.seed,
                         together=bool(st["together"]), first=int(st["schedule"]["first"]),
                         duration=st.get("duration_s"), hook=hook, vary=m.vary[0])
        return res.progress, res.planned

    return drive


def parse_budget(text: str) -> tuple[int | None, float | None]:
    """(episodes, seconds) from `--budget`: a whole number of episodes, or a duration such as
    90s, 45m, 2h, 1.5h; ValueError naming what it takes otherwise."""
    t = text.strip().lower()
    if t.isdigit():
        if int(t) < 1:
            raise ValueError("--budget: at least 1 episode")
        return int(t), None
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        value = float(t[:-1]) if t and t[-1] in units else None
    except ValueError:
        value = None
    if value is None or not 0 < value * units[t[-1]] <= 30 * 86400:
        raise ValueError(f"--budget: {text!r} is neither a number of episodes (e.g. 400) nor a duration "
                         f"up to 30 days (e.g. 90s, 45m, 2h)")
    return None, value * units[t[-1]]
