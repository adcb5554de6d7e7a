"""Device state: the one source of truth that screens draw and shell commands read and write.

Everything a check can observe lives in the settings tables, stored exactly as Android stores
it (strings); the helpers apply Android's side effects (airplane mode vs. wifi_on/bluetooth_on,
Battery Saver vs. charging) so UI and shell go through the same code.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from .calendar_provider import CalendarStore
from .phone_clock import PhoneClock, clock_text
from .telephony import Telephony, same_number

# Values a freshly set-up Pixel on Android 14 reports (Wi-Fi and Bluetooth off so tasks start
# from a known state; adaptive brightness on as shipped).
DEFAULT_GLOBAL = {
    "airplane_mode_on": "0",
    "wifi_on": "0",
    "bluetooth_on": "0",
    "zen_mode": "0",
    "low_power": "0",
    "mobile_data": "1",
    "adb_enabled": "1",
    "device_provisioned": "1",
    "stay_on_while_plugged_in": "7",   # set up for testing (docs/virtual-phone.md): it never sleeps
    "development_settings_enabled": "1",
    # it draws no animations; a real phone set up for agent-host has these at 0 too
    "window_animation_scale": "0",
    "transition_animation_scale": "0",
    "animator_duration_scale": "0",
}
DEFAULT_SYSTEM = {
    "screen_brightness": "102",
    "screen_brightness_mode": "1",
    "screen_off_timeout": "30000",
    "accelerometer_rotation": "0",
    "user_rotation": "0",
    "font_scale": "1.0",
}
DEFAULT_SECURE = {
    "ui_night_mode": "1",
    "location_mode": "3",
    "default_input_method": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
    "enabled_input_methods": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
    "android_id": "5c1f0e3a9b7d2f41",
    "low_power_warning_acknowledged": "0",
}

TIMEOUTS_MS = (15000, 30000, 60000, 120000, 300000, 600000, 1800000)
TIMEOUT_LABELS = ("15 seconds", "30 seconds", "1 minute", "2 minutes", "5 minutes", "10 minutes", "30 minutes")

# SettingsLib BrightnessUtils: the slider is HLG-gamma, the setting linear 1..255.
_R, _A, _B, _C = 0.5, 0.17883277, 0.28466892, 0.55991073
BRIGHTNESS_MIN, BRIGHTNESS_MAX = 1, 255


def brightness_to_fraction(value: int) -> float:
    ratio = (value - BRIGHTNESS_MIN) / (BRIGHTNESS_MAX - BRIGHTNESS_MIN) * 12.0
    g = math.sqrt(ratio) * _R if ratio <= 1.0 else _A * math.log(ratio - _B) + _C
    return min(1.0, max(0.0, g))


def fraction_to_brightness(frac: float) -> int:
    frac = min(1.0, max(0.0, frac))
    ratio = (frac / _R) ** 2 if frac <= _R else math.exp((frac - _C) / _A) + _B
    return int(round(BRIGHTNESS_MIN + ratio / 12.0 * (BRIGHTNESS_MAX - BRIGHTNESS_MIN)))


@dataclass
class Alarm:
    id: int
    hour: int  # 0-23
    minute: int
    enabled: bool = True

    def label(self, h24: bool = False) -> str:
        """The alarm's time as the Clock app lists it (UI only: no shell command prints it)."""
        return clock_text(self.hour, self.minute, h24)


@dataclass
class RawContact:
    id: int
    account_type: str | None = None
    account_name: str | None = None


@dataclass
class DataRow:
    id: int
    raw_contact_id: int
    mimetype: str
    data1: str | None = None
    data2: str | None = None
    data3: str | None = None


MIME_NAME = "vnd.android.cursor.item/name"
MIME_PHONE = "vnd.android.cursor.item/phone_v2"

CONTACTS_AUTHORITY = "com.android.contacts"
CALENDAR_AUTHORITY = "com.android.calendar"
GOOGLE = "com.google"
ACCOUNT_NAME = "vphone.user@gmail.com"     # the account the default calendar belongs to
# What a contacts sync brings into the provider for an account that syncs contacts (the
# server's copy of the account's address book).
SYNCED_CONTACTS = (("Robin Synced", "6505550190"), ("Sam Cloud", "6505550191"))


@dataclass
class SyncAccount:
    """An account on the phone (AccountManager) and its sync switches (Settings > Passwords &
    accounts > ACCOUNT > Account sync): authority -> sync on. `contacts` is what its contacts
    sync writes into the provider, as raw contacts of the account."""
    name: str
    type: str = GOOGLE
    sync: dict[str, bool] = field(default_factory=lambda: {CALENDAR_AUTHORITY: True, CONTACTS_AUTHORITY: False})
    contacts: tuple[tuple[str, str], ...] = SYNCED_CONTACTS

    def syncs(self, authority: str) -> bool:
        return self.sync.get(authority, False)


@dataclass
class DeviceState:
    tables: dict[str, dict[str, str]] = field(
        default_factory=lambda: {
            "global": dict(DEFAULT_GLOBAL),
            "system": dict(DEFAULT_SYSTEM),
            "secure": dict(DEFAULT_SECURE),
        }
    )
    battery_level: int = 85
    # A phone on wireless debugging: not powered, so Battery Saver can be turned on.
    powered_default: bool = False
    powered_override: bool | None = None  # `dumpsys battery unplug|set ...` until `reset`
    alarms: list[Alarm] = field(default_factory=list)
    clock_snooze_min: int = 10  # Clock's Settings > Snooze length (its own preferences: no shell reads it)
    next_alarm_id: int = 1
    raw_contacts: list[RawContact] = field(default_factory=list)
    data_rows: list[DataRow] = field(default_factory=list)
    next_raw_id: int = 1
    next_data_id: int = 1
    clipboard: str = ""
    calendar: CalendarStore = field(default_factory=CalendarStore)
    telephony: Telephony = field(default_factory=Telephony)
    # AppOps modes set with `appops set PKG OP MODE`; unset ops have Android's default mode.
    appops: dict[tuple[str, str], str] = field(default_factory=dict)
    clock: PhoneClock = field(default_factory=PhoneClock)   # the phone's one clock (phone_clock.py)
    # The Google account the default calendar belongs to: its calendar syncs, its contacts do
    # not (a phone set up for agent-host; `phone start --contact-sync` turns them on).
    accounts: list[SyncAccount] = field(default_factory=lambda: [SyncAccount(ACCOUNT_NAME)])
    auto_sync: bool = True   # Settings > Passwords & accounts > Automatically sync app data

    def __post_init__(self) -> None:
        self.telephony.clock = self.clock

    # --- settings tables ------------------------------------------------------------------

    def get(self, table: str, key: str) -> str | None:
        return self.tables[table].get(key)

    def put(self, table: str, key: str, value: str) -> None:
        self.tables[table][key] = value

    def delete(self, table: str, key: str) -> bool:
        return self.tables[table].pop(key, None) is not None

    def _int(self, table: str, key: str, default: int = 0) -> int:
        try:
            return int(self.tables[table].get(key, default))
        except ValueError:
            return default

    # --- radios (WifiSettingsStore / BluetoothManagerService semantics) -----------------

    @property
    def airplane(self) -> bool:
        return self._int("global", "airplane_mode_on") == 1

    @property
    def wifi(self) -> bool:
        return self._int("global", "wifi_on") in (1, 2)

    @property
    def bluetooth(self) -> bool:
        return self._int("global", "bluetooth_on") == 1

    def set_wifi(self, on: bool) -> None:
        if on:
            self.put("global", "wifi_on", "2" if self.airplane else "1")
        else:
            self.put("global", "wifi_on", "0")

    def set_bluetooth(self, on: bool) -> None:
        self.put("global", "bluetooth_on", "1" if on else "0")

    def set_airplane(self, on: bool) -> None:
        """What ConnectivityService's broadcast makes Wi-Fi and Bluetooth do."""
        if on == self.airplane:
            return
        self.put("global", "airplane_mode_on", "1" if on else "0")
        wifi = self._int("global", "wifi_on")
        bt = self._int("global", "bluetooth_on")
        if on:
            if wifi in (1, 2):
                self.put("global", "wifi_on", "3")
            if bt == 1:
                self.put("global", "bluetooth_on", "2")
        else:
            if wifi in (2, 3):
                self.put("global", "wifi_on", "1")
            if bt == 2:
                self.put("global", "bluetooth_on", "1")

    # --- other states ---------------------------------------------------------------------

    @property
    def dark(self) -> bool:
        return self._int("secure", "ui_night_mode", 1) == 2

    def set_dark(self, on: bool) -> None:
        self.put("secure", "ui_night_mode", "2" if on else "1")

    @property
    def font_scale(self) -> float:
        """Settings > Display > Font size (`font_scale`, 1.0 unless set; nonsense reads as 1.0)."""
        try:
            f = float(self.tables["system"].get("font_scale", "1.0"))
        except ValueError:
            return 1.0
        return f if 0.1 <= f <= 4.0 else 1.0

    @property
    def density(self) -> int:
        """The display density: `wm density N` stores N in secure display_density_forced
        (WindowManagerService does; `wm density reset` empties it), else the physical 420."""
        forced = self.tables["secure"].get("display_density_forced", "")
        return int(forced) if forced.isdigit() and int(forced) > 0 else 420

    @property
    def time_24h(self) -> bool:
        """Settings > System > Date & time > Use 24-hour format (`time_12_24`; absent: the
        locale's, 12-hour for en-US). Every time on screen follows it (phone_clock.clock_text)."""
        return self.get("system", "time_12_24") == "24"

    @property
    def zen_mode(self) -> int:
        return self._int("global", "zen_mode")

    @property
    def location(self) -> bool:
        return self._int("secure", "location_mode", 3) != 0

    def set_location(self, on: bool) -> None:
        self.put("secure", "location_mode", "3" if on else "0")

    @property
    def powered(self) -> bool:
        return self.powered_default if self.powered_override is None else self.powered_override

    @property
    def battery_saver(self) -> bool:
        return self._int("global", "low_power") == 1

    def set_battery_saver(self, on: bool) -> bool:
        """BatterySaverStateMachine refuses to turn on while the phone is powered."""
        if on and self.powered:
            return False
        self.put("global", "low_power", "1" if on else "0")
        return True

    def set_powered(self, powered: bool | None) -> None:
        self.powered_override = powered
        if self.powered and self.battery_saver:
            self.put("global", "low_power", "0")

    @property
    def brightness(self) -> int:
        return self._int("system", "screen_brightness", 102)

    @property
    def brightness_percent(self) -> int:
        return int(round(brightness_to_fraction(self.brightness) * 100))

    @property
    def adaptive_brightness(self) -> bool:
        return self._int("system", "screen_brightness_mode") == 1

    @property
    def timeout_ms(self) -> int:
        return self._int("system", "screen_off_timeout", 30000)

    @property
    def auto_rotate(self) -> bool:
        return self._int("system", "accelerometer_rotation") == 1

    # --- alarms ---------------------------------------------------------------------------

    def add_alarm(self, hour: int, minute: int) -> Alarm:
        a = Alarm(self.next_alarm_id, hour, minute, True)
        self.next_alarm_id += 1
        self.alarms.append(a)
        self.alarms.sort(key=lambda x: (x.hour, x.minute, x.id))
        self.update_next_alarm()
        return a

    def delete_alarm(self, alarm_id: int) -> None:
        self.alarms = [a for a in self.alarms if a.id != alarm_id]
        self.update_next_alarm()

    def clear_alarms(self) -> None:
        self.alarms.clear()
        self.update_next_alarm()

    def next_alarm_ms(self, now: float | None = None) -> int | None:
        """Epoch ms of the soonest enabled alarm; the device clock is UTC."""
        now = self.clock.now() if now is None else now
        day = int(now // 86400) * 86400
        best: int | None = None
        for a in self.alarms:
            if not a.enabled:
                continue
            t = day + a.hour * 3600 + a.minute * 60
            if t <= now:
                t += 86400
            if best is None or t < best:
                best = t
        return None if best is None else best * 1000

    def update_next_alarm(self) -> None:
        """AlarmManagerService keeps the deprecated next_alarm_formatted ("Tue 7:30 AM") current."""
        ms = self.next_alarm_ms()
        if ms is None:
            self.put("system", "next_alarm_formatted", "")
            return
        t = time.gmtime(ms / 1000)
        h = t.tm_hour % 12 or 12
        self.put("system", "next_alarm_formatted",
                 f"{time.strftime('%a', t)} {h}:{t.tm_min:02d} {'AM' if t.tm_hour < 12 else 'PM'}")

    # --- contacts provider ----------------------------------------------------------------

    def insert_raw_contact(self, account_type: str | None = None, account_name: str | None = None) -> int:
        rid = self.next_raw_id
        self.next_raw_id += 1
        self.raw_contacts.append(RawContact(rid, account_type, account_name))
        return rid

    def insert_data(self, raw_contact_id: int, mimetype: str, data1: str | None,
                    data2: str | None = None, data3: str | None = None) -> int:
        did = self.next_data_id
        self.next_data_id += 1
        self.data_rows.append(DataRow(did, raw_contact_id, mimetype, data1, data2, data3))
        return did

    def add_contact(self, first: str, last: str, phone: str) -> int:
        rid = self.insert_raw_contact()
        display = " ".join(p for p in (first.strip(), last.strip()) if p)
        if display:
            self.insert_data(rid, MIME_NAME, display, first.strip() or None, last.strip() or None)
        if phone.strip():
            self.insert_data(rid, MIME_PHONE, phone.strip(), "2")
        return rid

    def delete_raw_contact(self, rid: int) -> int:
        before = len(self.raw_contacts)
        self.raw_contacts = [r for r in self.raw_contacts if r.id != rid]
        self.data_rows = [d for d in self.data_rows if d.raw_contact_id != rid]
        return before - len(self.raw_contacts)

    def display_name(self, rid: int) -> str | None:
        names = [d.data1 for d in self.data_rows if d.raw_contact_id == rid and d.mimetype == MIME_NAME]
        if names:
            return names[0]
        phones = [d.data1 for d in self.data_rows if d.raw_contact_id == rid and d.mimetype == MIME_PHONE]
        return phones[0] if phones else None

    def clear_contacts(self) -> None:
        """A new contacts2.db: no rows, and ids start at 1 again (AUTOINCREMENT state is in the file)."""
        self.raw_contacts.clear()
        self.data_rows.clear()
        self.next_raw_id = self.next_data_id = 1

    def contact_for_number(self, number: str) -> int | None:
        """The raw contact whose phone number is `number` (PhoneLookup), if any."""
        for d in self.data_rows:
            if d.mimetype == MIME_PHONE and d.data1 and same_number(d.data1, number):
                return d.raw_contact_id
        return None

    def name_for_number(self, number: str) -> str | None:
        rid = self.contact_for_number(number)
        return None if rid is None else self.display_name(rid)

    def phones(self, raw_id: int) -> list[str]:
        return [d.data1 or "" for d in self.data_rows if d.raw_contact_id == raw_id and d.mimetype == MIME_PHONE]

    def clear_contacts_provider(self) -> None:
        """`pm clear com.android.providers.contacts`: contacts2.db and calllog.db go together.
        An account that syncs contacts fills the new database again at once (on a phone the
        sync adapter does so within seconds of the provider's restart), taking the first ids."""
        self.clear_contacts()
        self.telephony.clear_calls()
        self.sync_contacts()

    def sync_contacts(self) -> None:
        """Every account that syncs contacts writes its contacts into the provider (those not
        there yet), as raw contacts of that account."""
        if not self.auto_sync:
            return
        for acc in self.accounts:
            if not acc.syncs(CONTACTS_AUTHORITY):
                continue
            have = {self.display_name(r.id) for r in self.raw_contacts
                    if (r.account_type, r.account_name) == (acc.type, acc.name)}
            for name, number in acc.contacts:
                if name in have:
                    continue
                rid = self.insert_raw_contact(acc.type, acc.name)
                self.insert_data(rid, MIME_NAME, name, name.split(" ")[0], " ".join(name.split(" ")[1:]) or None)
                self.insert_data(rid, MIME_PHONE, number, "2")

    def turn_on_contact_sync(self) -> SyncAccount:
        """The phone's Google account (one is added if there is none) syncs contacts, and has."""
        acc = next((a for a in self.accounts if a.type == GOOGLE), None)
        if acc is None:
            acc = SyncAccount(ACCOUNT_NAME, sync={})
            self.accounts.append(acc)
        acc.sync[CONTACTS_AUTHORITY] = True
        self.sync_contacts()
        return acc

    def clear_telephony_provider(self) -> None:
        """`pm clear com.android.providers.telephony`: mmssms.db (messages and threads)."""
        self.telephony.clear_sms()

    def appop_allowed(self, pkg: str, op: str, default: str) -> bool:
        return self.appops.get((pkg, op), default) == "allow"
