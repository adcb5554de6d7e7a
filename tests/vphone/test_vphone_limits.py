"""The limits infeasible tasks rest on are on screen, as on a Pixel: Clock's Snooze length stops
at 30 minutes (typing 45 is refused), Calendar's Repeat choices go no finer than a day. Driven
through the real uiautomator2 client over adb, as the model would find them."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.slow


def test_clock_snooze_length_stops_at_30_minutes(u2_device: Any) -> None:
    d = u2_device
    d.shell("pm clear com.google.android.deskclock")
    d.app_start("com.google.android.deskclock")
    d(description="More options").click()
    d(text="Settings").click()
    assert d(text="Snooze length").exists and d(text="10 minutes").exists
    d(text="Snooze length").click()
    field = d(resourceId="android:id/numberpicker_input")
    field.set_text("45")
    assert field.info["text"] == "10"             # out of range: the picker keeps its value
    for _ in range(40):                            # step up: the next value's button, until there is none
        value = int(field.info["text"])
        nxt = d(className="android.widget.Button", text=str(value + 1))
        if not nxt.exists:
            break
        nxt.click()
    assert field.info["text"] == "30" and not d(text="31").exists
    d(text="OK").click()
    assert d(text="30 minutes").exists


def test_calendar_repeat_offers_nothing_finer_than_a_day(u2_device: Any) -> None:
    d = u2_device
    d.shell("content insert --uri content://com.android.calendar/events --bind calendar_id:i:1 "
            "--bind eventTimezone:s:UTC --bind 'title:s:Limit probe' --bind dtstart:l:1797952500000 "
            "--bind dtend:l:1797955200000")
    try:
        d.shell("am force-stop com.google.android.calendar")
        d.app_start("com.google.android.calendar")
        d(text="Limit probe").click()
        d(description="Edit event").click()
        d(text="Does not repeat").click()
        choices = [n.info["text"] for n in d(resourceId="android:id/text1")]
        assert choices[:2] == ["Does not repeat", "Every day"] and "Custom…" in choices
        d(text="Custom…").click()
        units = [n.info["text"] for n in d(resourceId="android:id/text1")]
        assert units == ["day", "week", "month", "year"]
        d(text="week").click()
        d(text="Save").click()
        out = d.shell("content query --uri content://com.android.calendar/events --projection title:rrule "
                      "--where \"title='Limit probe'\"").output
        assert "rrule=FREQ=WEEKLY" in out
    finally:
        d.shell("content delete --uri content://com.android.calendar/events --where \"title='Limit probe'\"")
