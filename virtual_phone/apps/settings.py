"""Settings (com.android.settings): the pages tasks need, with Android 14 Pixel wording."""

from __future__ import annotations

import random
from collections.abc import Callable

from ..core import App, AppHost, Intent, IntentHandler, Screen
from ..hierarchy import Callback, Node, SCREEN_W
from ..state import TIMEOUT_LABELS, TIMEOUTS_MS, fraction_to_brightness
from .base import (
    FL, IMAGE_BUTTON, LL, NAV_TOP, STATUS_H, SCROLL_VIEW, TV, VIEW_GROUP, ButtonRow, Category, Item,
    MainSwitch, Note, Pref, RadioPref, Scroll, SeekPref, confirm, lay_out_list, settings_page,
    window_frame,
)


PKG = "com.android.settings"
S = PKG + ":id/"


class SettingsPage(Screen):
    pkg = PKG
    activity = "com.android.settings.SubSettings"
    name = ""

    def __init__(self) -> None:
        super().__init__()
        self.scroll = Scroll()

    @property
    def title(self) -> str:
        return self.name

    def items(self, w: AppHost) -> list[Item]:
        raise NotImplementedError

    def build(self, w: AppHost) -> Node:
        return settings_page(w, self, self.name, self.items(w), self.scroll)


def _open(w: AppHost, cls: type[Screen]) -> Callback:
    return lambda: w.open(cls())


# Settings' suggestion cards (`cmd vphone suggestions N SEED`): what Pixel's Settings shows
# above its list until each is done or dismissed. Tapping one opens an inert page: none changes
# any state a task reads.
SUGGESTIONS = (
    ("Finish setting up your Pixel", "Transfer apps and data, and more"),
    ("Set up Fingerprint Unlock", "Unlock your phone with your fingerprint"),
    ("Add an email account", "Get your mail on this phone"),
    ("Back up your phone", "Keep photos, contacts and settings safe"),
    ("Review your privacy settings", "Choose what apps can use"),
    ("Set up Digital Wellbeing", "See how you spend time on your phone"),
)
SUGGESTIONS_MAX = 3


def suggestions(count: int, seed: int) -> list[tuple[str, str]]:
    """The `count` suggestion cards seed `seed` shows, in the order shown."""
    return random.Random(seed).sample(SUGGESTIONS, min(count, SUGGESTIONS_MAX))


class SettingsHome(Screen):
    pkg = PKG
    activity = "com.android.settings.Settings"

    def __init__(self) -> None:
        super().__init__()
        self.scroll = Scroll()

    def rows(self, w: AppHost) -> list[tuple[str, str, Callback | None]]:
        st = w.state
        loc = "On - 3 apps have access to location" if st.location else "Off"
        bat = f"{st.battery_level}%" + (" - Battery Saver on" if st.battery_saver else "")
        return [
            ("Network & internet", "Mobile, Wi-Fi, hotspot", _open(w, NetworkInternet)),
            ("Connected devices", "Bluetooth, pairing", _open(w, ConnectedDevices)),
            ("Apps", "Assistant, recent apps, default apps", _generic(w, "Apps")),
            ("Notifications", "Notification history, conversations", _generic(w, "Notifications")),
            ("Battery", bat, _open(w, BatteryPage)),
            ("Storage", "52% used - 61.44 GB free", _generic(w, "Storage")),
            ("Sound & vibration", "Volume, haptics, Do Not Disturb", _open(w, SoundVibration)),
            ("Display", "Dark theme, font size, brightness", _open(w, DisplayPage)),
            ("Wallpaper & style", "Colors, themed icons, app grid", _generic(w, "Wallpaper & style")),
            ("Accessibility", "Display, interaction, audio", _generic(w, "Accessibility")),
            ("Security & privacy", "App security, device lock, permissions", _generic(w, "Security & privacy")),
            ("Location", loc, _open(w, LocationPage)),
            ("Safety & emergency", "Emergency SOS, medical info, alerts", _generic(w, "Safety & emergency")),
            ("Passwords & accounts", "Saved passwords, autofill, synced accounts",
             _generic(w, "Passwords & accounts")),
            ("Digital Wellbeing & parental controls", "Screen time, app timers, bedtime schedules",
             _generic(w, "Digital Wellbeing & parental controls")),
            ("Google", "Services & preferences", _generic(w, "Google")),
            ("System", "Languages, gestures, time, backup", _generic(w, "System")),
            ("About phone", w.model, _open(w, AboutPhone)),
        ]

    def build(self, w: AppHost) -> Node:
        cards: list[Item] = [Pref(title=t, summary=s, on_click=_generic(w, t), icon=True)
                             for t, s in suggestions(*w.suggestions)]
        items: list[Item] = [*cards, *(Pref(title=t, summary=s, on_click=c, icon=True) for t, s, c in self.rows(w))]
        top = 353
        lst = lay_out_list(items, top, NAV_TOP, self.scroll)
        lst.scrollable, lst.on_scroll = False, None  # the real home scrolls its outer ScrollView
        can = self.scroll.content_h > self.scroll.viewport_h
        search = Node(LL, (0, STATUS_H, SCREEN_W, top), rid=S + "app_bar", children=[
            Node("androidx.cardview.widget.CardView", (42, 174, 1038, 311), rid=S + "search_bar", children=[
                Node(VIEW_GROUP, (42, 174, 1038, 311), rid=S + "search_action_bar", clickable=True, focusable=True,
                     children=[Node(IMAGE_BUTTON, (53, 174, 200, 311), focusable=True),
                               Node(TV, (200, 207, 553, 278), text="Search settings",
                                    rid=S + "search_action_bar_title")])])])
        body = Node(SCROLL_VIEW, (0, top, SCREEN_W, NAV_TOP), rid=S + "main_content_scrollable_container",
                    focusable=True, scrollable=can, on_scroll=self.scroll.by if can else None, children=[
                        Node(LL, (0, top, SCREEN_W, NAV_TOP), rid=S + "homepage_container", children=[
                            Node(FL, (0, top, SCREEN_W, NAV_TOP), rid=S + "main_content", children=[
                                Node(FL, (0, top, SCREEN_W, NAV_TOP), rid="android:id/list_container",
                                     children=[lst])])])])
        return window_frame([Node(SCROLL_VIEW, (0, STATUS_H, SCREEN_W, NAV_TOP), rid=S + "settings_homepage_container",
                                  children=[search, body])])


def _generic(w: AppHost, title: str) -> Callback:
    return lambda: w.open(GenericPage(title))


class GenericPage(SettingsPage):
    """Pages no task needs: a title and a few inert rows, so navigation looks plausible."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def items(self, w: AppHost) -> list[Item]:
        return [Pref(title="Advanced", summary=f"More {self.name.lower()} options", on_click=lambda: None)]


class AboutPhone(SettingsPage):
    name = "About phone"

    def items(self, w: AppHost) -> list[Item]:
        p = w.props()
        noop = lambda: None  # noqa: E731
        return [Pref(title="Device name", summary=w.model, on_click=noop),
                Pref(title="Phone number (sim slot 1)", summary="Unknown", on_click=noop),
                Pref(title="Model", summary=w.model, on_click=noop),
                Pref(title="Android version", summary=p["ro.build.version.release"], on_click=noop),
                Pref(title="Build number", summary=p["ro.build.id"], on_click=noop)]


class NetworkInternet(SettingsPage):
    name = "Network & internet"

    def items(self, w: AppHost) -> list[Item]:
        st = w.state
        internet = "AndroidWifi" if st.wifi else ("Airplane mode" if st.airplane else "Off")
        noop = lambda: None  # noqa: E731
        return [
            Pref(title="Internet", summary=internet, icon=True, on_click=_open(w, InternetPage)),
            Pref(title="Calls & SMS", summary="T-Mobile", icon=True, on_click=noop),
            Pref(title="SIMs", summary="T-Mobile", icon=True, on_click=noop),
            Pref(title="Airplane mode", icon=True, switch=st.airplane, height=231,
                 on_click=lambda: w.state.set_airplane(not w.state.airplane)),
            Pref(title="Hotspot & tethering", summary="Off", icon=True, on_click=noop),
            Pref(title="Data Saver", summary="Off", icon=True, on_click=noop),
            Pref(title="VPN", summary="None", icon=True, on_click=noop),
            Pref(title="Private DNS", summary="Automatic", icon=True, on_click=noop),
        ]


class InternetPage(SettingsPage):
    name = "Internet"

    def items(self, w: AppHost) -> list[Item]:
        st = w.state
        noop = lambda: None  # noqa: E731
        rows: list[Item] = [Pref(title="Wi-Fi", switch=st.wifi, on_click=lambda: w.state.set_wifi(not w.state.wifi))]
        if st.wifi:
            rows += [Pref(title="AndroidWifi", summary="Connected", icon=True, on_click=noop),
                     Pref(title="VirtualNet-5G", summary="Saved", icon=True, on_click=noop),
                     Pref(title="Add network", icon=True, on_click=noop)]
        else:
            rows += [Note(text="To see available networks, turn Wi-Fi on")]
        rows += [Pref(title="Network preferences", summary="Wi-Fi turns back on automatically", on_click=noop),
                 Pref(title="Saved networks", summary="2 networks", on_click=noop),
                 Pref(title="Non-carrier data usage", summary="0 B used", on_click=noop)]
        return rows


class ConnectedDevices(SettingsPage):
    name = "Connected devices"

    def items(self, w: AppHost) -> list[Item]:
        rows: list[Item] = [Pref(title="Pair new device", icon=True, on_click=_open(w, PairNewDevice)),
                            Category(title="Other devices"),
                            Pref(title="Connection preferences", summary="Bluetooth, Android Auto", icon=True,
                                 on_click=_open(w, ConnectionPreferences))]
        if w.state.bluetooth:
            rows.append(Note(text=f"Visible as \u201c{w.model}\u201d to other devices"))
        return rows


class ConnectionPreferences(SettingsPage):
    name = "Connection preferences"

    def items(self, w: AppHost) -> list[Item]:
        noop = lambda: None  # noqa: E731
        return [Pref(title="Bluetooth", summary="On" if w.state.bluetooth else "Off", icon=True,
                     on_click=_open(w, BluetoothPage)),
                Pref(title="Cast", summary="Not connected", icon=True, on_click=noop),
                Pref(title="Printing", summary="1 print service on", icon=True, on_click=noop),
                Pref(title="Nearby Share", summary="On", icon=True, on_click=noop),
                Pref(title="Android Auto", summary="Use apps on your car screen", icon=True, on_click=noop)]


class BluetoothPage(SettingsPage):
    name = "Bluetooth"

    def items(self, w: AppHost) -> list[Item]:
        st = w.state
        rows: list[Item] = [MainSwitch(text="Use Bluetooth", checked=st.bluetooth,
                                       on_click=lambda: w.state.set_bluetooth(not w.state.bluetooth))]
        if st.bluetooth:
            noop = lambda: None  # noqa: E731
            rows += [Pref(title="Device name", summary=w.model, on_click=noop),
                     Pref(title="Pair new device", icon=True, on_click=_open(w, PairNewDevice))]
        rows.append(Note(text="When Bluetooth is turned on, your device can communicate with other nearby "
                              "Bluetooth devices.", height=260))
        return rows


class PairNewDevice(SettingsPage):
    name = "Pair new device"

    def items(self, w: AppHost) -> list[Item]:
        return [Pref(title="Device name", summary=w.model, on_click=lambda: None),
                Category(title="Available devices"),
                Note(text="Make sure the device you want to connect to is in pairing mode.", height=200)]


class DisplayPage(SettingsPage):
    name = "Display"

    def items(self, w: AppHost) -> list[Item]:
        st = w.state
        noop = lambda: None  # noqa: E731

        def set_brightness(frac: float) -> None:
            w.state.put("system", "screen_brightness", str(fraction_to_brightness(frac)))

        def toggle(table: str, key: str) -> Callback:
            return lambda: w.state.put(table, key, "0" if w.state.get(table, key) == "1" else "1")

        timeout = _timeout_summary(st.timeout_ms)
        return [
            Category(title="Brightness"),
            SeekPref(title="Brightness level", summary=f"{st.brightness_percent}%",
                     fraction=st.brightness_percent / 100, on_set=set_brightness),
            Pref(title="Adaptive brightness", summary="Optimize brightness for the environment",
                 switch=st.adaptive_brightness, on_click=toggle("system", "screen_brightness_mode")),
            Category(title="Lock display"),
            Pref(title="Lock screen", summary="Show all notification content", on_click=noop),
            Pref(title="Screen timeout", summary=timeout, on_click=_open(w, ScreenTimeoutPage)),
            Category(title="Appearance"),
            Pref(title="Dark theme", summary="Will turn off automatically at sunrise" if st.dark
                 else "Will never turn on automatically", switch=st.dark,
                 on_click=lambda: w.state.set_dark(not w.state.dark)),
            Pref(title="Font size and text", summary="Default", on_click=noop),
            Pref(title="Display size", summary="Default", on_click=noop),
            Category(title="Color"),
            Pref(title="Night Light", summary="Off / Will never turn on automatically", on_click=noop),
            Pref(title="Colors", summary="Adaptive", on_click=noop),
            Category(title="Other display controls"),
            Pref(title="Auto-rotate screen", summary="On" if st.auto_rotate else "Off", switch=st.auto_rotate,
                 on_click=toggle("system", "accelerometer_rotation")),
            Pref(title="Screen resolution", summary="High resolution", on_click=noop),
            Pref(title="Smooth Display", summary="Automatically raises the refresh rate", switch=True,
                 on_click=noop),
        ]


def _timeout_summary(ms: int) -> str:
    if ms in TIMEOUTS_MS:
        return f"After {TIMEOUT_LABELS[TIMEOUTS_MS.index(ms)]} of inactivity"
    return f"After {ms // 1000} seconds of inactivity"


class ScreenTimeoutPage(SettingsPage):
    name = "Screen timeout"

    def items(self, w: AppHost) -> list[Item]:
        cur = w.state.timeout_ms
        def pick(ms: int) -> Callback:
            return lambda: w.state.put("system", "screen_off_timeout", str(ms))
        rows: list[Item] = [RadioPref(title=lbl, checked=cur == ms, on_click=pick(ms))
                            for lbl, ms in zip(TIMEOUT_LABELS, TIMEOUTS_MS)]
        rows.append(Pref(title="Screen attention", summary="Off / Screen will turn off if you aren't looking "
                         "at it", switch=False, on_click=lambda: None))
        return rows


class SoundVibration(SettingsPage):
    name = "Sound & vibration"

    def __init__(self) -> None:
        super().__init__()
        self.volumes = {"Media volume": 0.33, "Call volume": 0.6, "Ring volume": 0.71,
                        "Notification volume": 0.71, "Alarm volume": 0.86}

    def items(self, w: AppHost) -> list[Item]:
        def setter(k: str) -> Callable[[float], None]:
            def f(v: float) -> None:
                self.volumes[k] = min(1.0, max(0.0, v))
            return f
        noop = lambda: None  # noqa: E731
        rows: list[Item] = [SeekPref(title=k, fraction=v, on_set=setter(k), height=239) for k, v in self.volumes.items()]
        rows += [Pref(title="Do Not Disturb", summary="On" if w.state.zen_mode else "Off",
                      on_click=_open(w, DoNotDisturb)),
                 Pref(title="Phone ringtone", summary="Flutey Phone", on_click=noop),
                 Pref(title="Live Caption", summary="Automatically caption speech", on_click=noop),
                 Pref(title="Media", summary="Media player in Quick Settings", on_click=noop),
                 Pref(title="Vibration & haptics", summary="On", on_click=noop)]
        return rows


class DoNotDisturb(SettingsPage):
    name = "Do Not Disturb"

    def items(self, w: AppHost) -> list[Item]:
        on = w.state.zen_mode != 0
        noop = lambda: None  # noqa: E731
        # "Turn on now" uses the page's default (priority only), as Settings does with
        # "Duration for Quick Settings" = "Until you turn off": no duration dialog.
        btn = ButtonRow(text="Turn off now", rid=S + "zen_mode_settings_turn_off_button",
                        on_click=lambda: w.state.put("global", "zen_mode", "0")) if on else ButtonRow(
            text="Turn on now", rid=S + "zen_mode_settings_turn_on_button",
            on_click=lambda: w.state.put("global", "zen_mode", "1"))
        return [
            btn,
            Category(title="What can interrupt Do Not Disturb"),
            Pref(title="People", summary="Some calls and messages can interrupt", on_click=noop),
            Pref(title="Apps", summary="Some apps can interrupt", on_click=noop),
            Pref(title="Alarms & other interruptions", summary="Alarms and media can interrupt", on_click=noop),
            Category(title="General"),
            Pref(title="Schedules", summary="1 schedule can turn on automatically", on_click=noop),
            Pref(title="Duration for Quick Settings", summary="Until you turn off", on_click=noop),
            Pref(title="Display options for hidden notifications", summary="No sound from notifications",
                 on_click=noop),
        ]


class LocationPage(SettingsPage):
    name = "Location"

    def items(self, w: AppHost) -> list[Item]:
        on = w.state.location
        noop = lambda: None  # noqa: E731
        return [MainSwitch(text="Use location", checked=on, on_click=lambda: w.state.set_location(not w.state.location)),
                Category(title="Recent access"),
                Pref(title="Google Maps", summary="2 min. ago", icon=True, enabled=on, on_click=noop),
                Pref(title="App location permissions", summary="3 of 12 apps have access to location",
                     enabled=on, on_click=noop),
                Pref(title="Location services", enabled=on, on_click=noop),
                Note(text="Location may use sources like GPS, Wi-Fi, mobile networks, and sensors to help "
                          "estimate your device's location.", height=260)]


class BatteryPage(SettingsPage):
    name = "Battery"

    def items(self, w: AppHost) -> list[Item]:
        st = w.state
        noop = lambda: None  # noqa: E731
        return [Note(text=f"{st.battery_level}%" + (" - Charging" if st.powered else ""), height=220),
                Pref(title="Battery usage", summary="View usage for past 24 hours", on_click=noop),
                Pref(title="Battery Saver", summary="On" if st.battery_saver else "Off",
                     on_click=_open(w, BatterySaverPage)),
                Pref(title="Adaptive preferences", summary="Adaptive Battery, Adaptive Charging", on_click=noop),
                Pref(title="Battery percentage", summary="Show battery percentage in status bar", switch=False,
                     on_click=noop)]


SAVER_CONFIRM = ("Battery Saver turns on Dark theme and limits or turns off background activity, some visual "
                 "effects, certain features, and some network connections.")


class BatterySaverPage(SettingsPage):
    name = "Battery Saver"

    def items(self, w: AppHost) -> list[Item]:
        st = w.state
        noop = lambda: None  # noqa: E731
        return [MainSwitch(text="Use Battery Saver", checked=st.battery_saver, on_click=lambda: self.toggle(w)),
                Pref(title="Set a schedule", summary="No schedule", on_click=noop),
                Pref(title="Turn off when charged", switch=True, on_click=noop),
                Note(text=SAVER_CONFIRM, height=260)]

    def toggle(self, w: AppHost) -> None:
        st = w.state
        if st.battery_saver:
            st.set_battery_saver(False)
        elif st.get("secure", "low_power_warning_acknowledged") != "1":
            # SettingsLib BatterySaverUtils asks once, the first time Battery Saver is turned on.
            self.confirm_saver(w)
        else:
            st.set_battery_saver(True)

    def confirm_saver(self, w: AppHost) -> None:
        def ok() -> None:
            w.state.put("secure", "low_power_warning_acknowledged", "1")
            w.state.set_battery_saver(True)
            w.close_dialog()

        confirm(w, "Turn on Battery Saver?", SAVER_CONFIRM, "Turn on", ok, pkg="com.android.systemui")


def _show(page: type[Screen] | None) -> IntentHandler:
    def start(w: AppHost, intent: Intent) -> bool:
        w.launch(PKG, fresh=True)
        if page is not None:
            w.open(page())
        return True
    return start


# android.provider.Settings.ACTION_* and the page each opens (None: the home page).
INTENT_PAGES: dict[str, type[Screen] | None] = {
    "android.settings.SETTINGS": None,
    "android.settings.WIFI_SETTINGS": InternetPage,
    "android.settings.WIRELESS_SETTINGS": NetworkInternet,
    "android.settings.AIRPLANE_MODE_SETTINGS": NetworkInternet,
    "android.settings.BLUETOOTH_SETTINGS": BluetoothPage,
    "android.settings.DISPLAY_SETTINGS": DisplayPage,
    "android.settings.SOUND_SETTINGS": SoundVibration,
    "android.settings.ZEN_MODE_SETTINGS": DoNotDisturb,
    "android.settings.LOCATION_SOURCE_SETTINGS": LocationPage,
    "android.settings.BATTERY_SAVER_SETTINGS": BatterySaverPage,
    "android.settings.DEVICE_INFO_SETTINGS": AboutPhone,
}

APP = App(pkg=PKG, label="Settings", activity="com.android.settings.Settings", root=SettingsHome,
          intents={action: _show(page) for action, page in INTENT_PAGES.items()})
