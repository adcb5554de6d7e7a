"""The run directory on disk: manifest, the episode log, episode folders.

`episodes.jsonl` is the source of truth. A line is appended with a single O_APPEND write
and fsynced before the episode counts as finished, so a kill -9 at any moment leaves at
most a partial last line, which the next open cuts off before appending again.

Writes stay inside the run directory: its files are opened without following a link
(`open_own`) and its folders must not be links, so a link planted there (to another
user's file, to a file outside) is refused in one line before anything is written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

from agent_host.config.records import EPISODES
from agent_host.config.manifest import MANIFEST, RunManifest, load_manifest, write_manifest
from agent_host.config.records import EpisodeRecord, NotOwnFile, open_own, read_episode_log
from agent_host.errors import UserError



def read_records(path: Path) -> list[EpisodeRecord]:
    """Every complete record of an episode log (see config.records.read_episode_log)."""
    return read_episode_log(path)


class RunStore:
    def __init__(self, run_dir: Path):
        self.dir = Path(run_dir)
        self.episodes_dir = self.dir / "episodes"
        self.servers_dir = self.dir / "servers"
        self.log_path = self.dir / EPISODES
        self._lock = threading.Lock()
        self._created = False

    # -- creation and reopening -------------------------------------------------
    def create(self, manifest: RunManifest) -> None:
        if (self.dir / MANIFEST).exists():
            raise FileExistsError(f"{self.dir} already holds a run; use --resume {self.dir}")
        self.dir.mkdir(parents=True, exist_ok=True)
        self._own_folders()
        write_manifest(self.dir / MANIFEST, manifest)
        os.close(open_own(self.log_path, os.O_WRONLY | os.O_CREAT))
        self._created = True

    def _own_folders(self) -> None:
        """episodes/ and servers/, made if missing; a link in their place is refused: what
        is written below them would land outside the run directory."""
        for d in (self.episodes_dir, self.servers_dir):
            if d.is_symlink():
                raise NotOwnFile(f"{d}: a symbolic link; refused (a run writes only inside its directory)")
            d.mkdir(exist_ok=True)

    @contextlib.contextmanager
    def discarded_if_nothing_ran(self, existed: bool) -> Iterator[None]:
        """A fresh run that fails before recording its first episode (its server never got
        ready, an unreachable endpoint) leaves no run directory: an empty one would look like
        a run to resume and to report. It stays when a server log in it says why."""
        try:
            yield
        except UserError as exc:
            if not self._created or self.log_path.stat().st_size:
                raise
            if any(f.is_file() and f.stat().st_size for f in self.servers_dir.iterdir()):
                raise UserError(f"{exc} (nothing ran; {self.dir} is kept for its server log: "
                                f"resume with --resume {self.dir}, or delete it)") from None
            self._remove_created(existed)
            raise UserError(f"{exc} (nothing ran; no run directory kept)") from None

    def _remove_created(self, existed: bool) -> None:
        if not existed:
            shutil.rmtree(self.dir, ignore_errors=True)
            return
        for name in (MANIFEST, EPISODES):   # a directory the user made stays, emptied of ours
            (self.dir / name).unlink(missing_ok=True)
        for d in (self.episodes_dir, self.servers_dir):
            shutil.rmtree(d, ignore_errors=True)

    def open_existing(self) -> RunManifest:
        data = self.read_manifest()
        self._cut_torn_tail()
        self._own_folders()
        return data

    def read_manifest(self) -> RunManifest:
        """The manifest, read only: FileNotFoundError when there is none, else ManifestError
        (a UserError) naming the file and the field that does not fit config/manifest.py."""
        path = self.dir / MANIFEST
        if not path.exists():
            raise FileNotFoundError(f"{self.dir}: no {MANIFEST}, not a run directory")
        return load_manifest(path)

    def update_manifest(self, **fields: object) -> RunManifest:
        """The manifest with `fields` set, checked by the model before it is written."""
        manifest = self.read_manifest()
        changed = RunManifest.model_validate({**manifest.set_fields(), **fields})
        write_manifest(self.dir / MANIFEST, changed)
        return changed

    def _cut_torn_tail(self) -> None:
        with open(open_own(self.log_path, os.O_RDWR | os.O_CREAT), "rb+") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)

    # -- the episode log --------------------------------------------------------
    def records(self) -> list[EpisodeRecord]:
        if self.log_path.is_symlink():  # a resume would append its episodes to the link's target
            raise NotOwnFile(f"{self.log_path}: a symbolic link; refused (a run writes only inside its directory)")
        return read_records(self.log_path)

    def finished(self) -> dict[str, EpisodeRecord]:
        """Episodes that are done: the latest non-error record of each episode id."""
        done: dict[str, EpisodeRecord] = {}
        for rec in self.records():
            if rec.outcome != "error":
                done[rec.episode_id] = rec
        return done

    def error_attempts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for rec in self.records():
            if rec.outcome == "error":
                counts[rec.episode_id] = counts.get(rec.episode_id, 0) + 1
        return counts

    def append(self, record: EpisodeRecord) -> None:
        line = (record.model_dump_json() + "\n").encode()
        with self._lock:
            fd = open_own(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                size = os.fstat(fd).st_size
                try:
                    view = memoryview(line)
                    while view:  # a nearly full disk may take part of it and say so
                        view = view[os.write(fd, view):]
                    os.fsync(fd)
                except OSError:
                    # a full disk may take part of the line: cut it, so the log stays whole
                    try:
                        os.ftruncate(fd, size)
                    except OSError:
                        pass
                    raise
            finally:
                os.close(fd)

    # -- episode folders --------------------------------------------------------
    def fresh_episode_dir(self, episode_id: str) -> Path:
        """A clean folder for an attempt; an earlier attempt's folder is kept aside."""
        path = self.episodes_dir / episode_id
        if path.exists():
            n = 1
            while (aside := self.episodes_dir / f"{episode_id}~{n}").exists():
                n += 1
            shutil.move(str(path), str(aside))
        path.mkdir(parents=True)
        return path
