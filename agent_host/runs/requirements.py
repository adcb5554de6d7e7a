"""Scheduling by requirement: a task instance runs only on phones that meet its `requires:`
and have every app it opens installed (`TaskInstance.needs`: `app:PACKAGE`, through the
phone profile's packages).

Each phone's facts are read once when the run starts (or resumes). An episode no phone of
the run can serve is left out of the plan and listed as skipped (in the manifest, the run's
console summary and the report, never as a model failure: it is in no rate); an episode
some phones can serve is handed only to those.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from agent_host.config.requirements import SCREENSHOTS, PhoneFacts
from agent_host.errors import UserError

if TYPE_CHECKING:
    from agent_host.config.phones import PhoneProfile
    from agent_host.config.tasks import TaskInstance
    from agent_host.runs.plan import PlannedEpisode


@dataclass
class Schedule:
    planned: list[PlannedEpisode]                        # some phone can serve each
    facts: dict[str, PhoneFacts]                         # serial -> what was read
    skipped: list[dict[str, Any]] = field(default_factory=list)        # per task instance key
    not_on: dict[str, list[str]] = field(default_factory=dict)         # serial -> keys it is not given
    apps: dict[str, str] | None = None                                 # the phone profile's alias -> package
    seeing: frozenset[str] = frozenset()                               # builds that see the screen

    def serves(self, serial: str, episode: PlannedEpisode) -> bool:
        facts = self.facts.get(serial)
        return facts is None or not facts.missing(_requires(episode, self.apps, self.seeing))

    def tasks(self, tasks: Sequence[TaskInstance]) -> list[TaskInstance]:
        """The task instances not skipped (for a run that plans its own rounds); one skipped for
        one build only (a vision build on phones without screenshots) stays for the others."""
        gone = {s["key"] for s in self.skipped if "build" not in s}
        return [t for t in tasks if t.key not in gone]

    def manifest(self) -> dict[str, object]:
        return {"phone_requirements": {s: f.to_json() for s, f in self.facts.items()},
                "skipped": self.skipped, "not_scheduled": self.not_on}

    def lines(self) -> list[str]:
        """What the plan leaves out, for the console: one line per skipped instance group."""
        out: list[str] = []
        groups: dict[str, list[dict[str, Any]]] = {}
        for s in self.skipped:
            groups.setdefault(", ".join(s["missing"]), []).append(s)
        for missing, items in groups.items():
            tasks = sorted({s["task_id"] for s in items})
            out.append(f"skipped {len(items)} task instance(s) of {len(tasks)} task(s), no phone has {missing}: "
                       f"{', '.join(tasks)}")
        for serial, keys in self.not_on.items():
            out.append(f"not scheduled on {serial}: {len(keys)} task instance(s) it lacks the requirements of")
        return out


def _requires(episode: PlannedEpisode, apps: dict[str, str] | None = None,
              seeing: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """What the episode needs: its task instance's `requires:` and the apps it opens; a
    screenshot that is not black when its build sees the screen (`seeing`)."""
    need = episode.task.needs(apps)
    return (*need, SCREENSHOTS) if episode.build in seeing else need


def read_phones_facts(serials: Sequence[str], apps: dict[str, str] | None = None, *,
                      screenshots: bool = False) -> dict[str, PhoneFacts]:
    """Each phone's facts; `apps` (name -> package): the apps the run's tasks open, for the
    manifest's `apps_installed` row (each task's own apps are decided from the package list);
    `screenshots`: whether its screenshots show the screen (a run with a vision build)."""
    from agent_host.phone.device import Phone
    from agent_host.phone.requirements import read_phone_facts
    out = {}
    for s in serials:
        try:
            out[s] = read_phone_facts(Phone.connect(s), apps=apps, screenshots=screenshots)
        except Exception as exc:
            raise UserError(f"phone {s}: cannot read what it has ({type(exc).__name__}: {exc}); "
                            f"agent-host phone check {s}") from None
    return out


def schedule(planned: Sequence[PlannedEpisode], facts: dict[str, PhoneFacts],
             apps: dict[str, str] | None = None, seeing: frozenset[str] = frozenset()) -> Schedule:
    """Split the plan by what the phones have; `apps`: the phone profile's alias -> package
    table the tasks' apps resolve through (None: the Pixel's, DEFAULT_APPS); `seeing`: the
    builds that see the screen (their episodes need screenshots that are not black)."""
    keep: list[PlannedEpisode] = []
    skipped: dict[str, dict[str, Any]] = {}
    not_on: dict[str, set[str]] = {s: set() for s in facts}
    for ep in planned:
        need = _requires(ep, apps, seeing)
        able = [s for s, f in facts.items() if not f.missing(need)]
        for s in facts:
            if able and s not in able:    # left for the others (one no phone serves is skipped, below)
                not_on[s].add(ep.task_key)
        if able or not facts:
            keep.append(ep)
        else:
            missing = sorted({r for f in facts.values() for r in f.missing(need)})
            # skipped for every build, or for this build only where its own need alone is unmet
            by_build = ep.build in seeing and any(not f.missing(ep.task.needs(apps)) for f in facts.values())
            key = f"{ep.build}/{ep.task_key}" if by_build else ep.task_key
            if key not in skipped:
                skipped[key] = {"key": ep.task_key, "task_id": ep.task.task_id, "variant": ep.variant,
                                "requires": list(need), "missing": missing, **({"build": ep.build} if by_build else {})}
    skipped_keys = {s["key"] for s in skipped.values() if "build" not in s}
    return Schedule(keep, dict(facts), list(skipped.values()),
                    {s: sorted(k - skipped_keys) for s, k in not_on.items() if k - skipped_keys}, apps=apps,
                    seeing=seeing)


def servable_tasks(tasks: Sequence[TaskInstance], phones: Sequence[str], say: Callable[..., object],
                   profile: PhoneProfile | None = None) -> list[TaskInstance]:
    """The task instances some phone can serve (`run --plan --phones`, with the run's phone
    profile); `say` gets each line of what is left out."""
    from agent_host.config.tasks import needed_apps
    from agent_host.runs.phone_lock import PhoneLocks
    from agent_host.runs.plan import plan
    apps = dict(profile.apps) if profile is not None else None
    with PhoneLocks(phones):
        sched = schedule(plan(["plan"], tasks, 1, 0), read_phones_facts(phones, apps=needed_apps(tasks, apps)),
                         apps=apps)
    for line in sched.lines():
        say(line, highlight=False)
    return sched.tasks(tasks)


def take(todo: queue.Queue[PlannedEpisode], can: Callable[[PlannedEpisode], bool]) -> PlannedEpisode | None:
    """The first queued episode `can` accepts, removed from the queue; None if there is none
    (the others stay queued for phones that can serve them)."""
    with todo.mutex:
        queued: Sequence[PlannedEpisode] = todo.queue   # the Queue's deque, which its stub leaves untyped
        for i, ep in enumerate(queued):
            if can(ep):
                del todo.queue[i]
                todo.not_full.notify()
                return ep
    return None


def servable(todo: queue.Queue[PlannedEpisode], serials: Sequence[str],
             serves: Callable[[str, PlannedEpisode], bool]) -> bool:
    """Some phone in `serials` can serve some episode still queued."""
    with todo.mutex:
        return any(serves(s, ep) for ep in todo.queue for s in serials)
