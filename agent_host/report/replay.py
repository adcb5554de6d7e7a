"""What a replay found (config/replay_log.py's lines): per candidate, agreement with the
reference on the reference's own steps, by role, with intervals over tasks (the task is the
unit, as everywhere in a report: stats.rows_summary); completion agreement; the first
divergence of each episode; the log-prob gap of the reference's reply; the largest gaps.

The log-prob gap of a request is log p_candidate(reference reply) - log p_reference(reference
reply), each scored by its own server (the candidate's pass and the `@reference` pass): 0 when
the candidate is the reference served deterministically, negative when the candidate finds the
reference's choice less likely. It moves before an action flips.
"""

from __future__ import annotations

import json
import os
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable

from agent_host.config.records import NotRegularFile, read_regular
from agent_host.errors import UserError
from agent_host.config.replay_log import MATCHES, REFERENCE_PASS, REPLAY_DIR, ROLES, SUMMARY, ReplayLog
from agent_host.report.load import Run
from agent_host.report.parts import RatePart
from agent_host.report.stats import rows_summary

TOP_GAPS = 10


# Any: a rate as replay.json holds it (JSON)
def rate_text(rate: dict[str, Any] | None) -> str:
    """`25% [1, 84] (1/4)`: mean over tasks, its 95% interval, pooled counts; `- (0/0)` when no step qualifies."""
    if not rate or rate.get("mean") is None:
        return f"- ({(rate or {}).get('k', 0)}/{(rate or {}).get('n', 0)})"
    return (f"{100 * rate['mean']:.0f}% [{100 * rate['low']:.0f}, {100 * rate['high']:.0f}] "
            f"({rate['k']}/{rate['n']})")


# Any: replay.jsonl lines, JSON read by name
def _rate(lines: Iterable[dict[str, Any]], hit: Callable[[dict[str, Any]], object]) -> RatePart:
    per_task: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for line in lines:
        row = per_task[line["task_id"]]
        row[0] += bool(hit(line))
        row[1] += 1
    return rows_summary([(per_task[t][0], per_task[t][1]) for t in sorted(per_task)])


def _mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


# Any: replay.jsonl lines and the rows made of them, JSON
def first_divergences(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per episode, the first replayed request whose action differs (None: it never does)."""
    by_ep: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        by_ep[line["episode_id"]].append(line)
    out = []
    for ep in sorted(by_ep):
        rows = sorted(by_ep[ep], key=lambda x: x["index"])
        first = next((x for x in rows if x["match"] != "same_action"), None)
        out.append({"episode_id": ep, "task": rows[0]["task"], "requests": len(rows),
                    "step": first["step"] if first else None, "index": first["index"] if first else None,
                    "role": first["role"] if first else None, "match": first["match"] if first else None})
    return out


# Any: replay.jsonl lines and replay.json's summary, JSON
def summarise_candidate(lines: list[dict[str, Any]], ref_scores: dict[tuple[str, int], float]) -> dict[str, Any]:
    ok = [x for x in lines if "error" not in x]
    by_role = {role: [x for x in ok if x["role"] == role] for role in ROLES}
    gaps = []
    for x in ok:
        ref = ref_scores.get((x["episode_id"], x["index"]))
        if x.get("logprob") is not None and ref is not None:
            gaps.append({**{k: x[k] for k in ("episode_id", "task", "index", "step", "role", "match")},
                         "gap": x["logprob"] - ref, "logprob": x["logprob"], "reference_logprob": ref,
                         "tokens": x.get("reply_tokens"), "name": x.get("name")})
    seconds = sum(x.get("seconds", 0.0) + x.get("score_seconds", 0.0) for x in lines)
    steps = len({(x["episode_id"], x["step"]) for x in ok})
    return {
        "requests": len(lines), "errors": len(lines) - len(ok),
        "error_examples": sorted({x["error"] for x in lines if "error" in x})[:3],
        "episodes": len({x["episode_id"] for x in ok}), "tasks": len({x["task_id"] for x in ok}),
        "matches": {m: sum(x["match"] == m for x in ok) for m in MATCHES},
        "exact": sum(bool(x.get("exact")) for x in ok),
        "agreement": _rate(ok, lambda x: x["match"] == "same_action"),
        "same_tool": _rate(ok, lambda x: x["match"] != "different"),
        "by_role": {role: _rate(rows, lambda x: x["match"] == "same_action") for role, rows in by_role.items()},
        # the seed finding's two sides: completion recognised where the reference recognised it,
        # and claimed where the goal did not hold
        "completion_agreement": _rate(by_role["completion"], lambda x: x.get("name") == "task_complete"),
        "false_completion": _rate(by_role["navigation"], lambda x: x.get("name") == "task_complete"),
        "first_divergence": first_divergences(ok),
        "logprob_gap": {"all": _mean([g["gap"] for g in gaps]), "n": len(gaps),
                        "max_abs": max((abs(g["gap"]) for g in gaps), default=None),
                        "by_role": {role: _mean([g["gap"] for g in gaps if g["role"] == role]) for role in ROLES}},
        "largest_gaps": sorted(gaps, key=lambda g: -abs(g["gap"]))[:TOP_GAPS],
        "model_seconds": round(seconds, 3),
        "steps_per_minute": round(steps / seconds * 60, 2) if seconds > 0 else None,
    }


# Any: replay.jsonl lines and replay.json's summary, JSON
def summarise(lines: list[dict[str, Any]], reference: str) -> dict[str, Any]:
    """replay.json: per candidate (in the order they were replayed) its summary."""
    ref_scores = {(x["episode_id"], x["index"]): x["logprob"] for x in lines
                  if x["pass"] == REFERENCE_PASS and x.get("logprob") is not None}
    passes = list(dict.fromkeys(x["pass"] for x in lines if x["pass"] != REFERENCE_PASS))
    ref_lines = [x for x in lines if x["pass"] == REFERENCE_PASS]
    return {"reference": reference,
            "reference_scoring": {"requests": len(ref_lines), "scored": len(ref_scores),
                                  "model_seconds": round(sum(x.get("seconds", 0.0) + x.get("score_seconds", 0.0)
                                                             for x in ref_lines), 3)},
            "candidates": {p: summarise_candidate([x for x in lines if x["pass"] == p], ref_scores)
                           for p in passes}}


# Any: replay.json as written, JSON
def write_summary(replay_dir: Path) -> dict[str, Any]:
    from agent_host.config.records import write_json_atomic

    data = summarise(ReplayLog(replay_dir).read(), replay_dir.name)
    write_json_atomic(replay_dir / SUMMARY, data)
    return data


def replay_dirs(run: Run) -> list[Path]:
    """A run's replay folders (one per reference). One that leads outside the run directory
    (a link, or `replay/` itself a link) is left out with a warning (`Run.inside`): a
    report reads only its run."""
    root = run.dir / REPLAY_DIR
    if not os.path.lexists(root) or run.inside(root) is None:
        return []
    return [d for d in sorted(root.iterdir()) if run.inside(d) is not None and d.is_dir()]


# Any: replay.json files as read, JSON
def load_summaries(run: Run) -> list[dict[str, Any]]:
    """Every replay of a run (one per reference), as written to replay.json."""
    out = []
    for path in [d / SUMMARY for d in replay_dirs(run)]:
        if not os.path.lexists(path) or run.inside(path) is None:
            continue
        try:
            out.append(json.loads(read_regular(path).decode("utf-8")))
        except NotRegularFile:
            run.warnings.append(f"{path}: not a regular file; replay not shown")
        except (OSError, ValueError):   # ValueError: JSON or UTF-8 unreadable
            continue
    return out


# Any: replay.jsonl lines handed to the viewer as they are, JSON
def viewer_lines(run: Run, warnings: list[str]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """For the trajectory viewer: per reference episode and step, each candidate's answer."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for d in replay_dirs(run):
        log = ReplayLog(d)
        if os.path.lexists(log.path) and run.inside(log.path) is None:
            continue
        try:
            lines = log.read()
        except UserError as exc:   # a FIFO, an unreadable line: the viewer goes without this replay
            warnings.append(f"{exc}; replay not shown in the viewer")
            continue
        ref = {(x["episode_id"], x["index"]): x.get("logprob") for x in lines if x["pass"] == REFERENCE_PASS}
        for x in lines:
            if x["pass"] == REFERENCE_PASS or "error" in x:
                continue
            r = ref.get((x["episode_id"], x["index"]))
            gap = x["logprob"] - r if x.get("logprob") is not None and r is not None else None
            out[x["episode_id"]][str(x["step"])].append(
                {"build": x["pass"], "attempt": x["attempt"], "role": x["role"], "match": x["match"],
                 "reply": json.dumps(x.get("reply"), ensure_ascii=False), "gap": gap})
    return {k: dict(v) for k, v in out.items()}


# Any: replay.json summaries, JSON
def headline_lines(replays: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(candidate, reference) -> the report's first-lines sentence on what the replay found."""
    out = {}
    for rp in replays:
        for b, c in rp.get("candidates", {}).items():
            steps = c["agreement"].get("n", 0)
            if c["requests"] and c["errors"] == c["requests"]:
                out[(b, rp["reference"])] = (f"{b}: the replay of {rp['reference']}'s steps failed "
                                             f"({'; '.join(c['error_examples'])[:200]}).")
                continue
            out[(b, rp["reference"])] = (
                f"{b} replayed on {rp['reference']}'s {steps} steps ({c['episodes']} episodes, {c['tasks']} tasks): "
                f"completion agreement {rate_text(c['completion_agreement'])} "
                f"(task_complete where {rp['reference']} called it with the goal held), "
                f"false completion {rate_text(c['false_completion'])}, "
                f"same action {rate_text(c['agreement'])}; 95% intervals over tasks.")
    return out


# Any: replay.json summaries, JSON
def with_replay(headline: list[str], replays: list[dict[str, Any]]) -> list[str]:
    """The headline with each replay sentence after its build's episode comparison (else at the end)."""
    lines = list(headline)
    for (b, ref), text in headline_lines(replays).items():
        at = next((i + 1 for i, ln in enumerate(lines) if ln.startswith(f"{b} vs {ref}:")), len(lines))
        lines.insert(at, text)
    return lines
