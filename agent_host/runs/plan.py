"""Plan a run: every (build, task instance, variant, repeat) becomes one planned episode.

Seeds derive from (run seed, task instance key, repeat) and not from the build, so every
build sees identical setups and sampling seeds: episodes pair one to one across builds.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from agent_host.config.records import EpisodeIdentity, episode_id
from agent_host.config.variation import plays

if TYPE_CHECKING:
    from agent_host.config.tasks import TaskInstance


def derive_seed(seed: int, task_key: str, repeat: int) -> int:
    digest = hashlib.sha256(f"{seed}|{task_key}|{repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


@dataclass(frozen=True)
class PlannedEpisode:
    episode_id: str
    build: str
    task: TaskInstance
    task_key: str
    variant: str
    repeat: int
    seed: int
    vary: str = "none"

    def identity(self, attempt: int = 1, run_id: str | None = None) -> EpisodeIdentity:
        """The identity its episode is run and recorded under."""
        return EpisodeIdentity(self.episode_id, self.build, self.repeat, self.seed, attempt, run_id, self.vary)


def plan(builds: Sequence[str], tasks: Sequence[TaskInstance], repeats: int, seed: int,
         vary: Sequence[str] = ("none",)) -> list[PlannedEpisode]:
    """Episodes ordered build-major (one server up at a time), then repeat, then variation
    condition, then task, so an interrupted run has spread its finished episodes over all tasks.
    The conditions of one instance share its seed: they pair, as builds do."""
    out = []
    for build in builds:
        for repeat in range(repeats):
            for cond in vary:
                for task in tasks:
                    if not plays(task.vary_full, cond):     # `vary.full: false`: no varied phone differs for it
                        continue
                    out.append(PlannedEpisode(
                        episode_id=episode_id(build, task.id, task.variant, repeat, cond if len(vary) > 1 else None),
                        build=build, task=task, task_key=task.key, variant=task.variant,
                        repeat=repeat, seed=derive_seed(seed, task.key, repeat), vary=cond,
                    ))
    ids = [p.episode_id for p in out]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"two planned episodes share the id {dup}")
    return out
