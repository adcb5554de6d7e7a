"""The virtual phone's world, driven directly: navigation, state consistency, shell formats."""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image

from virtual_phone.fs import VirtualFS
from virtual_phone.core import RpcError
from virtual_phone.world import World


@pytest.fixture
def world() -> World:
    return World(VirtualFS())


def sel(**kw: object) -> dict:
    bits = {"text": 0x01, "textContains": 0x02, "className": 0x10, "description": 0x40,
            "resourceId": 0x200000, "checked": 0x0800, "instance": 0x01000000, "textMatches": 0x04,
            "clickable": 0x1000, "index": 0x800000, "focused": 0x020000}
    mask = 0
    for k in kw:
        mask |= bits[k]
    return {"mask": mask, "childOrSibling": [], "childOrSiblingSelector": [], **kw}


def tap_text(w: World, text: str) -> None:
    info = w.rpc("objInfo", [sel(text=text)])
    b = info["visibleBounds"]
    w.rpc("click", [(b["left"] + b["right"]) // 2, (b["top"] + b["bottom"]) // 2])


def sh(w: World, cmd: str) -> str:
    return w.shell(cmd).stdout.decode()


def scroll_to(w: World, text: str, tries: int = 8) -> None:
    for _ in range(tries):
        if w.rpc("exist", [sel(text=text)]):
            return
        w.rpc("swipe", [540, 1900, 540, 900, 20])
    raise AssertionError(f"{text!r} never scrolled into view")


def test_wifi_switch_and_setting_agree_both_ways(world: World) -> None:
    for t in ("Settings", "Network & internet", "Internet"):
        tap_text(world, t)
    switch = sel(resourceId="android:id/switch_widget")
    assert world.rpc("objInfo", [switch])["checked"] is False
    assert sh(world, "settings get global wifi_on") == "0\n"
    tap_text(world, "Wi-Fi")
    assert sh(world, "settings get global wifi_on") == "1\n"
    assert world.rpc("objInfo", [switch])["checked"] is True
    assert sh(world, "cmd wifi status").splitlines()[0] == "Wifi is enabled"
    world.shell("svc wifi disable")
    assert world.rpc("objInfo", [switch])["checked"] is False
    assert 'checked="false"' in re.search(r'<node[^>]*android:id/switch_widget[^>]*>', world.dump()).group(0)


def test_airplane_mode_follows_android_wifi_on_semantics(world: World) -> None:
    world.shell("svc wifi enable")
    world.shell("cmd bluetooth_manager enable")
    world.shell("cmd connectivity airplane-mode enable")
    assert sh(world, "settings get global wifi_on; settings get global bluetooth_on") == "3\n2\n"
    assert sh(world, "cmd connectivity airplane-mode") == "enabled\n"
    assert sh(world, "cmd wifi status").startswith("Wifi is disabled\n")
    world.shell("svc wifi enable")
    assert sh(world, "settings get global wifi_on") == "2\n"
    world.shell("cmd connectivity airplane-mode disable")
    assert sh(world, "settings get global wifi_on; settings get global bluetooth_on") == "1\n1\n"
    # The UI switch drives the same code path.
    for t in ("Settings", "Network & internet", "Airplane mode"):
        tap_text(world, t)
    assert sh(world, "settings get global airplane_mode_on; settings get global wifi_on") == "1\n3\n"


def test_settings_home_scrolls_and_hides_rows_below_the_fold(world: World) -> None:
    world.shell("am start -n com.android.settings/.Settings")
    xml = world.dump()
    assert 'text="Network &amp; internet"' in xml
    assert "About phone" not in xml
    assert 'resource-id="com.android.settings:id/recycler_view"' in xml
    scroll_to(world, "About phone")
    xml = world.dump()
    assert "About phone" in xml
    assert 'text="Network &amp; internet"' not in xml
    tap_text(world, "About phone")
    assert world.rpc("exist", [sel(text="14")])


def test_back_and_home_behave_like_android(world: World) -> None:
    tap_text(world, "Settings")
    tap_text(world, "Display")
    assert world.rpc("deviceInfo", {})["currentPackageName"] == "com.android.settings"
    world.rpc("pressKey", ["home"])
    assert "mCurrentFocus=Window{" in sh(world, "dumpsys window windows")
    assert "nexuslauncher/com.google.android.apps.nexuslauncher.NexusLauncherActivity}" in sh(world, "dumpsys window")
    tap_text(world, "Settings")  # the task comes back where it was
    assert world.rpc("exist", [sel(text="Dark theme")])
    world.rpc("pressKey", ["back"])
    assert world.rpc("exist", [sel(text="Network & internet")])
    world.rpc("pressKey", ["back"])
    assert world.rpc("exist", [sel(description="Clock")])


def test_shell_chains_exit_codes_and_unknown_command(world: World) -> None:
    r = world.shell("nosuchcmd --x")
    assert (r.stdout, r.stderr, r.exit_code) == (b"", b"/system/bin/sh: nosuchcmd: inaccessible or not found\n", 127)
    assert sh(world, "false; echo X4EXIT:$?") == "X4EXIT:1\n"
    assert sh(world, "true && echo a || echo b") == "a\n"
    assert sh(world, "false && echo a || echo b") == "b\n"
    assert sh(world, "echo 'a;b' \"c d\"") == "a;b c d\n"
    assert world.shell("pm list packages | grep nosuch").exit_code == 1
    assert sh(world, "pm list packages | grep -E 'android.settings$'") == "package:com.android.settings\n"


def test_getprop_wm_display_match_what_adbutils_parses(world: World) -> None:
    assert sh(world, "getprop ro.build.version.sdk") == "34\n"
    assert sh(world, "getprop ro.build.version.release") == "14\n"
    assert sh(world, "wm size") == "Physical size: 1080x2400\n"
    m = re.search(r".*?orientation=(?P<orientation>\d+)", sh(world, "dumpsys display"))
    assert m and m.group("orientation") == "0"
    assert world.props()["ro.product.model"] == "VirtualPhone"


def test_md5sum_over_the_shared_fs(world: World) -> None:
    world.fs.write("/data/local/tmp/u2.jar", b"hello")
    assert sh(world, "toybox md5sum /data/local/tmp/u2.jar") == (
        "5d41402abc4b2a76b9719d911017c592  /data/local/tmp/u2.jar\n")
    r = world.shell("md5sum /data/local/tmp/missing")
    assert r.exit_code == 1 and r.stderr == b"md5sum: /data/local/tmp/missing: No such file or directory\n"
    assert sh(world, "ls /data/local/tmp") == "u2.jar\n"
    assert world.shell("rm /data/local/tmp/u2.jar").exit_code == 0
    assert world.shell("cat /data/local/tmp/u2.jar").exit_code == 1


def test_not_found_is_a_uiobjectnotfound_error(world: World) -> None:
    with pytest.raises(RpcError) as e:
        world.rpc("objInfo", [sel(text="Nope")])
    assert "uiautomator.UiObjectNotFoundException" in e.value.message
    assert world.rpc("waitForExists", [sel(text="Nope"), 150]) is False
    assert world.rpc("waitUntilGone", [sel(text="Nope"), 150]) is True


def test_screenshot_decodes_at_full_size(world: World) -> None:
    tap_text(world, "Settings")
    img = Image.open(io.BytesIO(world.screenshot_png()))
    assert img.size == (1080, 2400) and img.format == "PNG"
    import base64

    jpg = Image.open(io.BytesIO(base64.b64decode(world.rpc("takeScreenshot", [1, 80]))))
    assert jpg.size == (1080, 2400) and jpg.format == "JPEG"


def test_dump_format_depth_compression_and_speed(world: World) -> None:
    import time
    import xml.etree.ElementTree as ET

    world.shell("am start -n com.android.settings/.Settings")
    full = world.dump()
    assert full.startswith("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\r\n<hierarchy rotation=\"0\">\r\n")
    root = ET.fromstring(full.encode())
    tops = [n.get("package") for n in root]
    assert tops == ["com.android.settings", "com.android.systemui"]
    node = root.find(".//node[@text='Display']")
    assert node is not None and node.get("bounds") and node.get("resource-id") == "android:id/title"
    shallow = ET.fromstring(world.rpc("dumpWindowHierarchy", [False, 2]).encode())
    assert max(len(list(n.iter("node"))) for n in shallow) < 5
    small = world.rpc("dumpWindowHierarchy", [True, 50])
    assert 'text="Display"' in small and len(small) < len(full)
    times = []
    for _ in range(5):
        world.invalidate()
        t = time.perf_counter()
        world.dump()
        times.append(time.perf_counter() - t)
    assert sorted(times)[2] < 0.05


def test_tap_focuses_the_field_that_focused_selector_finds(world: World) -> None:
    world.shell("am start -a android.intent.action.INSERT -t vnd.android.cursor.dir/contact")
    tap_text(world, "Last name")
    assert world.rpc("objInfo", [sel(focused=True)])["text"] == "Last name"
    world.rpc("setText", [sel(focused=True), "Lee"])
    assert world.rpc("exist", [sel(text="Lee", className="android.widget.EditText")])


def test_enter_moves_focus_and_bad_rpc_arguments_are_rpc_errors(world: World) -> None:
    world.shell("am start -a android.intent.action.INSERT -t vnd.android.cursor.dir/contact")
    tap_text(world, "First name")
    world.shell("input text Ann; input keyevent KEYCODE_ENTER; input text Lee")
    assert world.rpc("objInfo", [sel(focused=True)])["text"] == "Lee"
    world.rpc("pressKeyCode", [67])
    assert world.rpc("exist", [sel(text="Le")])
    with pytest.raises(RpcError) as e:
        world.rpc("click", [1])
    assert e.value.code == -32602
    with pytest.raises(RpcError):
        world.rpc("noSuchMethod", [])
