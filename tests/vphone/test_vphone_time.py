"""Time passes on the virtual phone as on a phone: sleep, timed swipes and long clicks take their
wall time, a client's timeout ends them, and nothing else waits meanwhile."""

from __future__ import annotations

import threading
import time

import adbutils
import pytest

SETTINGS = "com.android.settings"


def _timed(fn) -> float:
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


@pytest.mark.slow
def test_swipe_with_duration_takes_it(u2_device) -> None:
    d = u2_device
    d.shell(f"am start -n {SETTINGS}/.Settings")
    before = d(text="Battery").info["bounds"]["top"]
    took = _timed(lambda: d.swipe(540, 1800, 540, 1000, duration=2.0))
    assert 1.8 <= took <= 2.2, took
    assert d(text="Battery").info["bounds"]["top"] < before   # and it still scrolled


@pytest.mark.slow
def test_shell_sleep_takes_its_time(u2_device) -> None:
    dev = u2_device.adb_device
    took = _timed(lambda: dev.shell("sleep 2"))
    assert 1.9 <= took <= 2.3, took
    assert 0.45 <= _timed(lambda: dev.shell("sleep 0.5; echo x")) < 0.9
    assert dev.shell("sleep 1x; echo $?") == "sleep: invalid time interval '1x'\n1"


def test_input_swipe_takes_its_duration(u2_device) -> None:
    dev = u2_device.adb_device
    assert 0.4 <= _timed(lambda: dev.shell("input swipe 540 1800 540 1000 400")) < 0.8


@pytest.mark.slow
def test_shell_timeout_fires_and_ends_the_sleep(u2_device, virtual_phone) -> None:
    dev = u2_device.adb_device
    t0 = time.monotonic()
    with pytest.raises(adbutils.AdbTimeout):
        dev.shell("sleep 10; touch /sdcard/woke", timeout=1)
    assert time.monotonic() - t0 < 1.5
    # The closed stream ended the sleep: the rest of its line never ran, and the phone is free.
    assert _timed(lambda: dev.shell("echo free")) < 0.5
    time.sleep(0.3)
    assert not virtual_phone.fs.exists("/sdcard/woke")


@pytest.mark.slow
def test_a_sleeping_shell_blocks_nobody(u2_device) -> None:
    d = u2_device
    sleeper = threading.Thread(target=lambda: d.adb_device.shell("sleep 2"))
    sleeper.start()
    time.sleep(0.2)
    try:
        assert _timed(lambda: d.info) < 0.5
        assert _timed(lambda: d.adb_device.shell("echo hi")) < 0.5
    finally:
        sleeper.join()


def test_long_click_holds_for_its_duration(u2_device, virtual_phone) -> None:
    d = u2_device
    virtual_phone.fs.write("/sdcard/Download/report.pdf", b"%PDF")
    d.app_start("com.google.android.documentsui")
    x, y = d(text="report.pdf").center()
    assert 0.7 <= _timed(lambda: d.long_click(x, y, duration=0.8)) < 1.3
    assert d(text="1 selected").exists


@pytest.mark.slow
def test_the_latency_profile_applies_to_timed_calls(real_latency_phone) -> None:
    import uiautomator2

    d = uiautomator2.connect(real_latency_phone.serial)
    took = _timed(lambda: d.swipe(540, 1800, 540, 1000, duration=1.0))
    assert 1.0 <= took <= 1.6, took
    took = _timed(lambda: d.adb_device.shell("sleep 1"))
    assert 1.0 <= took <= 1.6, took
