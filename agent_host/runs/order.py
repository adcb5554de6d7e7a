"""The order a run's episodes are played in: builds interleaved, randomised by the run's seed.

Played one build after the other (all of A, then all of B), anything that drifts during a run
(a phone's state, heat, another job on the machine) is confounded with the build. Interleaved,
each (task, repeat) is one block holding every build's episodes of that task's instances at
that repeat, blocks in a seeded random order and the builds in a seeded random order inside
each block: a drift then touches both builds of a task alike, and the paired difference does
not see it (tests/runs/test_runs_order.py). That needs every build's server up at once
(`servers_together`); when they cannot be, builds alternate in blocks, one server at a time: within each repeat
A on half the tasks, then B on them, B on the other half, then A on those (ABBA balances a
linear drift).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from agent_host.config.builds import Build
    from agent_host.runs.plan import PlannedEpisode

LOCAL_SHARE_GIB = 6.0        # a local model server's memory, for the plan (a 1-2B model on the CPU)


def servers_together(builds: Sequence[Build], cores: int, memory_gib: float | None) -> tuple[bool, str]:
    """(whether every build's server can be up at once, why): remote endpoints and scripted
    policies cost nothing; local model servers need LOCAL_SHARE_GIB each and two cores each."""
    local = [b for b in builds if b.traits.local_model]
    if len(local) <= 1:
        return True, "servers up together (" + ("no local model server)" if not local else "one local model server)")
    need_mem, need_cores = LOCAL_SHARE_GIB * len(local), 2 * len(local)
    if memory_gib is not None and memory_gib >= need_mem and cores >= need_cores:
        return True, (f"servers up together: {len(local)} local model servers fit "
                      f"({memory_gib:.0f} GiB, {cores} cores; each needs {LOCAL_SHARE_GIB:g} GiB, 2 cores)")
    return False, (f"builds alternate in blocks: {len(local)} local model servers need {need_mem:g} GiB and "
                   f"{need_cores} cores, this machine has {memory_gib or 0:.0f} GiB and {cores}")


def servers_kept(builds: Sequence[Build], memory_gib: float | None) -> tuple[bool, str]:
    """(whether every build's server can stay up from its first step to the command's end, why):
    the demo plays one build at a time and leaves the others' servers idle in between, so only
    memory counts (LOCAL_SHARE_GIB each), not the two cores each that `servers_together` wants."""
    local = [b for b in builds if b.traits.local_model]
    if len(local) <= 1:
        return True, "each server started once (" + ("no local model server)" if not local else "one local model server)")
    need = LOCAL_SHARE_GIB * len(local)
    if memory_gib is not None and memory_gib >= need:
        return True, (f"each server started once and kept up, idle while another plays: {len(local)} local model "
                      f"servers fit in {memory_gib:.0f} GiB (each needs {LOCAL_SHARE_GIB:g} GiB)")
    return False, (f"one server at a time, started again for each step: {len(local)} local model servers need "
                   f"{need:g} GiB, this machine has {memory_gib or 0:.0f} GiB")


def _key(ep: PlannedEpisode) -> tuple[str, int]:
    return (ep.task.task_id or ep.task_key, ep.repeat)


def interleave(planned: Sequence[PlannedEpisode], seed: int, together: bool) -> list[PlannedEpisode]:
    """The planned episodes in play order (see the module doc); deterministic in `seed`."""
    rng = random.Random(f"order|{seed}")
    builds = list(dict.fromkeys(p.build for p in planned))
    blocks: dict[tuple[str, int], list[PlannedEpisode]] = {}
    for p in planned:
        blocks.setdefault(_key(p), []).append(p)
    if together:
        keys = sorted(blocks)
        rng.shuffle(keys)
        out = []
        for k in keys:
            order = builds[:]
            rng.shuffle(order)
            for b in order:
                mine = [p for p in blocks[k] if p.build == b]
                rng.shuffle(mine)
                out.extend(mine)
        return out
    out = []
    for r in sorted({p.repeat for p in planned}):
        keys = sorted(k for k in blocks if k[1] == r)
        rng.shuffle(keys)
        # ABBA inside every repeat: A on half the tasks, B on them, B on the other half, A on
        # those; a linear drift then falls on both builds alike, whatever the number of repeats
        # (A B | B A over whole repeats left B 3 pp behind at 3 repeats in the drift test)
        half = (len(keys) + 1) // 2
        for part, order in ((keys[:half], builds), (keys[half:], builds[::-1])):
            for b in order:
                out.extend(p for k in part for p in blocks[k] if p.build == b)
    return out


def segments(ordered: Sequence[PlannedEpisode]) -> list[list[PlannedEpisode]]:
    """Consecutive runs of one build's episodes: what is played with one server at a time."""
    out: list[list[PlannedEpisode]] = []
    for p in ordered:
        if out and out[-1][0].build == p.build:
            out[-1].append(p)
        else:
            out.append([p])
    return out


def order_record(ordered: Sequence[PlannedEpisode]) -> list[str]:
    """The manifest's record of the order: episode ids in play order."""
    return [p.episode_id for p in ordered]
