"""The state a task touches (its scope) and the change it asks for, as data.

The judge holds a goal only when the task's check holds and nothing else in scope changed
(judge/checks.py); phone/state.py reads each kind of state named here from a phone. This
module only names the kinds and derives a task's scope from its own text: what its setup,
goal_setup, check and teardown read or write. A task may name more (`scope:`), never less.

A kind's scope is whole (every contact, every event, every text), except `files`, whose scope
is the top-level folders of shared storage a task names (/sdcard/Download, /sdcard/Documents):
a real phone's storage is too large to list on every step, and apps keep their own files there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from agent_host.config.strict import Strict, fail

StateKind = Literal["contacts", "calendar", "sms", "calls", "alarms", "files", "settings"]
STATE_KINDS: tuple[str, ...] = StateKind.__args__  # type: ignore[attr-defined]

# What in a task's commands puts a kind in its scope (searched in every command, every check).
TOUCHES: dict[str, re.Pattern[str]] = {
    "contacts": re.compile(r"com\.android\.contacts|providers\.contacts|content://contacts"),
    "calendar": re.compile(r"com\.android\.calendar"),
    "sms": re.compile(r"content://(sms|mms)"),
    "calls": re.compile(r"content://call_log"),
    "alarms": re.compile(r"deskclock|next_alarm|dumpsys alarm|SET_ALARM"),
    # a folder of shared storage: the first component under /sdcard, not a file there
    # (window_dump.xml is uiautomator's, never a task's)
    "files": re.compile(r"/sdcard/([^/\s\"'.]+)(?=[/\s\"']|$)"),
    # a `setting:` step or check: its key is one of the texts (derive_scope's `texts`)
    "settings": re.compile(r"\bsettings (get|put) |\bsvc |\bcmd (wifi|bluetooth|connectivity)|^setting$", re.M),
}
assert set(TOUCHES) == set(STATE_KINDS)

# The state of the app a task is about is in its scope even where its steps name none (an
# infeasible Settings task must still leave the settings as they were).
APP_SCOPE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {   # alias -> (kinds, folders)
    "settings": (("settings",), ()),
    "clock": (("alarms",), ()),
    "contacts": (("contacts",), ()),
    "calendar": (("calendar",), ()),
    "messages": (("sms",), ()),
    "phone": (("calls",), ()),
    "markor": (("files",), ("/sdcard/Documents",)),   # Markor's notebook is /sdcard/Documents/Markor
}


class KindChange(Strict):
    added: int = Field(0, ge=0, description="objects of this kind that are new after the task (rows, files)")
    removed: int = Field(0, ge=0, description="objects of this kind that are gone after the task")
    changed: int = Field(0, ge=0, description="objects edited in place (a setting's value, an event's "
                                              "place): each is one object removed and one added")


class Change(Strict):
    """What a task asks to change, per kind of state; every kind not named: nothing."""
    contacts: KindChange | None = None
    calendar: KindChange | None = None
    sms: KindChange | None = None
    calls: KindChange | None = None
    alarms: KindChange | None = None
    files: KindChange | None = None
    settings: KindChange | None = None

    def counts(self) -> dict[str, tuple[int, int]]:
        """kind -> (added, removed), for the kinds named."""
        return {k: (v.added + v.changed, v.removed + v.changed) for k in STATE_KINDS
                if (v := getattr(self, k)) is not None}


assert tuple(Change.model_fields) == STATE_KINDS


class ScopeSpec(Strict):
    """A task's own additions to its derived scope."""
    kinds: list[StateKind] = Field(default_factory=list, description="more kinds of state to watch")
    folders: list[str] = Field(default_factory=list, description="more folders of shared storage "
                                                                 "(/sdcard/NAME) to watch")

    @model_validator(mode="after")
    def _folders(self) -> ScopeSpec:
        for f in self.folders:
            if not re.fullmatch(r"/sdcard/[^/\s\"'.]+", f):
                raise fail(f"folder {f!r}: give a top-level folder of shared storage, /sdcard/NAME")
        return self


@dataclass(frozen=True)
class Scope:
    """The kinds of state a task touches; for `files`, the folders."""
    kinds: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, list[str]]:
        return {"kinds": list(self.kinds), "folders": list(self.folders)}


def texts_of(data: object) -> list[str]:
    """Every string in a task's steps or check as YAML loads them, dict keys included (so a
    `setting:` step or check counts)."""
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for k, v in data.items() for s in [str(k), *texts_of(v)]]
    if isinstance(data, (list, tuple)):
        return [s for x in data for s in texts_of(x)]
    return []


def derive_scope(texts: list[str], app: str = "", change: Change | None = None,
                 spec: ScopeSpec | None = None) -> Scope:
    """The scope of a task from the text of its commands and checks (`texts`, texts_of its
    steps and check), the app it is about, the kinds its change names and its own `scope:`
    additions."""
    blob = "\n".join(texts)
    app_kinds, app_folders = APP_SCOPE.get(app, ((), ()))
    kinds = {k for k, pat in TOUCHES.items() if pat.search(blob)} | set(app_kinds)
    folders = {f"/sdcard/{m}" for m in TOUCHES["files"].findall(blob)} | set(app_folders)
    if change is not None:
        kinds |= set(change.counts())
    if spec is not None:
        kinds |= set(spec.kinds)
        folders |= set(spec.folders)
    if folders:
        kinds.add("files")
    return Scope(tuple(k for k in STATE_KINDS if k in kinds), tuple(sorted(folders)))
