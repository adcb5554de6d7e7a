"""The phone's one clock: set or advanced by a test, it is what date, the status bar, the Clock app,
alarms, new messages, uptime and the log all read."""

from __future__ import annotations

import time

NEW_YEAR = 1_798_761_600          # Fri 2027-01-01 00:00:00 UTC
SYSTEMUI_CLOCK = "com.android.systemui:id/clock"


def test_set_clock_is_seen_everywhere(u2_device, virtual_phone) -> None:
    d = u2_device
    clock = virtual_phone.world.state.clock
    clock.set(NEW_YEAR + 9 * 3600 + 41 * 60)               # 09:41
    assert abs(int(d.shell("date +%s").output) - (NEW_YEAR + 9 * 3600 + 41 * 60)) <= 2
    assert d.shell("date").output.startswith("Fri Jan 01 09:41:")
    assert d(resourceId=SYSTEMUI_CLOCK).get_text() == "9:41"
    d.app_start("com.google.android.deskclock")
    d(text="Clock").click()
    assert d(resourceId="com.google.android.deskclock:id/digital_clock").get_text() == "9:41"
    assert d(resourceId="com.google.android.deskclock:id/date").get_text() == "Fri, Jan 01"
    d.shell("log -t vtest at-nine-forty-one")
    assert d.shell("logcat -d -s vtest").output.splitlines()[1].startswith("01-01 09:41:")
    # An alarm at 10:00 is the next one, today.
    virtual_phone.world.state.add_alarm(10, 0)
    assert virtual_phone.world.state.next_alarm_ms() == (NEW_YEAR + 10 * 3600) * 1000
    assert d.shell("settings get system next_alarm_formatted").output.strip() == "Fri 10:00 AM"
    assert "=2027-01-01 09:41:" in d.shell("dumpsys alarm").output


def test_advance_is_time_passing(u2_device, virtual_phone) -> None:
    d = u2_device
    clock = virtual_phone.world.state.clock
    before = int(d.shell("date +%s").output)
    line0 = d.shell("uptime").output
    clock.advance(2 * 3600)
    after = int(d.shell("date +%s").output)
    assert 2 * 3600 <= after - before <= 2 * 3600 + 2
    h0 = int(line0.split(" up 0 days, ")[1].split(":")[0])
    h1 = int(d.shell("uptime").output.split(" up 0 days, ")[1].split(":")[0])
    assert h1 == h0 + 2
    t = time.time()
    assert abs(clock.now() - (t + 2 * 3600)) < 1
