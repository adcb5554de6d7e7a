"""Success broken down by task kind and by app, so a report shows where a build fails; and,
for a run that names a taught model's split (`run --taught SPLIT.json`, config/taught.py), by
whether each instance was taught, held out as another parameter set, or held out whole.

A task's kinds are its kind tags (config.records.TASK_KINDS), its app the task's `app:` field;
both come from the run manifest's task list. Each group's rate is the report's headline
statistic (mean of per-task rates, t interval over the group's tasks) on that group's tasks
alone. A task of several kinds is in each of their groups.
"""

from __future__ import annotations

from typing import Sequence, TypedDict

from pydantic import ValidationError

from agent_host.config.manifest import RunManifest
from agent_host.config.records import NO_KIND, TASK_KINDS, EpisodeRecord, task_kinds
from agent_host.config.taught import KINDS as TAUGHT_KINDS
from agent_host.config.taught import TaughtSplit
from agent_host.report import selection, stats
from agent_host.report.parts import GroupBuildPart, GroupRowPart


class TaskFacts(TypedDict):
    app: str
    kinds: list[str]


def task_facts(manifest: RunManifest) -> dict[str, TaskFacts]:
    """Task instance id -> {"app", "kinds"}, for the tasks the manifest names with an app."""
    return {t.id: {"app": t.app, "kinds": task_kinds(t.tags, t.infeasible)} for t in manifest.tasks if t.app}


NOT_IN_SPLIT = "not in the split"


def taught_split(manifest: RunManifest) -> TaughtSplit | None:
    """The run's split (`run --taught`), or None: none named, or not one (an older format)."""
    if not manifest.taught:
        return None
    try:
        return TaughtSplit.model_validate(manifest.taught)
    except ValidationError:
        return None


def breakdown(records: Sequence[EpisodeRecord], builds: Sequence[str],
              facts: dict[str, TaskFacts], split: TaughtSplit | None = None) -> list[GroupRowPart]:
    """Rows {by: kind|app|taught, group, instances, builds: {build: success headline + episodes}}:
    kinds in TASK_KINDS order (then tasks of no kind), apps by name, then (with a split) taught,
    held-out-params, held-out-task and instances the split does not name; empty without task facts."""
    if not facts:
        return []
    known = [r for r in records if r.task in facts]
    groups: list[tuple[str, str, set[str]]] = []
    for kind in (*TASK_KINDS, NO_KIND):
        tasks = {t for t, f in facts.items() if kind in f["kinds"]}
        groups.append(("kind", kind, tasks))
    for app in sorted({f["app"] for f in facts.values()}):
        groups.append(("app", app, {t for t, f in facts.items() if f["app"] == app}))
    if split is not None:
        for taught in (*TAUGHT_KINDS, NOT_IN_SPLIT):
            groups.append(("taught", taught, {t for t in facts if (split.kind_of(t) or NOT_IN_SPLIT) == taught}))
    rows: list[GroupRowPart] = []
    for by, group, tasks in groups:
        recs = [r for r in known if r.task in tasks]
        if not recs:
            continue
        per_build: dict[str, GroupBuildPart] = {}
        for b in builds:
            summary = stats.build_summary(b, recs)
            per_build[b] = {**summary["rates"]["success"], "episodes": summary["episodes"]}
        rows.append({"by": by, "group": group, "instances": sorted({selection.instance_of(r) for r in recs}),
                     "builds": per_build})
    return rows
