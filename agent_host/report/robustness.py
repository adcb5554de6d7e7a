"""Phones that differ, in the report: what variations cost each build, and what a blind replay
scores.

A run that plays the unvaried condition beside varied ones (`run --vary none,full`) pairs every
instance across conditions on the same seeds, as builds pair. Per build and varied condition:
success without and with variations over the instances both have, and their difference (the
robustness gap) with the interval every paired comparison of the report uses (stats.compare,
tasks as the unit). Per single-kind condition (`--vary none,font_scale,dark`): the paired
episodes that succeeded unvaried and failed with that kind (the failures it caused) and the
reverse. A blind replay kept in the run (`baselines/blind-replay/`, `agent-host baseline
blind-replay`) shows its success beside the trivial policies'.

The report's other numbers use the run's first condition alone (`primary`), so a headline never
pools two kinds of phone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent_host.config.manifest import RunManifest
from agent_host.config.records import BLIND_REPLAY, EPISODES, EpisodeRecord, iter_episode_log
from agent_host.config.variation import KINDS
from agent_host.report import stats
from agent_host.report.model import BlindReplay, KindRow, Robustness, RobustnessRow, finite
from agent_host.report.selection import HEADLINE_VARIANT, instance_counts, instance_of, is_success, select_latest

PLAIN = "none"


def primary(manifest: RunManifest) -> str:
    """The condition the report's headline and comparisons use: the run's first."""
    return manifest.vary[0] if manifest.vary else PLAIN


def of_condition(records: Sequence[EpisodeRecord], condition: str) -> list[EpisodeRecord]:
    return [r for r in records if r.vary == condition]


def _as(build: str, condition: str) -> str:
    return f"{build} @{condition}"


def _paired(records: Sequence[EpisodeRecord], build: str, condition: str) -> list[EpisodeRecord]:
    """`build`'s episodes of the plain and the varied condition, as two builds to compare (the
    report's records are compact copies: a relabelled one is made again from its dump)."""
    return [EpisodeRecord.model_validate({**r.model_dump(), "build": _as(build, r.vary)}) for r in records
            if r.build == build and r.vary in (PLAIN, condition)]


def gap(records: Sequence[EpisodeRecord], build: str, condition: str) -> RobustnessRow:
    """Success without and with `condition` over the instances both have, and the difference."""
    recs = _paired(records, build, condition)
    c = stats.compare(_as(build, PLAIN), _as(build, condition), recs)
    common = set(c["per_task"])      # instance names, as selection.instance_of makes them
    both = [r for r in recs if instance_of(r) in common]
    rates = {cond: stats.build_summary(_as(build, cond), both)["rates"]["success"]["mean"]
             for cond in (PLAIN, condition)}
    return RobustnessRow(build=build, condition=condition, plain=rates[PLAIN], varied=rates[condition],
                         diff=finite(c["mean_diff"]), low=finite(c["low"]), high=finite(c["high"]), n_tasks=c["n_tasks"],
                         n_instances=c["n_instances"], method=c["method"])


def caused(records: Sequence[EpisodeRecord], build: str, kind: str) -> KindRow:
    """Paired base episodes (task instance, repeat) of `build`: success unvaried and not with
    `kind` (caused), and the reverse."""
    def outcomes(cond: str) -> dict[tuple[str, int], bool]:
        sel = select_latest(r for r in records if r.build == build and r.vary == cond
                            and r.variant == HEADLINE_VARIANT)
        return {(r.task, r.repeat): is_success(r) for r in sel.counted}
    plain, varied = outcomes(PLAIN), outcomes(kind)
    pairs = sorted(set(plain) & set(varied))
    return KindRow(build=build, kind=kind, pairs=len(pairs),
                   caused=sum(1 for p in pairs if plain[p] and not varied[p]),
                   fixed=sum(1 for p in pairs if varied[p] and not plain[p]),
                   instances=sorted({p[0] for p in pairs if plain[p] and not varied[p]}))


def blind_replay(run_dir: Path, replay_dir: Path | None = None) -> BlindReplay | None:
    """The blind replay kept in the run (or in `replay_dir`), if one was played: its success
    over base instances."""
    log = (replay_dir or run_dir / BLIND_REPLAY) / EPISODES
    if not log.is_file():
        return None
    sel = select_latest(r for r in iter_episode_log(log) if r.variant == HEADLINE_VARIANT)
    if not sel.counted:
        return None
    won = sum(1 for r in sel.counted if is_success(r))
    vary = sorted({r.vary for r in sel.counted})
    # the headline's own count (tasks as the unit), so it reads beside the trivial policies'
    head = stats.rate_summary([c for c in instance_counts(sel.counted, sel.errored).values()
                               if c.variant == HEADLINE_VARIANT], "success")
    return BlindReplay(episodes=len(sel.counted), success=won, rate=won / len(sel.counted), vary=", ".join(vary),
                       mean=head["mean"], low=head["low"], high=head["high"], n_tasks=head["n_tasks"])


def section(manifest: RunManifest, records: Sequence[EpisodeRecord], builds: Sequence[str],
            run_dir: Path) -> Robustness | None:
    """The report's robustness section; None when the run has neither several conditions nor a
    blind replay."""
    conds = list(manifest.vary or [PLAIN])
    blind = blind_replay(run_dir)
    paired = PLAIN in conds and len(conds) > 1
    if not paired and blind is None:
        return None
    varied = [c for c in conds if c != PLAIN]
    rows = [gap(records, b, c) for b in builds for c in varied] if paired else []
    kinds = [caused(records, b, c) for b in builds for c in varied if c in KINDS] if paired else []
    note = ("" if paired else f"this run played {', '.join(conds)} only: add "
            + ("a varied condition (--vary none,full)" if conds == [PLAIN]
               else f"the unvaried condition (--vary none,{conds[0]})") + " for the paired gap")
    return Robustness(conditions=conds, primary=primary(manifest), rows=rows, kinds=kinds, blind=blind, note=note)
