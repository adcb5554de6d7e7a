"""A blind-replay baseline (`agent-host baseline blind-replay RUN`): does a memorised path pass?

For each task instance of a run, the tool calls of the reference build's successful episode
(the first repeat, preferring the unvaried condition) are replayed, as sent and without looking
at the screen, on a fresh episode whose phone is varied from another seed. A suite whose
instances a blind replay still solves cannot rank builds: what it measures there is memory of a
path, not reading the screen. The replay is an ordinary run (resumable, reported), kept inside
the run it replays (config/records.py `BLIND_REPLAY`), so that run's report can show its score beside
the other trivial policies'.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agent_host.config.outcome import solved
from agent_host.config.manifest import MANIFEST, RunManifest, load_manifest
from agent_host.config.records import EPISODES, EpisodeRecord, iter_episode_log, read_step_log
from agent_host.config.requests import Json
from agent_host.errors import UserError

BUILD_ID = "blind-replay"
SEEN = ("observation", "coordinates", "max_pixels", "long_side", "history_images")
POLICY, HOSTS = "recorded-calls.yaml", "host-profile.yaml"


@dataclass
class Recording:
    """Each instance's recorded calls, and the instances with no successful episode to record."""
    build: str
    calls: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    # the recorded build's observation fields: its point actions replay in the same frame
    seen: dict[str, Any] = field(default_factory=dict)


def _calls(episode_dir: Path) -> list[Json]:
    """The tool calls an episode made, in order, as `raw` policy items (played as sent)."""
    return [{"raw": {"name": s.action.name, "arguments": s.action.args}}
            for s in read_step_log(episode_dir) if s.action is not None]


def _preferred(rec: EpisodeRecord) -> tuple[int, int, str]:
    return (rec.vary != "none", rec.repeat, rec.episode_id)


def record(run_dir: Path, manifest: RunManifest, build: str | None) -> Recording:
    """The calls of `build`'s (default: the run's baseline) successful base episodes (on an
    infeasible task, the right claim of infeasibility)."""
    builds = manifest.build_ids()
    chosen = build or manifest.baseline or (builds[0] if builds else None)
    if chosen not in builds:
        raise UserError(f"--build: {chosen!r} is not a build of {run_dir} ({', '.join(builds)})")
    best: dict[str, EpisodeRecord] = {}
    for rec in iter_episode_log(run_dir / EPISODES):
        if rec.build != chosen or rec.variant != "base" or not solved(rec.outcome, rec.infeasible):
            continue
        key = rec.task
        if key not in best or _preferred(rec) < _preferred(best[key]):
            best[key] = rec
    config = next((b for b in manifest.builds if b.get("id") == chosen), {})
    plain = config.get("observation", "text") == "text" and not config.get("coordinates")
    out = Recording(str(chosen), seen={} if plain else {k: config[k] for k in SEEN if config.get(k) is not None})
    for t in manifest.tasks:
        if t.variant != "base":
            continue
        found = best.get(t.key)
        if found is None:
            out.missing.append(t.key)
        else:
            out.calls[t.key] = _calls(run_dir / "episodes" / found.episode_id)
    return out


def write_policy(out_dir: Path, recording: Recording) -> Path:
    """The recorded-calls suite and a host profile whose one build plays it; the profile's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / POLICY).write_text(yaml.safe_dump({"recorded": recording.calls}, sort_keys=True), encoding="utf-8")
    hosts = out_dir / HOSTS
    hosts.write_text(yaml.safe_dump({
        "id": "blind-replay", "description": f"blind replay of {recording.build}'s successful episodes",
        "hardware_class": "x86-avx2",
        "builds": [{"id": BUILD_ID, "weight_path": "scripted", "server": "policy", "role": "bar",
                    "script": str((out_dir / POLICY).resolve()),
                    "notes": f"replays {recording.build}'s recorded calls without reading the screen",
                    **recording.seen}]},
        sort_keys=False), encoding="utf-8")
    return hosts


def source_manifest(run_dir: Path) -> RunManifest:
    if not (run_dir / MANIFEST).is_file():
        raise UserError(f"{run_dir}: not a run directory (no {MANIFEST})")
    return load_manifest(run_dir / MANIFEST)


def replay_seed(manifest: RunManifest) -> int:
    """Another seed than the run's: the replayed phones differ from the recorded ones."""
    return (manifest.seed or 0) + 1


def summarise(out_dir: Path, recording: Recording) -> Json:
    """The replay's score: successes among the episodes replayed (errors not counted)."""
    from agent_host.runs.store import RunStore

    done = RunStore(out_dir).finished()
    success = sum(1 for r in done.values() if solved(r.outcome, r.infeasible))
    return {"build": recording.build, "replayed": len(done), "success": success,
            "success_rate": success / len(done) if done else 0.0, "not_recorded": recording.missing,
            # an instance's outcome, or with --repeats its outcome on each phone ("task rN" past the first)
            "outcomes": {r.task + (f" r{r.repeat}" if r.repeat else ""): r.outcome
                         for r in sorted(done.values(), key=lambda r: (r.task, r.repeat))}}
