"""Read a run directory (manifest, episode log, episode folders) into records.

Works on a run directory copied to another machine: nothing but its files is consulted.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from agent_host.config.manifest import MANIFEST, ManifestError, RunManifest, manifest_for_report, read_manifest_json
from agent_host.config.records import EPISODES, EpisodeRecord, NotRegularFile, StepRecord, iter_episode_log, read_regular
from agent_host.errors import UserError
from agent_host.report.compact import compact


@dataclass
class Run:
    dir: Path
    manifest: RunManifest
    records: list[EpisodeRecord]                 # every attempt, in log order
    warnings: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)   # paths the records name outside the run
    _root_ok: bool | None = None

    @property
    def run_id(self) -> str:
        return self.manifest.run_id or self.dir.name

    def builds(self) -> list[str]:
        """Build ids: the manifest's order first, then any others seen in the log."""
        out: list[str] = []
        for bid in self.manifest.build_ids():
            if bid not in out:
                out.append(bid)
        for r in self.records:
            if r.build not in out:
                out.append(r.build)
        return out

    def reference_build(self) -> str | None:
        """The build the manifest names as the baseline (`baseline` key), else the build whose
        `role` is `reference` (or marked `reference: true`), else None."""
        ref = self.manifest.baseline or self.manifest.reference_build
        if ref:
            return ref
        for b in self.manifest.builds:
            if b.get("role") == "reference" or b.get("reference") is True or b.get("baseline") is True:
                return b.get("id")
        return None

    def inside(self, path: Path) -> Path | None:
        """`path` if it resolves (symlinks followed) inside the run directory, else None with
        a warning: a report embeds nothing from outside its run, whatever the records say."""
        try:
            resolved = Path(path).resolve()
            root = self.dir.resolve()
        except (OSError, RuntimeError):
            resolved, root = None, None
        if resolved is not None and root is not None and resolved.is_relative_to(root):
            return resolved
        note = f"{path}: outside the run directory {self.dir}; not read"
        if note not in self.refused:
            self.refused.append(note)
        return None

    def episode_dir(self, episode_id: str) -> Path | None:
        """The episode's folder, or None when its id would lead outside the run directory
        (or there is no such folder)."""
        path = self.dir / "episodes" / episode_id
        if "/" not in episode_id and "\x00" not in episode_id and episode_id not in ("", ".", ".."):
            # a plain name leads outside only through a symlink: one lstat decides
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                return None  # no folder
            if stat.S_ISDIR(mode) and self._episodes_root_inside():
                return path
        return self.inside(path)

    def _episodes_root_inside(self) -> bool:
        if self._root_ok is None:
            self._root_ok = self.inside(self.dir / "episodes") is not None
        return self._root_ok


def _read_manifest(run_dir: Path, warnings: list[str]) -> RunManifest:
    path = run_dir / MANIFEST
    if not path.exists():
        warnings.append(f"{path}: missing; provenance unknown")
        return RunManifest()
    if not _stays_inside(run_dir, path):
        warnings.append(f"{path}: a symlink leading outside the run directory; not read, provenance unknown")
        return RunManifest()
    try:
        data = read_manifest_json(path)
    except (ManifestError, OSError) as exc:
        warnings.append(f"{exc}; provenance unknown")
        return RunManifest()
    manifest, notes = manifest_for_report(data, path)
    warnings += notes
    return manifest


def _stays_inside(run_dir: Path, path: Path) -> bool:
    try:
        return path.resolve().is_relative_to(run_dir.resolve())
    except (OSError, RuntimeError):
        return False


def load_run(run_dir: str | Path) -> Run:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run directory")
    warnings: list[str] = []
    manifest = _read_manifest(run_dir, warnings)
    log = run_dir / EPISODES
    if not log.exists():   # one that is there but not a regular file is named by the reader
        raise UserError(f"{log}: no episode log; is {run_dir} a run directory?")
    if not _stays_inside(run_dir, log):
        raise UserError(f"{log}: a symlink leading outside the run directory; a report reads only its run")
    records = [compact(r) for r in iter_episode_log(log, warnings)]  # streamed, held compactly
    if not records:
        raise UserError(f"{log}: no episodes recorded yet")
    return Run(run_dir, manifest, records, warnings)


def load_steps(run: Run, episode_id: str) -> tuple[list[StepRecord], list[str]]:
    """An episode's steps; unreadable lines are skipped with a warning (the viewer is
    best-effort; the statistics never depend on steps)."""
    warnings: list[str] = []
    folder = run.episode_dir(episode_id)
    path = run.inside(folder / "steps.jsonl") if folder is not None else None
    if path is None or not path.exists():
        return [], warnings
    try:
        data = read_regular(path)
    except NotRegularFile:   # other OSErrors leave the whole folder out (report.render.viewer_data)
        warnings.append(f"{path}: not a regular file; steps not shown")
        return [], warnings
    steps: list[StepRecord] = []
    bad: list[int] = []
    for i, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            steps.append(StepRecord.model_validate_json(raw))
        except ValidationError:
            bad.append(i)
    if bad:   # one line per file: a garbage file is one fault, not one per line
        warnings.append(f"{path}:{bad[0]}: {len(bad)} unreadable line(s) skipped")
    steps.sort(key=lambda s: s.step)
    return steps, warnings
