"""Virtual phone apps: each Settings state both ways, dialogs, Clock, Contacts, selectors."""

from __future__ import annotations

import pytest

from virtual_phone.fs import VirtualFS
from virtual_phone.world import World
from test_vphone_world import scroll_to, sel, sh, tap_text


@pytest.fixture
def world() -> World:
    return World(VirtualFS())


def open_settings(w: World, *path: str) -> None:
    w.shell("am force-stop com.android.settings")
    w.shell("monkey -p com.android.settings -c android.intent.category.LAUNCHER 1")
    for t in path:
        scroll_to(w, t)
        tap_text(w, t)


def checked(w: World, text: str) -> bool:
    """The switch in the row whose title is `text`."""
    row = w.rpc("objInfo", [sel(text=text)])["visibleBounds"]
    for n in (n for win in w.windows() for n in win.root.walk()):
        if n.cls == "android.widget.Switch" and n.bounds[1] < row["bottom"] + 60 and n.bounds[3] > row["top"] - 60:
            return n.checked
    raise AssertionError(f"no switch next to {text!r}")


def test_bluetooth_switch_and_shell_agree(world: World) -> None:
    open_settings(world, "Connected devices", "Connection preferences", "Bluetooth")
    assert checked(world, "Use Bluetooth") is False
    world.shell("svc bluetooth enable")
    assert checked(world, "Use Bluetooth") is True
    assert world.rpc("exist", [sel(text="Device name")])
    tap_text(world, "Use Bluetooth")
    assert sh(world, "dumpsys bluetooth_manager").splitlines()[1] == "  enabled: false"
    assert sh(world, "settings get global bluetooth_on") == "0\n"


def test_dark_theme_and_auto_rotate_below_the_fold(world: World) -> None:
    open_settings(world, "Display")
    assert not world.rpc("exist", [sel(text="Auto-rotate screen")])
    world.shell("cmd uimode night yes")
    assert checked(world, "Dark theme") is True
    tap_text(world, "Dark theme")
    assert sh(world, "cmd uimode night") == "Night mode: no\n"
    scroll_to(world, "Auto-rotate screen")
    tap_text(world, "Auto-rotate screen")
    assert sh(world, "settings get system accelerometer_rotation") == "1\n"
    world.shell("settings put system accelerometer_rotation 0")
    assert checked(world, "Auto-rotate screen") is False


def test_brightness_slider_drag_to_the_end_is_255(world: World) -> None:
    world.shell("settings put system screen_brightness_mode 0; settings put system screen_brightness 40")
    open_settings(world, "Display")
    bar = world.rpc("objInfo", [sel(resourceId="android:id/seekbar")])["visibleBounds"]
    cy = (bar["top"] + bar["bottom"]) // 2
    assert world.rpc("exist", [sel(text="64%")])  # HLG gamma: 40/255 reads 64 %, 22 reads 50 %
    world.rpc("swipe", [(bar["left"] + bar["right"]) // 2, cy, bar["right"] - 2, cy, 10])
    assert sh(world, "settings get system screen_brightness") == "255\n"
    assert world.rpc("exist", [sel(text="100%")])
    world.shell("input tap 189 " + str(cy))
    assert sh(world, "settings get system screen_brightness") == "1\n"


def test_screen_timeout_choice_list(world: World) -> None:
    open_settings(world, "Display", "Screen timeout")
    radios = world.rpc("objInfoOfAllInstances", [sel(className="android.widget.RadioButton")])
    assert [r["checked"] for r in radios].count(True) == 1
    tap_text(world, "1 minute")
    assert sh(world, "settings get system screen_off_timeout") == "60000\n"
    world.rpc("pressKey", ["back"])
    assert world.rpc("exist", [sel(text="After 1 minute of inactivity")])


def test_dnd_button_and_shell(world: World) -> None:
    open_settings(world, "Sound & vibration", "Do Not Disturb")
    tap_text(world, "Turn on now")
    assert sh(world, "settings get global zen_mode") == "1\n"
    assert world.rpc("exist", [sel(text="Turn off now")])
    world.shell("cmd notification set_dnd off")
    assert world.rpc("exist", [sel(text="Turn on now")])
    world.shell("settings put global zen_mode 2")  # reverted by ZenModeHelper on Android
    assert sh(world, "settings get global zen_mode") == "0\n"
    world.shell("cmd notification set_dnd on")
    assert sh(world, "settings get global zen_mode") == "2\n"
    assert world.rpc("exist", [sel(description="Do Not Disturb")])  # status bar icon


def test_location_switch_and_shell(world: World) -> None:
    open_settings(world, "Location")
    tap_text(world, "Use location")
    assert sh(world, "cmd location is-location-enabled; settings get secure location_mode") == "false\n0\n"
    world.shell("cmd location set-location-enabled true")
    assert checked(world, "Use location") is True


def test_battery_saver_asks_once_and_refuses_while_powered(world: World) -> None:
    open_settings(world, "Battery", "Battery Saver")
    tap_text(world, "Use Battery Saver")
    assert world.rpc("exist", [sel(text="Turn on Battery Saver?")])
    assert sh(world, "settings get global low_power") == "0\n"
    world.rpc("pressKey", ["back"])  # cancels the dialog only
    assert not world.rpc("exist", [sel(text="Turn on Battery Saver?")])
    assert world.rpc("exist", [sel(text="Use Battery Saver")])
    tap_text(world, "Use Battery Saver")
    tap_text(world, "Turn on")
    assert sh(world, "settings get global low_power") == "1\n"
    assert checked(world, "Use Battery Saver") is True
    tap_text(world, "Use Battery Saver")
    assert sh(world, "settings get global low_power") == "0\n"
    tap_text(world, "Use Battery Saver")  # acknowledged: no second dialog
    assert sh(world, "settings get global low_power") == "1\n"
    world.shell("dumpsys battery set usb 1")  # plugging in turns it off, and it cannot come back
    assert sh(world, "settings get global low_power") == "0\n"
    world.shell("cmd power set-mode 1")
    assert sh(world, "settings get global low_power") == "0\n"
    world.shell("dumpsys battery unplug; cmd power set-mode 1")
    assert sh(world, "settings get global low_power") == "1\n"
    assert "(UPDATES STOPPED -- use 'reset' to restart)" in sh(world, "dumpsys battery")


def test_system_dialog_covers_the_screen_until_ok(world: World) -> None:
    open_settings(world, "Display")
    world.show_system_dialog("Battery low", "Battery low. 10% remaining.")
    xml = world.dump()
    assert xml.index('text="Battery low"') > xml.index('text="Dark theme"')
    before = sh(world, "settings get secure ui_night_mode")
    dark = world.rpc("objInfo", [sel(text="Dark theme")])["visibleBounds"]
    world.rpc("click", [(dark["left"] + dark["right"]) // 2, (dark["top"] + dark["bottom"]) // 2])
    assert sh(world, "settings get secure ui_night_mode") == before  # the dialog is modal
    tap_text(world, "OK")
    assert not world.rpc("exist", [sel(text="Battery low")])
    assert world.rpc("exist", [sel(text="Dark theme")])


def test_clock_time_picker_pm_and_cancel(world: World) -> None:
    world.shell("monkey -p com.google.android.deskclock -c android.intent.category.LAUNCHER 1")
    assert world.rpc("exist", [sel(text="No alarms")])
    info = world.rpc("objInfo", [sel(description="Add alarm")])["bounds"]
    world.rpc("click", [(info["left"] + info["right"]) // 2, (info["top"] + info["bottom"]) // 2])
    tap_text(world, "Cancel")
    assert world.state.alarms == []
    world.rpc("click", [(info["left"] + info["right"]) // 2, (info["top"] + info["bottom"]) // 2])
    assert world.rpc("exist", [sel(description="12")]) and not world.rpc("exist", [sel(description="55")])
    for t in ("6", "45", "PM", "OK"):
        tap_text(world, t)
    assert world.rpc("exist", [sel(text="6:45 PM")])
    assert sh(world, "settings get system next_alarm_formatted").endswith(" 6:45 PM\n")
    world.shell("pm clear com.google.android.deskclock")
    assert "user:0" not in sh(world, "dumpsys alarm")
    world.shell("am start -a android.intent.action.SET_ALARM --ei android.intent.extra.alarm.HOUR 7 "
                "--ei android.intent.extra.alarm.MINUTES 30 --ez android.intent.extra.alarm.SKIP_UI true")
    assert " 07:30:00.000 = +" in sh(world, "dumpsys alarm | grep -A 1 'Next alarm clock information'")


def test_contacts_form_typing_discard_dialog_and_delete(world: World) -> None:
    world.shell("monkey -p com.google.android.contacts -c android.intent.category.LAUNCHER 1")
    fab = world.rpc("objInfo", [sel(description="Create contact")])["bounds"]
    world.rpc("click", [(fab["left"] + fab["right"]) // 2, (fab["top"] + fab["bottom"]) // 2])
    tap_text(world, "First name")
    world.shell("input text Ada")
    assert world.rpc("objInfo", [sel(text="Ada")])["focused"] is True
    world.rpc("pressKey", ["back"])
    assert world.rpc("exist", [sel(text="Discard your changes?")])
    tap_text(world, "Keep editing")
    world.rpc("setText", [sel(text="Last name"), "Lovelace"])
    world.rpc("setClipboard", [None, "555-0142"])
    tap_text(world, "Phone")
    world.rpc("pasteClipboard", {})
    tap_text(world, "Save")
    assert world.rpc("exist", [sel(text="555-0142")])
    q = "content query --uri content://com.android.contacts/data/phones --projection display_name:number"
    assert sh(world, q) == "Row: 0 display_name=Ada Lovelace, number=555-0142\n"
    world.shell("content delete --uri content://com.android.contacts/raw_contacts --where \"display_name='Ada Lovelace'\"")
    assert sh(world, q) == "No result found.\n"


def test_selectors(world: World) -> None:
    open_settings(world)
    assert world.rpc("exist", [sel(textContains="internet")])
    assert world.rpc("exist", [sel(textMatches="Net.*net")])
    assert not world.rpc("exist", [sel(textMatches="Net")])  # Java matches(): whole string
    titles = world.rpc("objInfoOfAllInstances", [sel(resourceId="android:id/title")])
    second = world.rpc("objInfo", [sel(resourceId="android:id/title", instance=1)])
    assert second["text"] == titles[1]["text"] == "Connected devices"
    assert world.rpc("count", [sel(clickable=True, className="android.widget.LinearLayout")]) >= 7
    assert world.rpc("exist", [sel(className="android.widget.TextView", index=1, text="Search settings")])
    child = sel(resourceId="com.android.settings:id/recycler_view")
    child["childOrSibling"] = ["child"]
    child["childOrSiblingSelector"] = [sel(text="Display")]
    assert world.rpc("objInfo", [child])["text"] == "Display"
    sib = sel(text="Display")
    sib["childOrSibling"] = ["sibling"]
    sib["childOrSiblingSelector"] = [sel(resourceId="android:id/summary")]
    assert world.rpc("objInfo", [sib])["text"] == "Dark theme, font size, brightness"


def test_alarm_row_expands_to_delete(world: World) -> None:
    world.state.add_alarm(7, 30)
    world.state.add_alarm(9, 0)
    world.shell("monkey -p com.google.android.deskclock -c android.intent.category.LAUNCHER 1")
    assert not world.rpc("exist", [sel(text="Delete")])
    tap_text(world, "7:30 AM")
    tap_text(world, "Delete")
    assert not world.rpc("exist", [sel(text="7:30 AM")]) and world.rpc("exist", [sel(text="9:00 AM")])
    assert " 09:00:00.000 = +" in sh(world, "dumpsys alarm")


def test_quick_settings_shade_tiles_share_the_state(world: World) -> None:
    world.shell("am start -n com.android.settings/.Settings")
    world.rpc("swipe", [540, 40, 540, 1400, 20])  # pull down from the status bar
    xml = world.dump()
    assert 'text="Bluetooth, Off"' in xml and "com.android.settings" not in xml
    tap_text(world, "Bluetooth, Off")
    assert sh(world, "settings get global bluetooth_on") == "1\n"
    tap_text(world, "Internet, Off")
    tap_text(world, "Wi-Fi")
    assert sh(world, "settings get global wifi_on") == "1\n"
    tap_text(world, "Done")
    assert world.rpc("exist", [sel(text="Internet, AndroidWifi")])
    world.shell("cmd uimode night yes")
    assert world.rpc("objInfo", [sel(text="Dark theme, On")])["checked"] is True
    world.rpc("pressKey", ["back"])
    assert world.rpc("exist", [sel(text="Network & internet")])
    assert "enabled: true" in sh(world, "dumpsys bluetooth_manager")
