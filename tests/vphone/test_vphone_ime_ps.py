"""uiautomator2's AdbKeyboard IME: installed through adbutils, listed by `ime list`, selected by
d.set_input_ime(True), typing and clearing through its broadcasts; the server's app_process in ps."""

from __future__ import annotations

from importlib import resources

MESSAGES = "com.google.android.apps.messaging"
RECIPIENT = MESSAGES + ":id/recipient_text_view"
IME = "com.github.uiautomator/.AdbKeyboard"


def test_adb_keyboard_installs_lists_and_types(u2_device) -> None:
    d = u2_device
    assert IME not in d.shell("ime list -s -a").output
    apk = resources.files("uiautomator2") / "assets" / "app-uiautomator.apk"
    d.adb_device.install(str(apk), nolaunch=True, silent=True)
    assert "package:com.github.uiautomator" in d.shell("pm list packages -3").output
    assert IME in d.shell("ime list -s -a").output.splitlines()
    assert IME not in d.shell("ime list -s").output          # installed, not yet enabled
    d.set_input_ime(True)
    assert d.current_ime() == IME and IME in d.shell("ime list -s").output
    d.app_start(MESSAGES)
    d(description="Start chat").click()
    field = d(resourceId=RECIPIENT)
    d.send_keys("5550")                     # ADB_KEYBOARD_INPUT_TEXT, base64
    assert field.get_text() == "5550"
    d.send_keys("12; &", clear=True)        # ADB_KEYBOARD_CLEAR_TEXT first
    assert field.get_text() == "12; &"
    d.set_input_ime(False)
    assert IME not in d.shell("ime list -s").output
    assert d.shell("am broadcast -a ADB_KEYBOARD_CLEAR_TEXT").output.endswith("result=0\n")


def test_a_file_that_is_no_apk_fails_to_install(u2_device, virtual_phone) -> None:
    virtual_phone.fs.write("/data/local/tmp/junk.apk", b"not a zip")
    r = u2_device.adb_device.shell2("pm install -r -t /data/local/tmp/junk.apk")
    assert r.returncode == 1 and r.output.startswith("Failure [INSTALL_PARSE_FAILED_NOT_APK")


def test_ps_lists_the_servers_app_process(u2_device) -> None:
    d = u2_device
    d.info  # the server runs
    rows = [ln.split() for ln in d.shell("ps -u shell").output.splitlines()[1:]]
    assert any(r[-1] == "app_process" and r[0] == "shell" for r in rows), rows
    assert all(r[0] == "shell" for r in rows)
    assert d.shell("pidof app_process").output.strip().isdigit()
    assert not any(r[-1] == "system_server" for r in rows)
