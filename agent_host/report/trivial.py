"""What the two trivial policies would score on a run's own tasks, shown beside the headline.

"Complete at once" calls task_complete at its first step, "infeasible at once" calls
task_infeasible. Neither does anything, so no figure a build earns should be within reach of
theirs; what they score depends only on the tasks (which are infeasible, which have verify
variants), so it is computed from the run's task instances, not run. Each instance's episode is
labelled by the one outcome rule (config/outcome.py, the rule the agent labels its own episodes
with; the goal is as setup left it, true on a verify variant) and the rates come from stats.build_summary, the code every build's rates come
from, so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Sequence

from agent_host.config.manifest import RunManifest
from agent_host.config.records import EpisodeRecord
from agent_host.config.outcome import label
from agent_host.report import stats
from agent_host.report.parts import InstanceFacts, TrivialPart

POLICIES = {"complete_at_once": "complete at once", "infeasible_at_once": "infeasible at once"}


def run_instances(manifest: RunManifest, records: Sequence[EpisodeRecord]) -> list[InstanceFacts]:
    """The run's task instances ({task, task_id, variant, infeasible}) that have a record (of
    any build or outcome): an instance no phone served, or not reached yet, is in no build's
    rates either. Their facts come from the manifest's task list, else (a run made before the
    manifest had one) from the records. An instance whose phones differ in whether it can be
    done (an infeasible task's `vary.feasible` phones) is one entry per phone played, with
    the records' feasibility: every build met the same phone for an episode seed."""
    # Manifests before schema 3 of the report lack task_id; the records carry it.
    task_ids = {r.task: r.task_id for r in records if r.task_id}
    ran = {(r.task, r.variant) for r in records}
    out: dict[tuple[str, str], InstanceFacts] = {}
    for t in manifest.tasks:
        if t.variant in ("base", "verify") and (t.id, t.variant) in ran:
            out[(t.id, t.variant)] = {"task": t.id, "task_id": t.task_id or task_ids.get(t.id),
                                      "variant": t.variant, "infeasible": t.infeasible}
    if not out:
        for r in records:
            out.setdefault((r.task, r.variant), {"task": r.task, "task_id": r.task_id, "variant": r.variant,
                                                "infeasible": r.infeasible})
    phones: dict[tuple[str, str], dict[str, bool]] = {}
    for r in records:
        phones.setdefault((r.task, r.variant), {})[f"{r.vary}/{r.repeat}/{r.seed}"] = r.infeasible
    facts: list[InstanceFacts] = []
    for key in sorted(out):
        played = phones.get(key, {})
        if all(v == out[key]["infeasible"] for v in played.values()):
            facts.append(out[key])
        else:
            facts += [{**out[key], "infeasible": played[p], "phone": p} for p in sorted(played)]
    return facts


def _episode(policy: str, inst: InstanceFacts) -> EpisodeRecord:
    goal = inst["variant"] == "verify"            # a verify variant's setup makes the goal true
    at_once = policy == "complete_at_once"
    j = label([goal, goal], infeasible_task=inst["infeasible"], complete_step=1 if at_once else None,
              infeasible_step=None if at_once else 1)
    return EpisodeRecord(
        episode_id=f"{policy}__{inst['task']}__{inst['variant']}__{inst.get('phone', '')}", build=policy, model=policy, task=inst["task"],
        task_id=inst["task_id"], variant=inst["variant"], infeasible=inst["infeasible"], phone="", steps=1,
        **j.as_dict())


def trivial_baselines(manifest: RunManifest, records: Sequence[EpisodeRecord]) -> TrivialPart | None:
    """Per trivial policy: its success (the headline), sensitivity, specificity and balanced
    figure on this run's task instances (means only: a deterministic policy on fixed tasks has
    no sampling error). None without instances."""
    return trivial_scores(run_instances(manifest, records))


def trivial_scores(instances: Sequence[InstanceFacts]) -> TrivialPart | None:
    """trivial_baselines for task instances given as {task, task_id, variant, infeasible}
    (also what `run --plan` prints before anything runs)."""
    if not instances:
        return None
    out: TrivialPart = {"instances": len({(i["task"], i["variant"]) for i in instances}), "policies": {}}
    for policy, name in POLICIES.items():
        summary = stats.build_summary(policy, [_episode(policy, i) for i in instances], max_k=1)
        rates, bal = summary["rates"], summary["balanced"]
        out["policies"][policy] = {"name": name, "success": rates["success"]["mean"],
                                   "sensitivity": rates["sensitivity"]["mean"],
                                   "specificity": rates["specificity"]["mean"],
                                   "balanced": bal["mean"] if bal else None, "n_tasks": rates["success"]["n_tasks"]}
    return out
