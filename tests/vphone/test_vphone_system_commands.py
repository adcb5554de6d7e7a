"""pwd, ifconfig, ip, log and logcat, through adbutils, uiautomator2 and the adb CLI."""

from __future__ import annotations

import subprocess
import time

from virtual_phone import adb_server


def test_pwd_and_wlan_ip(u2_device) -> None:
    d = u2_device
    assert d.adb_device.shell("pwd") == "/"
    assert d.adb_device.wlan_ip() == "10.0.2.16"
    assert d.wlan_ip == "10.0.2.16"
    assert "inet 10.0.2.16/24 brd 10.0.2.255 scope global wlan0" in d.adb_device.shell("ip addr show dev wlan0")
    r = d.adb_device.shell2("ifconfig eth0")
    assert r.returncode == 1 and "No such device" in r.output


def test_log_and_logcat_dump(u2_device) -> None:
    dev = u2_device.adb_device
    dev.shell("logcat -c")
    dev.shell("log -t vtest 'hello; world'")
    dev.shell("log -p w -t other careful")
    out = dev.shell("logcat -d -s vtest")
    assert out.startswith("--------- beginning of main")
    lines = out.splitlines()[1:]
    assert len(lines) == 1 and lines[0].endswith(" I vtest   : hello; world"), lines
    assert "W/other( 4242): careful" in dev.shell("logcat -d -v time other:W *:S")
    dev.shell("logcat -c")
    assert dev.shell("logcat -d") == "--------- beginning of main"


def test_adb_logcat_runs_through_export_and_exec(u2_device, virtual_phone, adb_server_port) -> None:
    dev = u2_device.adb_device
    dev.shell("log -t vtest from-adb")
    out = subprocess.run([adb_server.find_adb(), "-P", str(adb_server_port), "-s", virtual_phone.serial,
                          "logcat", "-d", "-s", "vtest"], capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    assert "I vtest   : from-adb" in out.stdout


def test_logcat_follows_until_the_client_stops(u2_device, tmp_path) -> None:
    dev = u2_device.adb_device
    u2_device.app_start("com.android.settings")
    dev.shell("log -t vtest before")
    path = tmp_path / "logcat.txt"
    evt = dev.logcat(str(path), re_filter="vtest|ActivityTaskManager")
    time.sleep(0.3)
    dev.shell("log -t vtest after")
    time.sleep(0.6)
    # adbutils' reader only sees its stop flag after a line arrives, as on a phone whose log never rests.
    evt.stop_nowait()
    dev.shell("log -t vtest wake")
    evt.stop(timeout=3)
    text = path.read_text()
    assert "I/vtest( 4242): before" in text and "I/vtest( 4242): after" in text, text
    assert "START u0" in text and "com.android.settings" in text
    assert dev.shell("echo still-free") == "still-free"
