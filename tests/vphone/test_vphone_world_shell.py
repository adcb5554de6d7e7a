"""Virtual phone shell: Android 14's output formats, byte for byte, and the parsers that read them."""

from __future__ import annotations

import re

import pytest

from virtual_phone.fs import VirtualFS
from virtual_phone.world import World
from test_vphone_world import sh


@pytest.fixture
def world() -> World:
    return World(VirtualFS())


def test_settings_get_put_delete(world: World) -> None:
    assert sh(world, "settings get global no_such_key") == "null\n"
    assert world.shell("settings put system screen_off_timeout 60000").stdout == b""
    assert sh(world, "settings get system screen_off_timeout") == "60000\n"
    assert sh(world, "settings delete system screen_off_timeout") == "Deleted 1 rows\n"
    assert sh(world, "settings delete system screen_off_timeout") == "Deleted 0 rows\n"
    assert sh(world, "settings --user current get secure location_mode") == "3\n"
    r = world.shell("settings get nowhere x")
    assert r.exit_code != 0 and b"Invalid namespace" in r.stderr


def test_state_command_outputs(world: World) -> None:
    assert sh(world, "cmd uimode night") == "Night mode: no\n"
    assert sh(world, "cmd uimode night yes") == "Night mode: yes\n"
    assert sh(world, "cmd uimode night auto; settings get secure ui_night_mode") == "Night mode: auto\n0\n"
    assert sh(world, "cmd connectivity airplane-mode") == "disabled\n"
    assert sh(world, "cmd location is-location-enabled") == "true\n"
    assert sh(world, "dumpsys bluetooth_manager").startswith("Bluetooth Status\n  enabled: false\n")
    for mode, zen in (("priority", "1"), ("alarms", "3"), ("none", "2"), ("all", "0"), ("on", "2"), ("off", "0")):
        world.shell(f"cmd notification set_dnd {mode}")
        assert sh(world, "settings get global zen_mode") == zen + "\n", mode
    assert world.shell("cmd power set-mode 1").stdout == b""
    assert sh(world, "settings get global low_power") == "1\n"


def test_dumpsys_battery_is_what_adbutils_parses(world: World) -> None:
    out = sh(world, "dumpsys battery")
    assert out.startswith("Current Battery Service state:\n  AC powered: false\n  USB powered: false\n")
    assert "  level: 85\n" in out and "  status: 3\n" in out
    world.shell("dumpsys battery set usb 1")
    assert "  USB powered: true\n" in sh(world, "dumpsys battery")
    world.shell("dumpsys battery reset")
    assert "UPDATES STOPPED" not in sh(world, "dumpsys battery")


def test_foreground_app_in_all_three_android_formats(world: World) -> None:
    world.shell("am start -n com.android.settings/.Settings")
    win = sh(world, "dumpsys window windows")
    # adbutils' own regular expression for app_current()
    m = re.search(r"mCurrentFocus=Window{.*\s+(?P<package>[^\s]+)/(?P<activity>[^\s]+)\}", win)
    assert m and (m["package"], m["activity"]) == ("com.android.settings", "com.android.settings.Settings")
    top = sh(world, "dumpsys activity activities | grep topResumedActivity")
    assert re.fullmatch(r"  topResumedActivity=ActivityRecord\{[0-9a-f]+ u0 com\.android\.settings/\.Settings t\d+\}\n",
                        top)
    act = sh(world, "dumpsys activity top")
    m2 = re.search(r"ACTIVITY (?P<package>[^\s]+)/(?P<activity>[^/\s]+) \w+ pid=(?P<pid>\d+)", act)
    assert m2 and m2["package"] == "com.android.settings"
    assert world.shell("am force-stop com.android.settings").stdout == b""
    assert "nexuslauncher" in sh(world, "dumpsys window | grep mCurrentFocus")


def test_am_start_outputs(world: World) -> None:
    assert sh(world, "am start -n com.android.settings/.Settings") == (
        "Starting: Intent { cmp=com.android.settings/.Settings }\n")
    bad = sh(world, "am start -n com.android.settings/.Nope")
    assert "Error type 3\nError: Activity class {com.android.settings/.Nope} does not exist.\n" in bad
    r = world.shell("am broadcast -a android.intent.action.AIRPLANE_MODE")
    assert r.exit_code == 255 and b"Permission Denial: not allowed to send broadcast" in r.stderr
    world.shell("am start -a android.settings.WIFI_SETTINGS")
    assert "SubSettings" in sh(world, "dumpsys window | grep mCurrentFocus")


def test_ps_lists_apps_and_uiautomator_as_uiautomator2_reads_it(world: World) -> None:
    world.shell("monkey -p com.google.android.deskclock -c android.intent.category.LAUNCHER 1")
    assert "app_process" not in sh(world, "ps -A")
    world.u2_running = True
    lines = sh(world, "ps -A").splitlines()
    assert lines[0].split() == ["USER", "PID", "PPID", "VSZ", "RSS", "WCHAN", "ADDR", "S", "NAME"]
    names = {ln.split()[-1]: ln.split() for ln in lines[1:]}
    assert len(names["com.google.android.deskclock"]) == 9  # uiautomator2's _pidof_app needs >= 9 fields
    assert "app_process" in names and names["app_process"][0] == "shell"
    world.shell("pm clear com.google.android.deskclock")
    assert "com.google.android.deskclock" not in sh(world, "ps -A")


def test_pm_and_ime(world: World) -> None:
    pk = sh(world, "pm list packages").splitlines()
    assert "package:com.google.android.deskclock" in pk and all(p.startswith("package:") for p in pk)
    assert sh(world, "pm clear com.google.android.contacts") == "Success\n"
    assert sh(world, "ime list -s -a") == "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME\n"


def test_input_keyevents_and_swipe(world: World) -> None:
    world.shell("am start -n com.android.settings/.Settings")
    world.shell("input keyevent KEYCODE_HOME")
    assert "nexuslauncher" in sh(world, "dumpsys window | grep mCurrentFocus")
    world.shell("input tap 108 1600")  # the Settings icon
    assert "com.android.settings/" in sh(world, "dumpsys window | grep mCurrentFocus")
    assert "About phone" not in world.dump()
    world.shell("input swipe 540 2000 540 300 300; input swipe 540 2000 540 300 300")
    assert "About phone" in world.dump()
    world.shell("input keyevent 4")
    assert "nexuslauncher" in sh(world, "dumpsys window | grep mCurrentFocus")


def test_content_provider_commands(world: World) -> None:
    q = "content query --uri content://com.android.contacts/data/phones --projection display_name:number"
    assert sh(world, q) == "No result found.\n"
    world.shell("content insert --uri content://com.android.contacts/raw_contacts --bind account_type:n: "
                "--bind account_name:n:")
    rid = re.search(r"_id=(\d+)", sh(world, "content query --uri content://com.android.contacts/raw_contacts "
                                            "--projection _id --sort \"_id DESC\""))[1]
    world.shell(f"content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:{rid} "
                "--bind mimetype:s:vnd.android.cursor.item/name --bind data1:s:Ann")
    world.shell(f"content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:{rid} "
                "--bind mimetype:s:vnd.android.cursor.item/phone_v2 --bind data1:s:5551234 --bind data2:i:2")
    assert sh(world, q) == "Row: 0 display_name=Ann, number=5551234\n"
    assert sh(world, "content query --uri content://contacts/phones/ --projection display_name:number") == (
        "Row: 0 display_name=Ann, number=5551234\n")
    world.shell(f"content delete --uri content://com.android.contacts/raw_contacts --where \"_id={rid}\"")
    assert sh(world, q) == "No result found.\n"


def test_dumpsys_alarm_next_alarm_block(world: World) -> None:
    assert sh(world, "settings get system next_alarm_formatted") == "null\n"
    world.state.add_alarm(7, 30)
    out = sh(world, "dumpsys alarm | grep -A 1 'Next alarm clock information'")
    first, second = out.splitlines()
    assert first == "  Next alarm clock information: "
    assert re.fullmatch(r"    user:0 pendingSend:false time:\d{13} = \d{4}-\d\d-\d\d 07:30:00\.000 = \+[\dhms]+ms",
                        second)
    assert re.fullmatch(r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun) 7:30 AM\n", sh(world, "settings get system next_alarm_formatted"))


def test_screencap_and_files(world: World) -> None:
    png = world.shell("screencap -p").stdout
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    world.shell("screencap -p /sdcard/s.png")
    assert world.fs.read("/sdcard/s.png").startswith(b"\x89PNG")
    world.shell("echo hello > /sdcard/a.txt; echo more >> /sdcard/a.txt")
    assert sh(world, "cat /sdcard/a.txt") == "hello\nmore\n"
    assert sh(world, "ls /sdcard") == "a.txt\ns.png\n"
    assert sh(world, "cat /nope 2>/dev/null; echo $?") == "1\n"
