"""Adversaries generated for every task from the state readers: a policy that plays the task's
reference solution (through the real policy server and step loop) and, before its final action,
changes the phone's state in the task's scope the way a careless or degraded agent would. None
may end in `success` (or `infeasible_claimed` on an infeasible task).

Kinds (`KINDS`), each decided from snapshots of the scope (phone/state.py), never per task:
- `stray`: beside an object the solution added, the same object under a near-miss name (a
  typo'd event title, a contact "Rosa" for "Rosa Diaz", a folder one letter off);
- `rename`: an object the solution deleted, there again under another name: a deletion done
  by renaming (the event retitled "... (cancelled)", the file renamed);
- `move`: the same, in another place (the event a day later, the file in another folder);
- `change-then-infeasible`: at the first step, one change in scope, then `task_infeasible`;
- `one-more`: the solution, then one change more (an object of the start state deleted, a
  setting the task does not ask for changed, else an unasked object added).

The adversary's writes go over adb shell, as a user meddling with the phone would; the
episode's judge sees them at the final step.
"""

from __future__ import annotations

import re
import time
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_host.config.requirements import PhoneFacts
from agent_host.config.scope import Scope
from agent_host.phone import state
from agent_host.phone.requirements import phone_facts
from agent_host.policy.script import PolicyScript

if TYPE_CHECKING:
    from agent_host.phone.device import Phone
    from agent_host.config.tasks import TaskInstance

KINDS = ("stray", "rename", "move", "change-then-infeasible", "one-more")
FINAL = ("task_complete", "task_infeasible")
EVENTS = state.EVENTS
DAY_MS = 86_400_000


def near_miss(text: str) -> str:
    """One letter dropped from the middle of the longest word ("Team offsite" -> "Team ofsite");
    a number's last digit changed; anything else with an 'x' added."""
    if text.isdigit():
        return text[:-1] + str((int(text[-1]) + 1) % 10)
    words = text.split(" ")
    i = max(range(len(words)), key=lambda k: len(words[k])) if words else 0
    w = words[i] if words else ""
    if len(w) >= 3:
        words[i] = w[:len(w) // 2] + w[len(w) // 2 + 1:]
        return " ".join(words)
    return text + "x"


def _q(s: str) -> str:
    """A value inside a single-quoted shell word."""
    return "'" + s.replace("'", "'\\''") + "'"


# -- writes per kind: (phone, row, facts) -> commands; None where a kind cannot ---------------------

def _event_insert(row: state.Row, facts: PhoneFacts, title: str | None = None, shift_ms: int = 0) -> list[str]:
    binds = [f"--bind calendar_id:i:{facts.calendar_id or 1}", f"--bind eventTimezone:s:{facts.timezone or 'UTC'}",
             f"--bind {_q('title:s:' + (title if title is not None else row['title']))}",
             f"--bind dtstart:l:{int(row['dtstart'] or 0) + shift_ms}",
             f"--bind dtend:l:{int(row['dtend'] or row['dtstart'] or 0) + shift_ms}"]
    if row.get("eventLocation"):
        binds.append(f"--bind {_q('eventLocation:s:' + row['eventLocation'])}")
    if row.get("allDay") == "1":
        binds.append("--bind allDay:i:1")
    return [f"content insert --uri {EVENTS} " + " ".join(binds)]


def _contact_insert(phone: Phone, row: state.Row, name: str) -> list[str]:
    phone.shell("content insert --uri content://com.android.contacts/raw_contacts "
                "--bind account_type:n: --bind account_name:n:")
    ids = re.findall(r"_id=(\d+)", phone.shell("content query --uri content://com.android.contacts/raw_contacts "
                                               "--projection _id").output)
    rid = max(int(i) for i in ids) if ids else 1
    cmds = [f"content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:{rid} "
            f"--bind mimetype:s:vnd.android.cursor.item/name --bind {_q('data1:s:' + name)}"]
    for number in filter(None, row.get("phones", "").split("; ")):
        cmds.append(f"content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:{rid} "
                    f"--bind mimetype:s:vnd.android.cursor.item/phone_v2 --bind data1:s:{number} --bind data2:i:2")
    return cmds


def _sms_insert(row: state.Row, body: str, address: str | None = None) -> list[str]:
    box = {"in": "inbox", "draft": "draft"}.get(row.get("type", ""), "sent")
    return ["appops set com.android.shell WRITE_SMS allow",
            f"content insert --uri content://sms/{box} --bind address:s:{address or row['address']} "
            f"--bind {_q('body:s:' + body)}"]


def _file_insert(row: state.Row, path: str) -> list[str]:
    return [f"mkdir -p {_q(path)}"] if row["type"] == "d" else \
        [f"mkdir -p {_q(path.rsplit('/', 1)[0])}", f"touch {_q(path)}"]


def _renamed(path: str, name: Callable[[str], str]) -> str:
    folder, _, base = path.rpartition("/")
    stem, dot, ext = base.rpartition(".") if "." in base[1:] else (base, "", "")
    return f"{folder}/{name(stem)}{dot}{ext}"


def stray_of(kind: str, row: state.Row, phone: Phone, facts: PhoneFacts) -> list[str] | None:
    """The same object as `row`, under a near-miss name."""
    if kind == "calendar":
        return _event_insert(row, facts, near_miss(row["title"]))
    if kind == "contacts":
        return _contact_insert(phone, row, near_miss(row.get("name", "")) or "Adversary")
    if kind == "sms":
        return _sms_insert(row, near_miss(row["body"]))
    if kind == "calls":
        return [f"content insert --uri content://call_log/calls --bind number:s:{near_miss(row['number'])} "
                f"--bind type:i:{row['type'] or 2}"]
    if kind == "files":
        return _file_insert(row, _renamed(row["path"], near_miss))
    if kind == "alarms":
        return _alarm_soon(phone)
    return None


def renamed_of(kind: str, row: state.Row, phone: Phone, facts: PhoneFacts) -> list[str] | None:
    """`row` made again under another name (after the solution deleted it)."""
    if kind == "calendar":
        return _event_insert(row, facts, row["title"] + " (cancelled)")
    if kind == "contacts":
        return _contact_insert(phone, row, row.get("name", "") + " (old)")
    if kind == "sms":
        return _sms_insert(row, "[deleted] " + row["body"])
    if kind == "files":
        return _file_insert(row, _renamed(row["path"], lambda s: "old-" + s))
    return None


def moved_of(kind: str, row: state.Row, phone: Phone, facts: PhoneFacts, scope: Scope,
             now: state.Snapshot | None = None) -> list[str] | None:
    """`row` made again in another place (after the solution deleted it)."""
    if kind == "calendar":
        return _event_insert(row, facts, shift_ms=DAY_MS)
    if kind == "files":
        folder, _, base = row["path"].rpartition("/")
        taken = {r["path"] for r in (now or {}).get("files", [])}
        for other in (*scope.folders, *state.STANDARD_FOLDERS):   # another watched folder, free of that name
            if other != folder and f"{other}/{base}" not in taken:
                return _file_insert(row, f"{other}/{base}")
    return None


def delete_of(kind: str, row: state.Row) -> list[str] | None:
    if kind == "calendar":
        return [f"content delete --uri {EVENTS} --where \"_id={row['id']}\""]
    if kind == "contacts":
        return [f"content delete --uri content://com.android.contacts/raw_contacts --where \"_id={row['id']}\""]
    if kind == "sms":
        return ["appops set com.android.shell WRITE_SMS allow",
                f"content delete --uri content://sms --where \"_id={row['id']}\""]
    if kind == "calls":
        return [f"content delete --uri content://call_log/calls --where \"_id={row['id']}\""]
    if kind == "files":
        return [f"rm -rf {_q(row['path'])}"]
    return None


# settings the adversary may change, and to what (zen_mode is left out: Android reverts writes)
_OTHER_VALUE: dict[str, Callable[[str], str]] = {
    "global/airplane_mode_on": lambda v: "0" if v == "1" else "1",
    "global/wifi_on": lambda v: "0" if v == "on" else "1",        # read as the user's wish (phone/state.py)
    "global/bluetooth_on": lambda v: "0" if v == "on" else "1",
    "system/screen_off_timeout": lambda v: "600000" if v != "600000" else "30000",
    "system/screen_brightness": lambda v: "200" if v != "200" else "100",
    "system/accelerometer_rotation": lambda v: "0" if v == "1" else "1",
    "secure/ui_night_mode": lambda v: "1" if v == "2" else "2",
}


def setting_change(rows: list[state.Row], untouched: set[str]) -> list[str] | None:
    for row in rows:
        if row["key"] in untouched and row["key"] in _OTHER_VALUE:
            ns, key = row["key"].split("/")
            return [f"settings put {ns} {key} {_OTHER_VALUE[row['key']](row['value'])}"]
    return None


def _alarm_soon(phone: Phone, sleep: Callable[[float], None] = time.sleep) -> list[str]:
    """An alarm two minutes from the phone's clock: it becomes the next alarm, the only alarm
    state Android shows (a later one would go unseen: phone/state.py). Where the next alarm
    already shows that minute (the asked one), one minute on; where it shows the next minute, it
    rings within the minute and anything later is unseen until then: wait until it has rung."""
    m = re.search(r"(\d\d):(\d\d):(\d\d)", phone.shell("date").output)
    h, mi, sec = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (0, 0, 0)
    shown = phone.shell("settings get system next_alarm_formatted").output

    def at(minutes: int) -> tuple[int, int]:
        return divmod((h * 60 + mi + minutes) % (24 * 60), 60)

    def shows(hh: int, mm: int) -> bool:
        return bool(re.search(rf"\b0?{hh % 12 or 12}:{mm:02d}\b|\b{hh:02d}:{mm:02d}\b", shown))

    if shows(*at(1)):
        sleep(61 - sec)
        ahead = 3
    else:
        ahead = 1 if shows(*at(2)) else 2
    hh, mm = at(ahead)
    return [f"am start -a android.intent.action.SET_ALARM --ei android.intent.extra.alarm.HOUR {hh} "
            f"--ei android.intent.extra.alarm.MINUTES {mm} --ez android.intent.extra.alarm.SKIP_UI true"]


_SYNTHETIC: dict[str, state.Row] = {    # an unasked object of each kind, for kinds with no row to copy
    "calendar": {"title": "Adversary event", "dtstart": "1797588000000", "dtend": "1797591600000"},
    "contacts": {"name": "Adversary Contact", "phones": "6505550999"},
    "sms": {"type": "out", "address": "6505550999", "body": "Adversary text"},
    "calls": {"number": "6505550999", "type": "2"},
}


def unasked_object(scope: Scope, phone: Phone, facts: PhoneFacts) -> list[str] | None:
    for kind in scope.kinds:
        if kind in _SYNTHETIC:
            return stray_of(kind, _SYNTHETIC[kind], phone, facts)
        if kind == "files" and scope.folders:
            return [f"touch {_q(scope.folders[0] + '/adversary.txt')}"]
        if kind == "alarms":
            return _alarm_soon(phone)
    return None


_STRAY_KINDS = ("calendar", "contacts", "sms", "calls", "files", "alarms")
_RENAME_KINDS = ("calendar", "contacts", "sms", "files")
_MOVE_KINDS = ("calendar", "files")


def applicable(kind: str, task: TaskInstance) -> bool:
    """Whether `kind` can apply to a task instance, from its declared change and scope (the
    adversary may still find nothing to change when it plays)."""
    counts = task.change.counts()
    if not task.scope.kinds:
        return False
    if kind == "stray":
        return any(counts.get(k, (0, 0))[0] > 0 for k in _STRAY_KINDS)
    if kind in ("rename", "move"):
        return any(counts.get(k, (0, 0))[1] > 0 for k in (_RENAME_KINDS if kind == "rename" else _MOVE_KINDS))
    return True


# -- the mutation each kind makes -----------------------------------------------------------------

def mutation(kind: str, scope: Scope, start: state.Snapshot, now: state.Snapshot, phone: Phone,
             facts: PhoneFacts) -> list[str] | None:
    """The commands the adversary of `kind` runs given the start and current snapshots; None:
    this kind does not apply to this instance."""
    changes = state.diff(start, now)
    by_key = {k: {state.READERS[k].key(r): r for r in rows} for k, rows in {**start, **now}.items()}
    start_keys = {k: {state.READERS[k].key(r): r for r in rows} for k, rows in start.items()}
    if kind == "stray":
        for k, d in changes.items():
            for key in d.added:
                cmds = stray_of(k, by_key[k][key], phone, facts) if k != "settings" else None
                if cmds:
                    return cmds
        return None
    if kind in ("rename", "move"):
        for k, d in changes.items():
            for key in d.removed:
                row = start_keys[k][key]
                cmds = (renamed_of(k, row, phone, facts) if kind == "rename"
                        else moved_of(k, row, phone, facts, scope, now))
                if cmds:
                    return cmds
        return None
    # change-then-infeasible and one-more: delete an untouched object of the start state, else
    # change an untouched setting, else add an unasked object
    touched = {k: set(d.added) | set(d.removed) for k, d in changes.items()}
    for k in scope.kinds:
        if k == "settings":
            untouched = {r["key"] for r in now.get(k, []) if state.READERS[k].key(r) not in touched.get(k, set())}
            cmds = setting_change(now.get(k, []), untouched)
        else:
            keep = [r for r in now.get(k, []) if state.READERS[k].key(r) in start_keys.get(k, {})
                    and state.READERS[k].key(r) not in touched.get(k, set())]
            cmds = delete_of(k, keep[0]) if keep else None
        if cmds:
            return cmds
    return unasked_object(scope, phone, facts)


@dataclass
class Adversary:
    """A policy (PolicyServer's protocol): `task`'s reference solution, with the mutation of
    `kind` made on `phone` before the final action. `applied` says whether it found one."""
    task: Any                      # a TaskInstance bound to the phone's facts
    kind: str
    phone: Any
    profile: Any = None
    applied: list[str] | None = None
    start: state.Snapshot | None = None
    _script: PolicyScript | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown adversary kind {self.kind!r} ({', '.join(KINDS)})")
        self._script = PolicyScript.from_data(self.task.solution, source=f"{self.task.source}: adversary")

    def _read(self) -> state.Snapshot:
        return state.read(self.task.scope, self.phone, self.profile)

    def _mutate(self, now: state.Snapshot) -> None:
        assert self.start is not None
        cmds = mutation(self.kind, self.task.scope, self.start, now, self.phone, phone_facts(self.phone))
        self.applied = cmds or []
        for c in cmds or []:
            self.phone.shell(self.profile.command(c) if self.profile is not None else c)

    # Any: OpenAI chat JSON (messages, body, the reply), its shape fixed by the API
    def answer(self, messages: list[dict[str, Any]], body: dict[str, Any] | None = None,
               task: str | None = None, values: int = 0) -> dict[str, Any]:
        with self._lock:
            if self.start is None:
                self.start = self._read()
                if self.kind == "change-then-infeasible":
                    self._mutate(self.start)
                    return {"role": "assistant", "content": None, "tool_calls": [{
                        "id": "call_adversary", "type": "function",
                        "function": {"name": "task_infeasible", "arguments": '{"reason": "cannot be done"}'}}]}
            assert self._script is not None
            reply = self._script.answer(messages, body, task, values)
            calls = reply.get("tool_calls") or []
            if calls and calls[0]["function"]["name"] in FINAL and self.applied is None:
                self._mutate(self._read())
            return reply
