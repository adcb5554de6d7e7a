"""The world through the whole stack: uiautomator2 + adbutils + the real adb CLI, unmodified."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from typing import Any

from virtual_phone.adb_server import adb_command


def adb_shell(phone: Any, cmd: str) -> str:
    argv = adb_command(phone.adb_port, "-s", phone.serial, "shell", cmd)
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout


def click_text(d: Any, text: str, attr: str = "text") -> None:
    """Find the element in a fresh dump, as an agent would, and tap its centre."""
    root = ET.fromstring(d.dump_hierarchy().encode())
    for node in root.iter("node"):
        if node.get(attr) == text:
            l, t, r, b = (int(v) for v in node.get("bounds", "").replace("][", ",").strip("[]").split(","))
            d.click((l + r) // 2, (t + b) // 2)
            return
    raise AssertionError(f"{attr}={text!r} not on screen")


def test_wifi_on_from_home_then_adb_cli_reads_wifi_on(virtual_phone: Any, u2_device: Any) -> None:
    d = u2_device
    d.press("home")
    assert adb_shell(virtual_phone, "settings get global wifi_on") == "0\n"
    for t in ("Settings", "Network & internet", "Internet", "Wi-Fi"):
        click_text(d, t)
    assert adb_shell(virtual_phone, "settings get global wifi_on") == "1\n"
    assert d(resourceId="android:id/switch_widget").info["checked"] is True
    assert d.app_current()["package"] == "com.android.settings"


def test_bluetooth_on(virtual_phone: Any, u2_device: Any) -> None:
    d = u2_device
    d.press("home")
    for t in ("Settings", "Connected devices", "Connection preferences", "Bluetooth", "Use Bluetooth"):
        click_text(d, t)
    assert "  enabled: true\n" in adb_shell(virtual_phone, "dumpsys bluetooth_manager")
    assert adb_shell(virtual_phone, "settings get global bluetooth_on") == "1\n"


def test_dark_theme_on(virtual_phone: Any, u2_device: Any) -> None:
    d = u2_device
    d.press("home")
    for t in ("Settings", "Display", "Dark theme"):
        click_text(d, t)
    assert adb_shell(virtual_phone, "cmd uimode night") == "Night mode: yes\n"
    assert adb_shell(virtual_phone, "settings get secure ui_night_mode") == "2\n"


def test_alarm_added_with_the_time_picker(virtual_phone: Any, u2_device: Any) -> None:
    d = u2_device
    d.press("home")
    click_text(d, "Clock")
    click_text(d, "Add alarm", attr="content-desc")
    for t in ("7", "30", "AM", "OK"):
        click_text(d, t)
    assert d(text="7:30 AM").exists
    out = adb_shell(virtual_phone, "dumpsys alarm")
    block = out.split("Next alarm clock information:", 1)[1]
    assert " 07:30:00.000 = +" in block.splitlines()[1]
    assert adb_shell(virtual_phone, "settings get system next_alarm_formatted").endswith(" 7:30 AM\n")
    d(resourceId="com.google.android.deskclock:id/onoff").click()
    assert "user:0" not in adb_shell(virtual_phone, "dumpsys alarm")


def test_contact_form_filled_with_set_text_is_listed_by_content_query(virtual_phone: Any, u2_device: Any) -> None:
    d = u2_device
    d.app_start("com.google.android.contacts")
    d(description="Create contact").click()
    d(text="First name").set_text("Ann")
    d(text="Last name").set_text("Lee")
    d(text="Phone").set_text("555-1234")
    d(text="Save").click()
    out = adb_shell(virtual_phone, "content query --uri content://com.android.contacts/data/phones "
                                   "--projection display_name:number")
    assert out == "Row: 0 display_name=Ann Lee, number=555-1234\n"
    d.press("back")
    assert d(text="Ann Lee").exists


def test_screenshot_and_dump_through_the_stack(u2_device: Any) -> None:
    d = u2_device
    img = d.screenshot()
    assert img.size == (1080, 2400)
    xml = d.dump_hierarchy()
    assert xml.startswith("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>")
    assert 'package="com.android.systemui"' in xml


def test_scrollable_selector_scrolls_to_a_row_below_the_fold(u2_device: Any) -> None:
    d = u2_device
    d.app_start("com.android.settings", stop=True)
    assert not d(text="About phone").exists
    assert d(scrollable=True).scroll.to(text="About phone")
    d(text="About phone").click()
    assert d(text="Android version").exists
    d.press("back")
    d.swipe_ext("down")  # back to the top: the first rows come back into view
    d.swipe_ext("down")
    assert d(text="Network & internet").exists
