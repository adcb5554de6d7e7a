"""Issue 34's per-episode variations of the phone, driven as the host drives them: shell commands
(`settings put system font_scale`, `wm density`, `cmd uimode night`, `settings put system
time_12_24`, `cmd vphone ...`), then the dump, the screenshot and input (docs/virtual-phone.md,
"Variations")."""

from __future__ import annotations

import calendar
import re
import time

import pytest

from virtual_phone.fs import VirtualFS
from virtual_phone.world import World


@pytest.fixture
def world() -> World:
    return World(VirtualFS())


def sel(**kw: object) -> dict:
    bits = {"text": 0x01, "description": 0x40, "resourceId": 0x200000}
    mask = 0
    for k in kw:
        mask |= bits[k]
    return {"mask": mask, "childOrSibling": [], "childOrSiblingSelector": [], **kw}


def sh(w: World, cmd: str) -> str:
    return w.shell(cmd).stdout.decode()


def bounds(w: World, **kw: object) -> tuple[int, int, int, int]:
    b = w.rpc("objInfo", [sel(**kw)])["visibleBounds"]
    return b["left"], b["top"], b["right"], b["bottom"]


def center(w: World, **kw: object) -> tuple[int, int]:
    l, t, r, b = bounds(w, **kw)
    return (l + r) // 2, (t + b) // 2


def texts(w: World) -> list[str]:
    return re.findall(r'text="([^"]*)"', w.dump())


def set_today(w: World, hour: int, minute: int) -> None:
    now = time.gmtime()
    w.state.clock.set(calendar.timegm((now.tm_year, now.tm_mon, now.tm_mday, hour, minute, 0)))


# --- 24-hour time ------------------------------------------------------------------------------

def test_time_12_24_switches_every_clock_on_screen(world: World) -> None:
    w = world
    set_today(w, 19, 5)
    sh(w, "settings put system time_12_24 24")
    status = w.rpc("objInfo", [sel(resourceId="com.android.systemui:id/clock")])
    assert (status["text"], status["contentDescription"]) == ("19:05", "19:05")
    w.state.add_alarm(7, 30)
    sh(w, "monkey -p com.google.android.deskclock 1")
    assert "07:30" in texts(w) and not any("AM" in t or "PM" in t for t in texts(w))
    w.tap(*center(w, description="Clock"))
    assert w.rpc("getText", [sel(resourceId="com.google.android.deskclock:id/digital_clock")]) == "19:05"
    w.rpc("openNotification", [])
    assert w.rpc("getText", [sel(resourceId="com.android.systemui:id/clock")]) == "19:05"
    w.back()
    # The readers a check uses report raw values, whatever the phone shows.
    alarm_before = sh(w, "settings get system next_alarm_formatted")
    assert alarm_before.strip().endswith("7:30 AM")
    sh(w, "settings delete system time_12_24")
    status = w.rpc("objInfo", [sel(resourceId="com.android.systemui:id/clock")])
    assert (status["text"], status["contentDescription"]) == ("7:05", "7:05 PM")
    sh(w, "am start -n com.google.android.deskclock/com.android.deskclock.DeskClock")
    assert w.rpc("getText", [sel(resourceId="com.google.android.deskclock:id/digital_clock")]) == "7:05"
    w.tap(*center(w, description="Alarm"))
    assert "7:30 AM" in texts(w)
    sh(w, "settings put system time_12_24 12")
    assert "7:30 AM" in texts(w)
    assert sh(w, "settings get system next_alarm_formatted") == alarm_before


def test_24_hour_messages_calendar_and_dialer(world: World) -> None:
    w = world
    set_today(w, 18, 45)
    now = w.state.clock.now_ms()
    sh(w, "settings put system time_12_24 24")
    w.state.telephony.add_sms("6505550123", "hello", 1, date=now - 2 * 3600_000)          # 16:45
    w.state.telephony.add_call("6505550123", 3, date=now - 3 * 3600_000)                  # 15:45
    w.state.calendar.add(1, "Standup", now + 3600_000 - 45 * 60_000, now + 2 * 3600_000 - 45 * 60_000)
    sh(w, "monkey -p com.google.android.apps.messaging 1")
    assert "16:45" in texts(w)
    sh(w, "monkey -p com.google.android.dialer 1")
    assert any(t.endswith("15:45") for t in texts(w)), texts(w)
    sh(w, "monkey -p com.google.android.calendar 1")
    assert "19:00 – 20:00" in texts(w)
    sh(w, "settings put system time_12_24 12")
    assert "7:00 PM – 8:00 PM" in texts(w)
    sh(w, "monkey -p com.google.android.apps.messaging 1")
    assert "4:45 PM" in texts(w)
