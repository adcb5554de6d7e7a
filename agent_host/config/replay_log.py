"""A replay's answers on disk: `RUN/replay/<reference>/replay.jsonl`, one JSON line per
replayed request and pass, written by runs/replay.py and read by report/replay.py.

A line: `pass` (a candidate build id, or `@reference` for the reference scoring its own
replies), `build`, `episode_id`, `index` (the request in requests.json), `step`, `attempt`,
`role` (ROLES), `task`, `task_id`, `variant`, `seconds`; for a candidate `reply`, `name`,
`match` (`same_action`, `same_tool`, `different`), `exact`; with log-probs `logprob` (of the
reference's reply), `reply_tokens`, `score_seconds`; `error` when the request failed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agent_host.config.records import NotOwnFile, open_own, read_regular
from agent_host.errors import UserError

REPLAY_DIR = "replay"
LINES = "replay.jsonl"
SUMMARY = "replay.json"
REFERENCE_PASS = "@reference"
ROLES = ("navigation", "completion", "after_goal", "infeasible")
MATCHES = ("same_action", "same_tool", "different")


def replay_dir(run_dir: Path, reference: str) -> Path:
    return Path(run_dir) / REPLAY_DIR / reference


class ReplayLog:
    """`replay.jsonl`: one answer a line, appended and fsynced; a torn last line is cut off."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.path = self.dir / LINES

    def read(self) -> list[dict[str, Any]]:
        # Any: the lines this log's writers appended, whose fields the report reads by name
        if not self.path.exists():
            return []
        try:
            data = read_regular(self.path)
        except OSError as exc:
            raise UserError(f"{self.path}: cannot read ({exc.strerror or exc})") from None
        lines = data.split(b"\n")
        out = []
        for n, line in enumerate(lines[:-1], 1):        # the part after the last newline is torn
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    raise UserError(f"{self.path}:{n}: not a JSON line") from None
        return out

    def open(self) -> None:
        """Cut a torn last line (kill -9 mid-write) before appending again. The replay
        folders must not be links and the log is opened without following one: a replay
        writes only inside its run directory."""
        for d in (self.dir.parent, self.dir):
            if d.is_symlink():
                raise NotOwnFile(f"{d}: a symbolic link; refused (a replay writes only inside its run directory)")
            d.mkdir(exist_ok=True)
        with open(open_own(self.path, os.O_RDWR | os.O_CREAT), "r+b") as f:
            data = f.read()
            keep = data.rfind(b"\n") + 1
            if keep != len(data):
                f.truncate(keep)

    def append(self, line: dict[str, object]) -> None:
        data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        fd = open_own(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
