"""`uiautomator dump` through the real adb CLI, as users type it (AOSP DumpCommand's answers)."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from typing import Any

from virtual_phone.adb_server import adb_command


def adb(phone: Any, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(adb_command(phone.adb_port, "-s", phone.serial, *args), capture_output=True, timeout=30)


def test_dump_to_the_default_file_then_pull(virtual_phone: Any, tmp_path: Any) -> None:
    adb(virtual_phone, "shell", "am start -a android.settings.DISPLAY_SETTINGS")
    res = adb(virtual_phone, "shell", "uiautomator dump")
    assert (res.returncode, res.stdout) == (0, b"UI hierchary dumped to: /sdcard/window_dump.xml\n")
    assert adb(virtual_phone, "pull", "/sdcard/window_dump.xml", str(tmp_path / "d.xml")).returncode == 0
    data = (tmp_path / "d.xml").read_bytes()
    assert data.startswith(b"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">")
    assert b"\n" not in data and data.endswith(b"</hierarchy>")  # one line, as on a phone
    root = ET.fromstring(data)
    texts = {n.get("text") for n in root.iter("node")}
    assert "Dark theme" in texts
    # Only the active window: the status bar (another window) is not in a uiautomator dump.
    assert {n.get("package") for n in root.iter("node")} == {"com.android.settings"}
    first = next(root.iter("node"))
    assert list(first.attrib)[-3:] == ["bounds", "drawing-order", "hint"] and "display-id" not in first.attrib


def test_dump_to_a_named_file_and_compressed(virtual_phone: Any) -> None:
    res = adb(virtual_phone, "shell", "uiautomator dump /data/local/tmp/ui.xml")
    assert res.stdout == b"UI hierchary dumped to: /data/local/tmp/ui.xml\n"
    full = adb(virtual_phone, "exec-out", "cat /data/local/tmp/ui.xml").stdout
    adb(virtual_phone, "shell", "uiautomator dump --compressed /data/local/tmp/ui.xml")
    small = adb(virtual_phone, "exec-out", "cat /data/local/tmp/ui.xml").stdout
    assert 0 < len(small) < len(full)
    assert ET.fromstring(small).find("node") is not None


def test_exec_out_dump_to_dev_tty_prints_the_xml_then_the_message(virtual_phone: Any) -> None:
    res = adb(virtual_phone, "exec-out", "uiautomator dump /dev/tty")
    assert res.returncode == 0
    xml, sep, tail = res.stdout.partition(b"</hierarchy>")
    assert sep and tail == b"UI hierchary dumped to: /dev/tty\n"
    root = ET.fromstring(xml + sep)
    assert any(n.get("text") == "Phone" for n in root.iter("node"))  # the launcher's hotseat


def test_dialog_is_the_active_window(virtual_phone: Any) -> None:
    virtual_phone.world.show_system_dialog("App isn't responding", "Close app?")
    out = adb(virtual_phone, "exec-out", "uiautomator dump /dev/tty").stdout
    root = ET.fromstring(out.partition(b"</hierarchy>")[0] + b"</hierarchy>")
    assert {n.get("text") for n in root.iter("node")} >= {"App isn't responding", "OK"}
    assert "com.google.android.apps.nexuslauncher" not in {n.get("package") for n in root.iter("node")}


def test_usage_without_a_subcommand(virtual_phone: Any) -> None:
    res = adb(virtual_phone, "shell", "uiautomator")
    assert res.returncode == 0 and res.stdout.startswith(b"Usage: uiautomator <subcommand> [options]\n")
    assert b"default is\n      /sdcard/window_dump.xml\n" in res.stdout
