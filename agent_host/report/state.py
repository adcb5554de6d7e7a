"""The task's scope of state as the viewer shows it: a step's change to it since setup (the
judge's diff in check_detail's "state") and the state after setup (an episode's
start_state.json), each made plain lines and counts for the viewer to show as text. Both are
read best-effort: the judge's detail is free-form and an episode may have neither (episodes
judged before the whole-state judge)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_host.config.records import read_regular
from agent_host.report.load import Run


def _rows(x: object) -> list[str]:
    return [str(r) for r in x] if isinstance(x, list) else []


def _count(x: object) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


# Any: a check's detail and the viewer's rows, JSON
def state_diff(detail: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A step's change to the task's scope since setup (check_detail's "state", present when the
    scope changed other than expected), per kind: the rows added and removed, and how many of
    each the task expects (None where it names no count). The viewer shows it as lines, not as
    JSON; a malformed "state" (the judge's detail is free-form) gives what can be read of it."""
    state = detail.get("state")
    if not isinstance(state, dict):
        return None
    kinds = k if isinstance(k := state.get("kinds"), dict) else {}
    expected = e if isinstance(e := state.get("expected"), dict) else {}
    out = []
    for kind in sorted({*kinds, *expected}, key=str):
        got = g if isinstance(g := kinds.get(kind), dict) else {}
        want = w if isinstance(w := expected.get(kind), dict) else {}
        row: dict[str, Any] = {"kind": str(kind), "added": _rows(got.get("added")), "removed": _rows(got.get("removed")),
               "expected": {"added": _count(want.get("added")), "removed": _count(want.get("removed"))}}
        # a kind that neither changed nor was to change says nothing (the judge lists every
        # kind of the declared change, noughts included)
        if row["added"] or row["removed"] or any(row["expected"].values()):
            out.append(row)
    return out


START_STATE_ROWS = 200              # rows shown per kind of the state after setup; the rest counted


def _row_text(row: object) -> str:
    """A row of a state snapshot as one line: a reader's row is {field: value}, shown as the
    diff's rows are ("title=Team offsite, dtstart=..."); a string as it is."""
    if isinstance(row, dict):
        return ", ".join(f"{k}={v}" for k, v in row.items())
    return str(row)


def _scope_text(scope: object) -> str | None:
    if not isinstance(scope, dict):
        return None
    kinds = ", ".join(str(k) for k in scope.get("kinds") or [])
    folders = ", ".join(str(f) for f in scope.get("folders") or [])
    return kinds + (f" (folders {folders})" if folders else "") or None


# Any: start_state.json as read, JSON
def start_state(run: Run, folder: Path | None) -> dict[str, Any] | None:
    """The episode's scope after setup (start_state.json: {"scope": {kinds, folders}, "state":
    {KIND: [ROW, ...]}}, or the bare {KIND: [ROW, ...]}), for reading a step's diff against: the
    scope in words, and per kind its first START_STATE_ROWS rows and how many there are. None
    when the folder has none (episodes judged before the whole-state judge) or it is unreadable."""
    path = run.inside(folder / "start_state.json") if folder is not None else None
    if path is None or not path.is_file():
        return None
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    snap = s if isinstance(s := data.get("state"), dict) else data
    kinds = {str(k): [_row_text(r) for r in v] for k, v in sorted(snap.items()) if isinstance(v, list)}
    return {"scope": _scope_text(data.get("scope")),
            "kinds": {k: {"rows": rows[:START_STATE_ROWS], "total": len(rows)} for k, rows in kinds.items()}}
