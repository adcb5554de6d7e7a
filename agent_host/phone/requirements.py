"""Reading config/requirements.py's requirements from a phone.

`read_phone_facts` reads what tasks may declare (`requires:`), the packages installed (for the apps
tasks open) and the values `{phone.*}` placeholders take, in one shell batch: a run calls it
once per phone, an episode once per connection (`bind_task`). `check_rows` adds what the
harness itself needs (screen, animation scales, the uiautomator2 server, dump time, input
method, screenshots) for `agent-host phone check`.
"""

from __future__ import annotations

import re
import statistics
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, cast

from agent_host.config.phones import DEFAULT_APPS
from agent_host.config.requirements import (DUMP_MEDIAN_LIMIT_S, PHONE_FACT_REQUIREMENTS, REQUIREMENTS, SCREENSHOTS,
                                           PhoneFacts)
from agent_host.config.tasks import bind_phone

if TYPE_CHECKING:
    from agent_host.phone.device import Phone, ShellResult
    from agent_host.config.tasks import TaskInstance

CAL_ACCESS_CONTRIBUTOR = 500   # CalendarContract.Calendars: the least access level that may add events

_TASK_COMMANDS = {
    "calendars": "content query --uri content://com.android.calendar/calendars "
                 "--projection _id:calendar_access_level:visible:account_type",
    "sim": "getprop gsm.sim.state",
    "operator": "getprop gsm.operator.alpha",
    "timezone": "getprop persist.sys.timezone",
    "telephony": "dumpsys telephony.registry",
    "sync": "dumpsys content",          # ContentService: SyncManager's state per account and authority
    "packages": "pm list packages",
}
CONTACTS_AUTHORITY = "com.android.contacts"


@dataclass(frozen=True)
class Row:
    """One line of `agent-host phone check`."""
    name: str
    kind: str
    met: bool
    seen: str
    what: str
    fix: str

    def to_json(self) -> dict[str, str | bool]:
        return {"name": self.name, "kind": self.kind, "met": self.met, "seen": self.seen,
                "what": self.what, "fix": self.fix}


def _rows(text: str) -> list[dict[str, str]]:
    """`content query` output as dicts (values as printed; NULL kept as the string)."""
    out = []
    for line in text.splitlines():
        m = re.match(r"Row: \d+ (.*)", line)
        if m:
            out.append(dict(re.findall(r"(\w+)=([^,]*)(?:, |$)", m.group(1))))
    return out


def writable_calendar(query_output: str) -> int | None:
    """The lowest _id of a visible calendar the shell may add events to, else None."""
    ids = []
    for r in _rows(query_output):
        level, visible = r.get("calendar_access_level", "NULL"), r.get("visible", "1")
        if not r.get("_id", "").isdigit() or visible == "0":
            continue
        if level.isdigit() and int(level) < CAL_ACCESS_CONTRIBUTOR:
            continue
        ids.append(int(r["_id"]))
    return min(ids) if ids else None


def sim_ready(state: str) -> bool:
    """gsm.sim.state is a comma list, one per slot (dual SIM: `READY,ABSENT`)."""
    return "READY" in [s.strip().upper() for s in state.split(",")]


def adb_over_usb(serial: str) -> bool:
    """True unless adb reaches the phone over the network the phone itself is on: a
    `host:port` serial (other than this machine's loopback, as the virtual phone and an
    emulator's forwarded port are), or an mDNS wireless-debugging name."""
    device = serial.rsplit("/", 1)[-1]          # HOST:PORT/SERIAL: the serial on that server
    if "._adb-tls-connect._tcp" in device or "._adb._tcp" in device:
        return False
    host, sep, port = device.rpartition(":")
    if sep and port.isdigit():
        return host in ("127.0.0.1", "localhost", "::1", "[::1]")
    return True


def contact_sync_accounts(dump: str) -> list[str] | None:
    """The accounts that sync contacts by themselves, from `dumpsys content` (SyncManager's
    dumpSyncState): under "Sync Status", an `Account NAME uUSER TYPE` line per account, then a
    table whose `com.android.contacts` row has the authority's syncable state (0: not
    syncable; -1: not yet initialised, the adapter decides on its first sync) and whether sync
    is enabled for it; nothing syncs by itself for a user whose `Auto sync: uN=false`.
    Each as `TYPE (NAME)`; None when the dump has no sync status (not read)."""
    lines = dump.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Sync Status")
    except StopIteration:
        return None
    auto_line = next((x for x in lines if x.strip().startswith("Auto sync:")), "")
    auto = dict(re.findall(r"\bu(\d+)=(true|false)", auto_line))
    out: list[str] = []
    account: tuple[str, str, str] | None = None
    for line in lines[start + 1:]:
        if line.strip().startswith(("Per Adapter History", "Recent Sync History", "Detailed Statistics")):
            break
        m = re.match(r"\s*Account (.*) u(\d+) (\S+?)(?: \(locked\))?\s*$", line)
        if m:
            account = (m.group(1), m.group(2), m.group(3))
            continue
        m = re.match(r"\s*" + re.escape(CONTACTS_AUTHORITY) + r"\s+(-?\d+)\s+(true|false)(\s|$)", line)
        if m and account is not None and int(m.group(1)) != 0 and m.group(2) == "true" \
                and auto.get(account[1], "true") == "true":
            out.append(f"{account[2]} ({account[0]})")
    return out


def installed_packages(output: str) -> frozenset[str]:
    """`pm list packages` output: one `package:NAME` a line."""
    return frozenset(m.group(1) for m in re.finditer(r"^package:(\S+)", output, re.MULTILINE))


def read_phone_facts(phone: Phone, apps: Mapping[str, str] | None = None, *,
                     screenshots: bool = False) -> PhoneFacts:
    """The task requirements met by `phone` (a phone.device.Phone), the packages it has, and its
    calendar id and time zone; one shell batch. `apps` (name -> package): the apps whose
    absence the `apps_installed` row names (default: every alias of DEFAULT_APPS; a run passes
    the apps of its tasks through its phone profile). `screenshots`: read `screenshot_visible`
    too (a run with a vision build: config/requirements.SCREENSHOTS), one screenshot of home."""
    serial = getattr(phone, "serial", "")   # a stand-in with shell_batch alone serves too (tests' world phone)
    names = list(_TASK_COMMANDS)
    res = dict(zip(names, phone.shell_batch([_TASK_COMMANDS[n] for n in names])))
    cal = writable_calendar(res["calendars"].output) if res["calendars"].ok else None
    sim_state, operator = res["sim"].text.strip(), res["operator"].text.strip()
    sim = sim_ready(sim_state) and bool(operator.strip(", "))
    telephony = res["telephony"].ok and "mCallState=" in res["telephony"].output
    zone = res["timezone"].text.strip() or "UTC"
    syncing = contact_sync_accounts(res["sync"].output) if res["sync"].ok else None
    packages = installed_packages(res["packages"].output) if res["packages"].ok else frozenset()
    wanted = dict(DEFAULT_APPS if apps is None else apps)
    absent = {name: pkg for name, pkg in wanted.items() if pkg not in packages}
    met = {"calendar_account": cal is not None, "sim_sms": sim, "sim_call": sim and telephony,
           "usb_adb": adb_over_usb(serial), "no_contact_sync": syncing == [], "apps_installed": not absent}
    seen = {"calendar_account": f"calendar _id {cal}" if cal is not None else
            (res["calendars"].text.splitlines() or ["no calendars"])[0][:80],
            "sim_sms": f"gsm.sim.state={sim_state or '(none)'}, operator={operator or '(none)'}",
            "sim_call": f"gsm.sim.state={sim_state or '(none)'}, telephony "
                        f"{'answers' if telephony else 'does not answer'}",
            "usb_adb": f"serial {serial}",
            "no_contact_sync": ("no sync status in dumpsys content" if syncing is None else
                                f"contacts sync on: {', '.join(syncing)}" if syncing else
                                "no account syncs contacts"),
            "apps_installed": _apps_seen(res["packages"], wanted, absent)}
    assert set(met) == set(PHONE_FACT_REQUIREMENTS)
    if screenshots:
        met[SCREENSHOTS], seen[SCREENSHOTS] = _screenshot(phone)
    return PhoneFacts(serial=serial, met=met, seen=seen, calendar_id=cal, timezone=zone, packages=packages)


def _apps_seen(listing: ShellResult, wanted: dict[str, str], absent: dict[str, str]) -> str:
    if not listing.ok:
        return "pm list packages failed: " + str(listing.text).strip()[:80]
    if absent:
        return "not installed: " + ", ".join(f"{n} ({p})" if n != p else p for n, p in absent.items())
    return "all installed: " + ", ".join(wanted) if wanted else "no apps asked about"


_BOUND: weakref.WeakKeyDictionary[Phone, PhoneFacts] = weakref.WeakKeyDictionary()


def phone_facts(phone: Phone) -> PhoneFacts:
    """read_phone_facts, once per connected phone object (a reconnect reads again)."""
    try:
        return _BOUND[phone]
    except (KeyError, TypeError):
        facts = read_phone_facts(phone)
        try:
            _BOUND[phone] = facts
        except TypeError:
            pass
        return facts


def bind_task(task: TaskInstance, phone: Phone) -> TaskInstance:
    """The task instance with its `{phone.*}` placeholders filled from this phone's facts:
    call it before running a task's steps or judging it (run_episode does)."""
    if not task.needs_phone_facts:
        return task
    return bind_phone(task, phone_facts(phone))


# ---------------------------------------------------------------------------------------------
# What the harness needs (agent-host phone check)

def _harness(phone: Phone, dumps: int = 5) -> dict[str, tuple[bool, str]]:
    out: dict[str, tuple[bool, str]] = {}
    res = phone.shell_batch(["dumpsys power", "dumpsys window", "settings get global stay_on_while_plugged_in",
                             "settings get global window_animation_scale",
                             "settings get global transition_animation_scale",
                             "settings get global animator_duration_scale",
                             "settings get secure default_input_method",
                             "settings get secure enabled_input_methods"])
    power, window, stay, *rest = res
    scales, (ime, enabled) = [r.text.strip() for r in rest[:3]], [r.text.strip() for r in rest[3:]]
    awake = re.search(r"mWakefulness=(\w+)", power.output)
    locked = re.search(r"(mDreamingLockscreen|mShowingLockscreen|isStatusBarKeyguard|mKeyguardShowing)=true",
                       window.output) or re.search(r"mCurrentFocus=.*(Keyguard|NotificationShade)", window.output)
    wake = awake.group(1) if awake else "unknown"
    out["screen_unlocked"] = (wake == "Awake" and not locked,
                              f"mWakefulness={wake}{', keyguard showing' if locked else ''}")
    stay_v = stay.text.strip()
    out["stay_awake"] = (stay_v.isdigit() and int(stay_v) != 0, f"stay_on_while_plugged_in={stay_v}")

    def zero(v: str) -> bool:
        try:
            return float(v) == 0.0
        except ValueError:
            return False     # "null": never set, Android's default 1.0
    out["animations_off"] = (all(zero(v) for v in scales), "scales " + "/".join(scales))
    try:
        info = phone.u2.info
        out["u2_server"] = (bool(info), f"answers ({info.get('productName', '?')}, sdk {info.get('sdkInt', '?')})")
        u2_ok = True
    except Exception as exc:
        out["u2_server"] = (False, f"{type(exc).__name__}: {exc}"[:120])
        u2_ok = False
    times: list[float] = []
    if u2_ok:
        for _ in range(dumps):
            t0 = time.monotonic()
            try:
                phone.dump()
            except Exception:
                break
            times.append(time.monotonic() - t0)
    med = statistics.median(times) if times else None
    out["dump_fast"] = (med is not None and med < DUMP_MEDIAN_LIMIT_S,
                        f"median {med:.3f} s of {len(times)}" if med is not None else "no dump answered")
    out["input_method"] = (ime not in ("", "null") and ime in enabled.split(":"), ime or "(none)")
    out["screenshot_visible"] = _screenshot(phone) if u2_ok else (False, "no uiautomator2 server")
    return out


def _screenshot(phone: Phone) -> tuple[bool, str]:
    try:
        phone.home()
        img = phone.screenshot().convert("L")
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"[:120]
    lo, hi = cast("tuple[int, int]", img.getextrema())   # one band ("L"): no pair per band
    return hi > 16, f"{img.size[0]}x{img.size[1]}, brightest pixel {hi}"


def check_rows(phone: Phone, apps: Mapping[str, str] | None = None) -> list[Row]:
    """Every requirement (config/requirements.REQUIREMENTS order), read from the phone; `apps`
    (name -> package): the apps `apps_installed` asks about (see read_phone_facts)."""
    facts = read_phone_facts(phone, apps=apps)
    harness = _harness(phone)
    rows = []
    for name, req in REQUIREMENTS.items():
        met, seen = (facts.met[name], facts.seen[name]) if req.kind != "harness" else harness[name]
        rows.append(Row(name, req.kind, bool(met), seen, req.what, req.fix))
    return rows
