"""uiautomator2 calls that need the server's less common JSON-RPC methods, through the real client.

Each was `-32601 Method not found` (or did nothing) before the method table in virtual_phone/rpc.py.
"""

from __future__ import annotations

import time

import pytest
import uiautomator2

SETTINGS = "com.android.settings"
MESSAGES = "com.google.android.apps.messaging"
RECIPIENT = MESSAGES + ":id/recipient_text_view"
LIST = SETTINGS + ":id/main_content_scrollable_container"


def _settings(d: uiautomator2.Device) -> None:
    d.shell(f"am start -n {SETTINGS}/.Settings")


def _recipient(d: uiautomator2.Device) -> uiautomator2.UiObject:
    d.app_start(MESSAGES)
    d(description="Start chat").click()
    return d(resourceId=RECIPIENT)


def test_get_text(u2_device) -> None:
    d = u2_device
    _settings(d)
    assert d(text="Battery").get_text() == "Battery"
    assert d(resourceId="android:id/summary", instance=4).get_text() == "85%"
    with pytest.raises(uiautomator2.UiObjectNotFoundError):
        d(text="No such row").get_text(timeout=0)


def test_child_by_text_description_instance(u2_device) -> None:
    d = u2_device
    _settings(d)
    row = d(resourceId=LIST).child_by_text("Battery", className="android.widget.LinearLayout", clickable=True)
    assert isinstance(row.selector, str) and row.exists
    top, bottom = row.info["bounds"]["top"], row.info["bounds"]["bottom"]
    battery = d(text="Battery").info["bounds"]
    assert top <= battery["top"] and battery["bottom"] <= bottom
    assert d(resourceId=LIST).child_by_instance(2, resourceId="android:id/title").get_text() == "Apps"
    # A row below the screen: the list scrolls until it shows (UiScrollable.getChildByText).
    about = d(resourceId=LIST).child_by_text("About phone", allow_scroll_search=True,
                                             className="android.widget.LinearLayout", clickable=True)
    about.click()
    assert d(text="Device name").wait(timeout=2) or d(text="Model").wait(timeout=1)
    with pytest.raises(uiautomator2.UiObjectNotFoundError):
        d(resourceId=LIST).child_by_text("No such row", allow_scroll_search=False, className="android.widget.LinearLayout")
    d.press("back")
    icons = d(resourceId="com.android.systemui:id/status_bar_contents")
    battery = icons.child_by_description("Battery 85 percent.", resourceId="com.android.systemui:id/system_icons")
    assert battery.info["bounds"]["right"] == 1006


def test_drag_to(u2_device) -> None:
    d = u2_device
    _settings(d)
    before = d(text="Battery").info["bounds"]["top"]
    t0 = time.monotonic()
    d(text="Battery").drag_to(540, 600, duration=0.5)
    took = time.monotonic() - t0
    assert d(text="Battery").info["bounds"]["top"] < before     # the list moved with the finger
    assert 0.45 <= took < 1.5, took


def test_touch_down_up_is_a_tap_and_a_held_press_is_long(u2_device) -> None:
    d = u2_device
    _settings(d)
    x, y = d(text="Battery").center()
    d.touch.down(x, y).up(x, y)
    assert d(text="Battery usage").wait(timeout=2) or d(textContains="85").exists
    assert d.app_current()["package"] == SETTINGS and not d(text="Network & internet").exists
    d.press("back")
    assert d(text="Network & internet").wait(timeout=2)
    # down, move past the touch slop, up: a drag that scrolls the list
    before = d(text="Battery").info["bounds"]["top"]
    d.touch.down(540, 1800).move(540, 1400).move(540, 1000).up(540, 1000)
    assert d(text="Battery").info["bounds"]["top"] < before


def test_double_click(u2_device) -> None:
    d = u2_device
    _settings(d)
    x, y = d(text="Battery").center()
    d.double_click(x, y, duration=0.05)
    assert not d(text="Network & internet").exists


def test_long_press_by_touch_selects_in_files(u2_device, virtual_phone) -> None:
    d = u2_device
    virtual_phone.fs.write("/sdcard/Download/report.pdf", b"%PDF")
    d.app_start("com.google.android.documentsui")
    x, y = d(text="report.pdf").center()
    d.touch.down(x, y).sleep(0.5).up(x, y)
    assert d(text="1 selected").wait(timeout=2)


def test_pinch_and_gesture(u2_device) -> None:
    d = u2_device
    _settings(d)
    lst = d(resourceId=LIST)
    t0 = time.monotonic()
    assert lst.pinch_in(percent=60, steps=40) is True
    assert lst.pinch_out(percent=60, steps=40) is True
    assert lst.gesture((300, 1000), (700, 1000), (100, 1000), (900, 1000), steps=40) is True
    assert time.monotonic() - t0 >= 0.55    # 3 x 40 steps of 5 ms
    with pytest.raises(uiautomator2.UiObjectNotFoundError):
        d(text="No such row").pinch_in()


def test_send_keys_clear_replaces_without_ime(u2_device) -> None:
    d = u2_device
    field = _recipient(d)
    d.send_keys("5550")
    assert field.get_text() == "5550"
    d.send_keys("123", clear=True)
    assert field.get_text() == "123"
    d.clear_text()
    assert field.get_text() in ("", "Type a name, phone number, or email")


def test_an_unknown_key_name_is_false_as_on_the_server(u2_device) -> None:
    # AutomatorServiceImpl.pressKey ends in `"power".equals(key) && ...`: false, not an error.
    assert u2_device.jsonrpc.pressKey("nosuchkey") is False
    assert u2_device.jsonrpc.pressKey("home") is True
