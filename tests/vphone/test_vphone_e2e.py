"""End to end, as the issue's acceptance reads: only uiautomator2, adbutils and the adb CLI."""

from __future__ import annotations

import io
import subprocess
import xml.etree.ElementTree as ET

from virtual_phone import adb_server


def _center(node: ET.Element) -> tuple[int, int]:
    left_top, right_bottom = node.get("bounds", "")[1:-1].split("][")
    x1, y1 = map(int, left_top.split(","))
    x2, y2 = map(int, right_bottom.split(","))
    return (x1 + x2) // 2, (y1 + y2) // 2


def _find(xml: str, **attrs: str) -> ET.Element:
    for node in ET.fromstring(xml).iter("node"):
        if all(node.get(k) == v for k, v in attrs.items()):
            return node
    raise AssertionError(f"no node with {attrs} in the dump")


def _tap_text(d, text: str) -> None:
    d.click(*_center(_find(d.dump_hierarchy(), text=text)))


def _adb_shell(phone, command: str) -> str:
    out = subprocess.run(adb_server.adb_command(phone.adb_port, "-s", phone.serial, "shell", command),
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_home_to_wifi_switch_and_the_shell_agrees(virtual_phone, u2_device):
    d = u2_device
    _adb_shell(virtual_phone, "svc wifi disable")
    assert _adb_shell(virtual_phone, "settings get global wifi_on") == "0"

    d.press("home")
    _tap_text(d, "Settings")
    _tap_text(d, "Network & internet")
    _tap_text(d, "Internet")
    switch = _find(d.dump_hierarchy(), **{"resource-id": "android:id/switch_widget"})
    assert switch.get("checked") == "false"
    d.click(*_center(switch))

    assert _adb_shell(virtual_phone, "settings get global wifi_on") == "1"
    switch = _find(d.dump_hierarchy(), **{"resource-id": "android:id/switch_widget"})
    assert switch.get("checked") == "true"


def test_screenshot_decodes_at_full_resolution(u2_device):
    from PIL import Image

    assert u2_device.screenshot().size == (1080, 2400)  # takeScreenshot (JPEG over JSON-RPC)
    raw = u2_device.adb_device.shell("screencap -p", encoding=None)  # and the adb shell path
    assert raw.startswith(b"\x89PNG")
    assert Image.open(io.BytesIO(raw)).size == (1080, 2400)
