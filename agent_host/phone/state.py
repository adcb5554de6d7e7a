"""State readers: the whole state of each kind a task touches, as a normalised snapshot.

Each reader (`READERS`, one per kind of config/scope.py) names the shell commands that read its
kind (the ones a real Android 14 answers, which the virtual phone answers the same way), how
their output becomes rows, the fields that change by themselves and are never compared, and
the commands that empty the kind for a clean start. The judge runs the commands in its one
batched shell call per step (judge/checks.py), so a snapshot costs no extra round trip.

A row is a dict of strings; its `key` (the compared fields, in order) is what a diff counts,
so an object deleted and made again the same is no change, and an object edited is one row
removed and one added. Ids are kept in the row (for the adversaries that act on one) and
never compared.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_host.config.scope import STATE_KINDS, Scope
from agent_host.config.steps import ShellStep

if TYPE_CHECKING:
    from agent_host.phone.device import Phone
    from agent_host.config.phones import PhoneProfile

Row = dict[str, str]
Snapshot = dict[str, list[Row]]            # kind -> rows, in the order read
Outputs = list[tuple[str, int]]            # (output, exit code) per command, in order


@dataclass(frozen=True)
class Reader:
    kind: str
    what: str                                     # one line: what is read
    commands: Callable[[Scope], list[str]]
    parse: Callable[[Outputs], list[Row]]
    compared: tuple[str, ...]                     # the fields a diff compares
    volatile: tuple[str, ...] = ()                # fields that change by themselves: never read or compared
    reset: Callable[[Scope], list[str]] = field(default=lambda scope: [])

    def key(self, row: Row) -> str:
        return ", ".join(f"{f}={row.get(f, '')}" for f in self.compared)


# -- parsing helpers ------------------------------------------------------------------------------

def content_rows(output: str, columns: list[str]) -> list[Row]:
    """`content query --projection a:b:c` output as rows. Values may hold ", " (a message body):
    each row is split at the known column names, in order; a line that does not start a row
    continues the previous value (a body with a newline)."""
    pattern = re.compile(r"^Row: \d+ " + ", ".join(f"{re.escape(c)}=(.*?)" for c in columns) + r"$", re.S)
    records: list[str] = []
    for line in output.splitlines():
        if line.startswith("Row: "):
            records.append(line)
        elif records:
            records[-1] += "\n" + line
    rows = []
    for rec in records:
        m = pattern.match(rec)
        if m is not None:
            rows.append({c: ("" if v == "NULL" else v) for c, v in zip(columns, m.groups())})
    return rows


def digits(number: str) -> str:
    """A phone number as its national digits (+1 650-555-0142, (650) 555-0142 and 6505550142
    are one number): how the phone's own apps match numbers."""
    d = re.sub(r"\D", "", number)
    return d[1:] if len(d) == 11 and d.startswith("1") else d


def _query(uri: str, columns: list[str], where: str | None = None) -> str:
    tail = f' --where "{where}"' if where else ""
    return f"content query --uri {uri} --projection {':'.join(columns)}{tail}"


# -- contacts -------------------------------------------------------------------------------------

_CONTACT_COLS = ["raw_contact_id", "mimetype", "data1"]
_MIME = "vnd.android.cursor.item/"


def _contacts(outs: Outputs) -> list[Row]:
    """One row per raw contact: its name, numbers and e-mails (each sorted), other data."""
    by_id: dict[str, dict[str, list[str]]] = {}
    for r in content_rows(outs[0][0], _CONTACT_COLS):
        mime = r["mimetype"].removeprefix(_MIME)
        part = {"name": "name", "phone_v2": "phones", "email_v2": "emails"}.get(mime, "other")
        value = digits(r["data1"]) if part == "phones" else r["data1"] if part != "other" else f"{mime}:{r['data1']}"
        by_id.setdefault(r["raw_contact_id"], {}).setdefault(part, []).append(value)
    return [{"id": rid, **{p: "; ".join(sorted(v)) for p, v in parts.items()}} for rid, parts in by_id.items()]


# -- calendar -------------------------------------------------------------------------------------

EVENTS = "content://com.android.calendar/events"
_EVENT_COLS = ["_id", "title", "dtstart", "dtend", "allDay", "eventLocation", "description", "rrule"]


def _events(outs: Outputs) -> list[Row]:
    return [{"id": r.pop("_id"), **r} for r in content_rows(outs[0][0], _EVENT_COLS)]


# -- texts and calls ----------------------------------------------------------------------------

_SMS_COLS = ["_id", "type", "address", "body"]
# Telephony.Sms types: a sent text passes through queued and outbox to sent (or failed) by
# itself, so every outgoing type is one value; 1 inbox, 3 draft.
_SMS_TYPE = {"1": "in", "2": "out", "3": "draft", "4": "out", "5": "out", "6": "out"}


def _sms(outs: Outputs) -> list[Row]:
    return [{"id": r["_id"], "type": _SMS_TYPE.get(r["type"], r["type"]), "address": digits(r["address"]),
             "body": r["body"]} for r in content_rows(outs[0][0], _SMS_COLS)]


_CALL_COLS = ["_id", "number", "type"]


def _calls(outs: Outputs) -> list[Row]:
    return [{"id": r["_id"], "number": digits(r["number"]), "type": r["type"]}
            for r in content_rows(outs[0][0], _CALL_COLS)]


# -- alarms ---------------------------------------------------------------------------------------

def _alarms(outs: Outputs) -> list[Row]:
    value = outs[0][0].strip()
    return [] if outs[0][1] != 0 or value in ("", "null") else [{"next": value}]


# -- files ----------------------------------------------------------------------------------------

# Android's standard folders of shared storage (Environment.DIRECTORY_*): every one is watched
# for files appearing and disappearing whenever files are in scope, so a note "deleted" by moving
# it to Download is seen; only the task's own folders are read with each file's MD5 (a file
# edited in place) and emptied for a clean start: a phone's DCIM may hold thousands of photos.
STANDARD_FOLDERS = tuple(f"/sdcard/{d}" for d in ("Alarms", "DCIM", "Documents", "Download", "Movies", "Music",
                                                  "Notifications", "Pictures", "Podcasts", "Ringtones"))
_MD5 = re.compile(r"^([0-9a-f]{32})\s+(/.*)$")


def watched_folders(scope: Scope) -> tuple[str, ...]:
    return tuple(sorted(set(STANDARD_FOLDERS) | set(scope.folders)))


def _files_commands(scope: Scope) -> list[str]:
    if not scope.folders:
        return []
    watched = " ".join(f'"{f}"' for f in watched_folders(scope))
    own = " ".join(f'"{f}"' for f in scope.folders)
    return [f"find {watched} -mindepth 1 -type d", f"find {watched} -type f",
            f"find {own} -type f -exec md5sum {{}} +"]


def _files(outs: Outputs) -> list[Row]:
    """Folders; files with their MD5 where read (the task's folders), else ''. A missing
    standard folder only adds an error line, which is no path."""
    if not outs:
        return []
    md5 = {m.group(2): m.group(1) for line in outs[2][0].splitlines() if (m := _MD5.match(line))}
    rows = [{"type": "d", "path": line, "md5": ""} for line in outs[0][0].splitlines() if line.startswith("/")]
    rows += [{"type": "f", "path": line, "md5": md5.get(line, "")} for line in outs[1][0].splitlines()
             if line.startswith("/")]
    return rows


def _files_reset(scope: Scope) -> list[str]:
    return [c for f in scope.folders for c in (f'rm -rf "{f}"', f'mkdir -p "{f}"')]


# -- settings -------------------------------------------------------------------------------------

# The settings keys tasks set or read; a test checks every shipped task's keys are here.
# low_power_warning_acknowledged is left out: Android sets it by itself when its dialog is
# dismissed; next_alarm_formatted belongs to the alarms reader.
SETTINGS_KEYS: dict[str, tuple[str, ...]] = {
    "global": ("airplane_mode_on", "wifi_on", "bluetooth_on", "zen_mode", "low_power"),
    "system": ("screen_off_timeout", "screen_brightness", "screen_brightness_mode", "accelerometer_rotation",
               "user_rotation"),
    "secure": ("ui_night_mode", "location_mode"),
}


# What a radio's setting means to its user. Android stores the wish and the airplane-mode state
# in one value (WifiSettingsStore: 2 on during airplane mode, 3 on but off for airplane mode;
# BluetoothManagerService: 2 on but off for airplane mode), so turning airplane mode on rewrites
# wifi_on 1 -> 3 by itself: no change of the user's, and none the judge may count.
_MEANING: dict[str, dict[str, str]] = {
    "global/wifi_on": {"0": "off", "1": "on", "2": "on", "3": "on"},
    "global/bluetooth_on": {"0": "off", "1": "on", "2": "on"},
}


def _settings(outs: Outputs) -> list[Row]:
    rows = []
    for (out, _code), (ns, keys) in zip(outs, SETTINGS_KEYS.items()):
        values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        for k in keys:
            value = values.get(k, "")
            rows.append({"key": f"{ns}/{k}", "value": _MEANING.get(f"{ns}/{k}", {}).get(value, value)})
    return rows


READERS: dict[str, Reader] = {r.kind: r for r in [
    Reader("contacts", "every raw contact's name, numbers and e-mails (contacts provider, data table)",
           lambda s: [_query("content://com.android.contacts/data", _CONTACT_COLS)], _contacts,
           ("name", "phones", "emails", "other"), volatile=("times_contacted", "last_time_contacted"),
           reset=lambda s: ["pm clear com.android.providers.contacts"]),
    Reader("calendar", "every event not deleted (calendar provider)",
           lambda s: [_query(EVENTS, _EVENT_COLS, "deleted=0")], _events, tuple(_EVENT_COLS[1:]),
           volatile=("dirty", "lastSynced", "sync_data1"), reset=lambda s: [f"content delete --uri {EVENTS}"]),
    Reader("sms", "every text, in and out (telephony provider)",
           lambda s: [_query("content://sms", _SMS_COLS)], _sms, ("type", "address", "body"),
           volatile=("read", "seen", "date_sent", "status", "thread_id"),
           reset=lambda s: ["appops set com.android.shell WRITE_SMS allow", "content delete --uri content://sms",
                            "appops set com.android.shell WRITE_SMS default"]),
    Reader("calls", "every call in the call log",
           lambda s: [_query("content://call_log/calls", _CALL_COLS)], _calls, ("number", "type"),
           volatile=("new", "is_read", "duration", "date"),
           reset=lambda s: ["content delete --uri content://call_log/calls"]),
    # A real Clock keeps its alarms in its own database, which the shell cannot read: the next
    # alarm clock is all Android shows of them, so an extra alarm later than it goes unseen.
    Reader("alarms", "the next alarm clock (system next_alarm_formatted)",
           lambda s: ["settings get system next_alarm_formatted"], _alarms, ("next",),
           reset=lambda s: ["pm clear com.google.android.deskclock"]),
    Reader("files", "every folder and file under the standard folders of shared storage, with each file's "
           "MD5 under the task's own folders",
           _files_commands, _files, ("type", "path", "md5"), volatile=("mtime", "atime"), reset=_files_reset),
    # No reset: settings have no empty state; each task's setup sets the keys it needs.
    Reader("settings", "the settings keys tasks set or read (SETTINGS_KEYS)",
           lambda s: [f"settings list {ns}" for ns in SETTINGS_KEYS], _settings, ("key", "value")),
]}
assert tuple(READERS) == STATE_KINDS, "one reader per kind of state (config/scope.py)"


def commands(scope: Scope) -> list[str]:
    """Every command the scope's readers need, in order (duplicates kept apart per reader)."""
    return [c for kind in scope.kinds for c in READERS[kind].commands(scope)]


def snapshot(scope: Scope, outputs: Outputs) -> Snapshot:
    """The scope's snapshot from the outputs of `commands(scope)`, in the same order."""
    snap: Snapshot = {}
    at = 0
    for kind in scope.kinds:
        reader = READERS[kind]
        n = len(reader.commands(scope))
        snap[kind] = reader.parse(outputs[at:at + n])
        at += n
    return snap


def read(scope: Scope, phone: Phone, profile: PhoneProfile | None = None) -> Snapshot:
    """The scope's snapshot read from `phone` in one batch (with the profile's command variants).
    The judge does not call this: it reads the scope in the batch of its check's commands."""
    cmds = [profile.command(c) if profile is not None else c for c in commands(scope)]
    results = phone.shell_batch(cmds) if cmds else []
    return snapshot(scope, [(r.output, r.exit_code) for r in results])


def reset_commands(scope: Scope) -> list[str]:
    """What empties the scope before a task's setup seeds it (a clean start per episode)."""
    return [c for kind in scope.kinds for c in READERS[kind].reset(scope)]


def clean_start(scope: Scope) -> list[ShellStep]:
    """reset_commands as setup steps (run with the phone profile's command variants)."""
    return [ShellStep(shell=c) for c in reset_commands(scope)]


@dataclass(frozen=True)
class KindDiff:
    added: list[str]
    removed: list[str]


def diff(start: Snapshot, now: Snapshot) -> dict[str, KindDiff]:
    """Per kind, the rows (as keys) added and removed since `start` (as multisets)."""
    out = {}
    for kind in now:
        reader = READERS[kind]
        before = Counter(reader.key(r) for r in start.get(kind, []))
        after = Counter(reader.key(r) for r in now[kind])
        out[kind] = KindDiff(sorted((after - before).elements()), sorted((before - after).elements()))
    return out
