"""What a task needs from a phone (`requires:`), what the harness itself needs, and the
phone facts a task's steps may name (`{phone.calendar_id}`, `{phone.time:...}`).

Every name is defined here once: the task schema takes its `requires:` names from
`TASK_REQUIREMENTS`, `agent-host phone check` prints a row per `REQUIREMENTS` entry with its
fix, and a run schedules a task only on phones that meet its requirements
(runs/requirements.py). phone/requirements.py reads them from a phone.

One requirement is derived rather than declared: `apps_installed`. A task needs every app it
names (its `app`, the apps its steps launch or stop, its solution opens, its checks want in the
foreground: config/tasks.py `app_names`), resolved through the phone profile to packages; each
is the requirement `app:PACKAGE` (`app_requirement`), met when `pm list packages` lists it.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


@dataclass(frozen=True)
class Requirement:
    name: str
    # task: a task declares it (`requires:`); derived: a task needs it by what it does (the apps
    # it opens), never written in a task file; harness: every run needs it
    kind: Literal["task", "derived", "harness"]
    what: str                          # one line: what is read from the phone
    fix: str                           # one line: how to make it hold


_ALL = [
    Requirement("calendar_account", "task",
                "the calendar provider has a calendar the shell may write to (an account's calendar)",
                "add an account with a calendar (Settings > Passwords & accounts), or a local calendar"),
    Requirement("sim_sms", "task",
                "a SIM is ready on a network (gsm.sim.state READY, an operator): texts can be sent",
                "insert an active SIM with SMS; note no check can tell whether the carrier delivers "
                "to the made-up 555-01xx numbers the tasks text (run one task and look at its outcome)"),
    Requirement("sim_call", "task",
                "a SIM is ready on a network and the telephony service answers: calls can be placed",
                "insert an active SIM with voice service"),
    Requirement("usb_adb", "task",
                "adb does not reach the phone over its own Wi-Fi (a task turns Wi-Fi off)",
                "connect the phone by USB (a serial without host:port), not by wireless debugging"),
    Requirement("no_contact_sync", "task",
                "no account syncs contacts (the provider holds only what setup writes): dumpsys content "
                "shows no account with com.android.contacts syncable and enabled while auto-sync is on",
                "turn Contacts off in each account's sync (Settings > Passwords & accounts > ACCOUNT > "
                "Account sync), or turn off Automatically sync app data, or remove the account"),
    Requirement("apps_installed", "derived",
                "every app the tasks open is installed (pm list packages; aliases through the phone profile)",
                "install the missing apps (Markor: net.gsantner.markor, from F-Droid or Google Play), or "
                "give the phone profile the package this phone uses (apps: {alias: package})"),
    Requirement("screen_unlocked", "harness",
                "the screen is on and no keyguard is showing",
                "unlock the phone; set Screen lock to None (Settings > Security)"),
    Requirement("stay_awake", "harness",
                "the screen stays on while charging (global stay_on_while_plugged_in)",
                "adb shell settings put global stay_on_while_plugged_in 7 "
                "(or Developer options > Stay awake)"),
    Requirement("animations_off", "harness",
                "window, transition and animator scales are 0 (screens settle at once)",
                "adb shell settings put global window_animation_scale 0; the same for "
                "transition_animation_scale and animator_duration_scale"),
    Requirement("u2_server", "harness",
                "the uiautomator2 server answers (device info over JSON-RPC)",
                "python -m uiautomator2 init; check that no other tool holds the accessibility service"),
    Requirement("dump_fast", "harness",
                "the median of 5 hierarchy dumps is under 2 s (every step dumps once)",
                "close heavy apps, reboot; a phone this slow makes every step slow"),
    Requirement("input_method", "harness",
                "an input method is set and enabled (the on-screen keyboard text fields open)",
                "adb shell ime list -s; adb shell ime set <one of them>"),
    Requirement("screenshot_visible", "harness",
                "a screenshot of the home screen is not all black (no FLAG_SECURE overlay)",
                "close apps that block capture (banking apps, DRM video); some work profiles block it"),
]
REQUIREMENTS: dict[str, Requirement] = {r.name: r for r in _ALL}
TASK_REQUIREMENTS: tuple[str, ...] = tuple(r.name for r in _ALL if r.kind == "task")
TaskRequirement = Literal["calendar_account", "sim_sms", "sim_call", "usb_adb", "no_contact_sync"]
assert set(TaskRequirement.__args__) == set(TASK_REQUIREMENTS)  # type: ignore[attr-defined]
# What read_phone_facts reads from a phone (the others are the harness's, read by `phone check` only)
PHONE_FACT_REQUIREMENTS: tuple[str, ...] = tuple(r.name for r in _ALL if r.kind != "harness")

APP_PREFIX = "app:"
# The harness requirement a vision build's episodes have (docs/builds.md "Vision builds"): a run
# reads it from each phone when one of its builds sees the screen, and skips, not fails, those
# episodes on a phone whose screenshots are black (runs/requirements.py).
SCREENSHOTS = "screenshot_visible"


def app_requirement(package: str) -> str:
    """The derived requirement `apps_installed` for one package: `app:net.gsantner.markor`."""
    return APP_PREFIX + package

DUMP_MEDIAN_LIMIT_S = 2.0


# ---------------------------------------------------------------------------------------------
# Facts a task may name

@dataclass(frozen=True)
class PhoneFacts:
    """What was read from one phone: each requirement met or not (with what was seen), and
    the values `{phone.*}` placeholders take."""
    serial: str
    met: dict[str, bool] = field(default_factory=dict)
    seen: dict[str, str] = field(default_factory=dict)
    calendar_id: int | None = None
    timezone: str = "UTC"
    packages: frozenset[str] | None = None   # installed (`pm list packages`); None: not read

    def missing(self, requires: list[str] | tuple[str, ...]) -> list[str]:
        """The requirements of `requires` this phone does not meet: declared names, and
        `app:PACKAGE` for a package it lacks (facts read without the package list, e.g.
        made in a test, take every package as installed)."""
        return [r for r in requires if not self._has(r)]

    def _has(self, requirement: str) -> bool:
        if requirement.startswith(APP_PREFIX):
            return self.packages is None or requirement[len(APP_PREFIX):] in self.packages
        return self.met.get(requirement, False)

    def to_json(self) -> dict[str, object]:
        return {"serial": self.serial, "met": dict(self.met), "seen": dict(self.seen),
                "calendar_id": self.calendar_id, "timezone": self.timezone}


PHONE_PLACEHOLDER = re.compile(r"\{phone\.(calendar_id|timezone|time:([0-9T:-]+))\}")
_ANY_PHONE = re.compile(r"\{phone\.[^}]*\}")


class UnboundPhoneFact(ValueError):
    """A `{phone.*}` placeholder met a phone that lacks the fact (or a bad one)."""


def local_epoch_ms(when: str, zone: str) -> int:
    """`2026-12-15T10:00` as wall-clock time in `zone`, in epoch milliseconds (what the
    calendar provider stores for an event the phone shows at that time)."""
    try:
        naive = dt.datetime.fromisoformat(when)
    except ValueError:
        raise UnboundPhoneFact(f"{{phone.time:{when}}}: not a time like 2026-12-15T10:00") from None
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise UnboundPhoneFact(f"the phone's time zone {zone!r} is unknown to this machine") from None
    return int(naive.replace(tzinfo=tz).timestamp() * 1000)


def substitute_phone(text: str, facts: PhoneFacts) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) == "calendar_id":
            if facts.calendar_id is None:
                raise UnboundPhoneFact(f"{facts.serial}: {{phone.calendar_id}}: the phone has no writable "
                                       "calendar (requirement calendar_account)")
            return str(facts.calendar_id)
        if m.group(1) == "timezone":
            return facts.timezone
        return str(local_epoch_ms(m.group(2), facts.timezone))
    out = PHONE_PLACEHOLDER.sub(one, text)
    bad = _ANY_PHONE.search(out)
    if bad:
        raise UnboundPhoneFact(f"unknown placeholder {bad.group(0)} (known: {{phone.calendar_id}}, "
                               "{phone.timezone}, {phone.time:YYYY-MM-DDTHH:MM})")
    return out


def phone_placeholders(text: str) -> list[str]:
    return _ANY_PHONE.findall(text)


def unknown_phone_placeholders(text: str) -> list[str]:
    return [p for p in phone_placeholders(text) if not PHONE_PLACEHOLDER.fullmatch(p)]
