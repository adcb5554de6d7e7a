"""Issue 34's per-episode variations of the phone, driven as the host drives them: shell commands
(`settings put system font_scale`, `wm density`, `cmd uimode night`, `settings put system
time_12_24`, `cmd vphone ...`), then the dump, the screenshot and input (docs/virtual-phone.md,
"Variations")."""

from __future__ import annotations

import calendar
import html
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


# --- font scale and density --------------------------------------------------------------------

def test_wm_density_prints_sets_and_resets_like_android(world: World) -> None:
    w = world
    assert sh(w, "wm density") == "Physical density: 420\n"
    assert w.shell("wm density 356").exit_code == 0
    assert sh(w, "wm density") == "Physical density: 420\nOverride density: 356\n"
    assert sh(w, "getprop ro.sf.lcd_density") == "420\n"
    bad = w.shell("wm density abc")
    assert bad.exit_code != 0 and bad.stderr.startswith(b"Error: bad number")
    assert w.shell("wm density 50").exit_code != 0
    assert sh(w, "wm density") == "Physical density: 420\nOverride density: 356\n"
    sh(w, "wm density reset")
    assert sh(w, "wm density") == "Physical density: 420\n"


def test_density_scales_every_window_and_taps_follow(world: World) -> None:
    w = world
    sh(w, "monkey -p com.android.settings 1")
    before = bounds(w, text="Network & internet")
    status_before = bounds(w, resourceId="com.android.systemui:id/clock")
    sh(w, "wm density 356")
    k = 356 / 420
    after = bounds(w, text="Network & internet")
    # rows k times as tall from the top, as wide as before (layouts are in dp)
    want = (before[0], round(before[1] * k), before[2], round(before[3] * k))
    assert all(abs(a - b) <= 1 for a, b in zip(after, want)), (before, after)
    status_after = bounds(w, resourceId="com.android.systemui:id/clock")
    assert status_after[0] == status_before[0] and abs(status_after[3] - round(status_before[3] * k)) <= 1
    # the app's window still fills the screen
    assert 'bounds="[0,0][1080,2400]"' in w.dump()
    # The dump says the same, and a tap at the element's new centre hits it.
    l, t, r, b = after
    assert f'text="Network &amp; internet"' in w.dump() and f"[{l},{t}][{r},{b}]" in w.dump()
    sh(w, f"input tap {(l + r) // 2} {(t + b) // 2}")
    assert w.rpc("exist", [sel(text="Airplane mode")])      # the Network & internet page
    # uiautomator2's selector click lands too (it taps the centre it reads).
    sh(w, "input keyevent BACK")
    assert w.rpc("click", [sel(text="Display")])
    assert w.rpc("exist", [sel(text="Dark theme")])
    # Edge gestures stay in screen coordinates: a swipe up from the physical bottom goes home.
    sh(w, "input swipe 540 2390 540 1200 100")
    assert w.top.pkg == "com.google.android.apps.nexuslauncher"


def test_density_above_physical_is_clipped_to_the_screen(world: World) -> None:
    w = world
    sh(w, "wm density 480")
    dump = w.dump()
    for l, t, r, b in re.findall(r'bounds="\[(\d+),(\d+)\]\[(\d+),(\d+)\]"', dump):
        assert 0 <= int(l) <= int(r) <= 1080 and 0 <= int(t) <= int(b) <= 2400
    x, y = center(w, text="Settings")
    w.tap(x, y)
    assert w.top.pkg == "com.android.settings"


def test_font_scale_widens_text_from_its_left_edge_and_taps_follow(world: World) -> None:
    w = world
    sh(w, "monkey -p com.android.settings 1")
    l0, t0, r0, b0 = bounds(w, text="Network & internet")
    sh(w, "settings put system font_scale 1.3")
    l1, t1, r1, b1 = bounds(w, text="Network & internet")
    assert (l1, t1, b1) == (l0, t0, b0) and r1 == min(round(l0 + (r0 - l0) * 1.3), 1080) and r1 > r0
    w.tap((l1 + r1) // 2, (t1 + b1) // 2)
    assert w.rpc("exist", [sel(text="Airplane mode")])
    sh(w, "settings put system font_scale 0.85")
    l2, _, r2, _ = bounds(w, text="Airplane mode")
    sh(w, "settings put system font_scale 1.0")
    l3, _, r3, _ = bounds(w, text="Airplane mode")
    assert l2 == l3 and r2 == l3 + round((r3 - l3) * 0.85)


def test_density_and_font_scale_together_tap_the_moved_element(world: World) -> None:
    w = world
    sh(w, "wm density 356")
    sh(w, "settings put system font_scale 1.3")
    x, y = center(w, text="Clock")
    sh(w, f"input tap {x} {y}")
    assert w.top.pkg == "com.google.android.deskclock"
    x, y = center(w, description="Add alarm")
    w.rpc("click", [x, y])
    assert w.rpc("exist", [sel(text="OK")])   # the time picker opened
    png_scaled = w.screenshot_png()
    sh(w, "wm density reset")
    sh(w, "settings put system font_scale 1.0")
    assert w.screenshot_png() != png_scaled


def test_screenshot_text_is_drawn_at_the_font_scale(world: World) -> None:
    w = world
    sh(w, "monkey -p com.android.settings 1")
    normal = w.screenshot_png()
    sh(w, "settings put system font_scale 1.3")
    assert w.screenshot_png() != normal
    sh(w, "settings put system font_scale 1.0")
    assert w.screenshot_png() == normal


def test_night_mode_draws_dark_and_keeps_the_dump(world: World) -> None:
    from io import BytesIO

    from PIL import Image, ImageStat

    w = world
    sh(w, "monkey -p com.android.settings 1")
    day, day_dump = w.screenshot_png(), w.dump()
    sh(w, "cmd uimode night yes")
    night, night_dump = w.screenshot_png(), w.dump()
    assert night_dump == day_dump and night != day

    def lum(png: bytes) -> float:
        return float(ImageStat.Stat(Image.open(BytesIO(png)).convert("L")).mean[0])
    assert lum(night) < 80 < lum(day)
    sh(w, "cmd uimode night no")
    assert w.screenshot_png() == day


# --- launcher order ----------------------------------------------------------------------------

def workspace_labels(w: World) -> list[str]:
    """The launcher's icons top row first, left to right (as a person reads the grid)."""
    icons = []
    for m in re.finditer(r'text="([^"]+)" resource-id="" class="android.widget.TextView" '
                         r'package="com.google.android.apps.nexuslauncher" content-desc="\1".*?'
                         r'bounds="\[(\d+),(\d+)\]', w.dump()):
        icons.append((int(m.group(3)), int(m.group(2)), m.group(1)))
    return [label for _, _, label in sorted(icons)]


def without_clock(dump: str) -> str:
    """uiautomator2's dump less the status bar clock, which follows wall time."""
    return re.sub(r'text="[^"]*" resource-id="com.android.systemui:id/clock"[^>]*', "clock", dump)


def home_dump(w: World) -> str:
    return w.shell("uiautomator dump /dev/tty").stdout.decode()


def test_launcher_order_seed_is_deterministic_and_varies() -> None:
    a, b = World(VirtualFS()), World(VirtualFS())
    base = workspace_labels(a)
    assert sh(a, "cmd vphone launcher-order") == "0\n"
    for w in (a, b):
        assert w.shell("cmd vphone launcher-order 7").exit_code == 0
    assert sh(a, "cmd vphone launcher-order") == "7\n"
    assert home_dump(a) == home_dump(b)                      # same seed, same phone, byte for byte
    assert without_clock(a.dump()) == without_clock(b.dump())
    seven = workspace_labels(a)
    assert sorted(seven) == sorted(base) and seven != base
    assert seven[-3:] == base[-3:] == ["Phone", "Messages", "Chrome"]     # the hotseat stays
    sh(b, "cmd vphone launcher-order 8")
    assert workspace_labels(b) != seven and sorted(workspace_labels(b)) == sorted(base)
    # An icon moved is still the app it shows.
    x, y = center(b, text="Clock")
    sh(b, f"input tap {x} {y}")
    assert b.top.pkg == "com.google.android.deskclock"
    sh(a, "cmd vphone launcher-order 0")
    assert workspace_labels(a) == base
    sh(a, "cmd vphone launcher-order 7")
    sh(a, "cmd vphone reset")
    assert workspace_labels(a) == base and sh(a, "cmd vphone launcher-order") == "0\n"


def test_vphone_command_errors() -> None:
    w = World(VirtualFS())
    for bad in ("cmd vphone", "cmd vphone launcher-order x", "cmd vphone interrupt popup 1",
                "cmd vphone interrupt rate", "cmd vphone interrupt rate -1", "cmd vphone frobnicate",
                "cmd vphone suggestions 2", "cmd vphone suggestions 4 1", "cmd vphone suggestions x 1"):
        r = w.shell(bad)
        assert r.exit_code != 0 and r.stdout == b"", bad
        assert r.stderr.decode().startswith("Error: usage: cmd vphone") and r.stderr.count(b"\n") == 1, bad


# --- Settings' suggestion cards -----------------------------------------------------------------

def settings_rows(w: World) -> list[str]:
    return [html.unescape(t) for t in re.findall(r'text="([^"]*)" resource-id="android:id/title"', w.dump())]


def test_suggestion_cards_push_settings_rows_down_and_open_nothing_that_changes_state() -> None:
    a, b = World(VirtualFS()), World(VirtualFS())
    for w in (a, b):
        sh(w, "monkey -p com.android.settings 1")
    plain = settings_rows(a)
    assert plain[0] == "Network & internet" and sh(a, "cmd vphone suggestions") == "0 0\n"
    before = observed(a)
    y_plain = center(a, text="Connected devices")[1]
    for w in (a, b):
        assert w.shell("cmd vphone suggestions 2 11").exit_code == 0
    assert sh(a, "cmd vphone suggestions") == "2 11\n"
    two = settings_rows(a)
    assert two[2:] == plain[:len(two) - 2] and "Network & internet" not in two[:2]   # two cards on top
    assert without_clock(a.dump()) == without_clock(b.dump())                          # same seed, same cards
    assert center(a, text="Connected devices")[1] > y_plain
    sh(b, "cmd vphone suggestions 2 12")
    assert settings_rows(b)[:2] != two[:2]                                              # another seed, others
    x, y = center(a, text=two[0])
    sh(a, f"input tap {x} {y}")                                                         # a card opens a page
    assert two[0] in a.dump()
    sh(a, "input keyevent 4")
    assert observed(a)[:3] == before[:3]                                                # and changes no setting
    sh(a, "cmd vphone reset")
    assert settings_rows(a) == plain and sh(a, "cmd vphone suggestions") == "0 0\n"


# --- interruptions ------------------------------------------------------------------------------

def observed(w: World) -> tuple[str, ...]:
    """What a judge reads before and after: settings, appops, the foreground package, running apps."""
    return (sh(w, "settings list system"), sh(w, "settings list secure"), sh(w, "settings list global"),
            sh(w, "dumpsys activity activities"), sh(w, "appops get com.android.settings"),
            sh(w, "dumpsys window windows"))


def test_permission_dialog_after_exactly_n_inputs_and_dismissed_without_a_trace(world: World) -> None:
    w = world
    sh(w, "monkey -p com.android.settings 1")
    assert w.shell("cmd vphone interrupt permission 3").exit_code == 0
    sh(w, "input swipe 540 1500 540 1000 100")           # 1
    sh(w, "input swipe 540 1000 540 1500 100")           # 2
    assert "Allow Settings to send you notifications?" not in w.dump()
    before = observed(w)
    x, y = center(w, text="Display")
    w.rpc("click", [x, y])                                # 3: it lands, then the dialog shows
    assert w.rpc("exist", [sel(text="Dark theme")])
    dump = home_dump(w)                                   # the active window is the dialog
    assert "Allow Settings to send you notifications?" in dump and 'text="Don\'t allow"' in dump
    assert "Dark theme" not in dump
    # Modal: a tap on the app behind does nothing, keys do not reach it.
    x, y = center(w, text="Dark theme")
    sh(w, f"input tap {x} {y}")
    assert w.rpc("exist", [sel(text="Allow")]) and w.state.dark is False
    w.rpc("click", [sel(text="Don't allow")])
    assert not w.rpc("exist", [sel(text="Allow")])
    assert observed(w)[:3] == before[:3] and sh(w, "appops get com.android.settings") == before[4]
    # One per arming.
    for _ in range(5):
        sh(w, "input swipe 540 1500 540 1200 100")
    assert not w.rpc("exist", [sel(text="Allow")])


def test_permission_allow_and_back_change_nothing(world: World) -> None:
    w = world
    sh(w, "monkey -p com.google.android.deskclock 1")
    before = observed(w)
    sh(w, "cmd vphone interrupt permission 0")
    assert w.rpc("exist", [sel(text="Allow Clock to send you notifications?")])
    w.rpc("click", [sel(text="Allow")])
    assert observed(w) == before
    sh(w, "cmd vphone interrupt permission 0")
    sh(w, "input keyevent BACK")
    assert not w.rpc("exist", [sel(text="Allow")])
    assert observed(w) == before and w.top.pkg == "com.google.android.deskclock"


def test_rate_sheet_counts_key_and_text_inputs(world: World) -> None:
    w = world
    sh(w, "am start -a android.intent.action.SENDTO -d sms:6505550123")
    sh(w, "cmd vphone interrupt rate 3")
    w.rpc("click", [sel(text="Text message")])            # 1 (focuses the field)
    sh(w, "input text hello")                             # 2
    assert not w.rpc("exist", [sel(text="Rate this app")])
    w.rpc("pressKey", ["delete"])                         # 3
    assert w.rpc("exist", [sel(text="Enjoying Messages?")]) and w.rpc("exist", [sel(text="Rate this app")])
    before = observed(w)
    sh(w, "input text more")                              # goes nowhere: the sheet has the focus
    w.rpc("pressKey", ["delete"])
    assert w.rpc("exist", [sel(text="hell")])
    w.rpc("click", [sel(text="Not now")])
    assert not w.rpc("exist", [sel(text="Rate this app")]) and observed(w) == before
    sh(w, "cmd vphone interrupt rate 0")
    w.rpc("click", [sel(text="Rate")])
    assert not w.rpc("exist", [sel(text="Rate this app")]) and observed(w) == before
    sh(w, "cmd vphone interrupt rate 0")
    w.rpc("pressKey", ["back"])
    assert not w.rpc("exist", [sel(text="Rate this app")]) and observed(w) == before


def test_heads_up_lets_taps_through_and_is_swiped_away(world: World) -> None:
    w = world
    sh(w, "monkey -p com.android.settings 1")
    sh(w, "cmd vphone interrupt headsup 1")
    w.rpc("swipe", [540, 1300, 540, 1500, 10])            # 1 (the list is at its top)
    assert w.rpc("exist", [sel(text="New from Settings")])
    assert "New from Settings" not in home_dump(w)        # not the active window
    before = observed(w)
    x, y = center(w, text="Network & internet")
    sh(w, f"input tap {x} {y}")                           # not modal: the app gets it
    assert w.rpc("exist", [sel(text="Airplane mode")]) and w.rpc("exist", [sel(text="New from Settings")])
    l, t, r, b = bounds(w, resourceId="com.android.systemui:id/expandableNotificationRow")
    sh(w, f"input tap {(l + r) // 2} {(t + b) // 2}")    # a tap on it opens nothing
    assert w.top.pkg == "com.android.settings" and w.rpc("exist", [sel(text="New from Settings")])
    sh(w, f"input swipe {(l + r) // 2} {(t + b) // 2} {(l + r) // 2} {t - 100} 100")
    assert not w.rpc("exist", [sel(text="New from Settings")])
    sh(w, "cmd vphone interrupt headsup 0")
    w.rpc("click", [sel(description="Dismiss")])
    assert not w.rpc("exist", [sel(text="New from Settings")])
    after = observed(w)
    assert after[:3] == before[:3] and after[4] == before[4]


def test_interrupt_none_and_reset_remove_it(world: World) -> None:
    w = world
    sh(w, "cmd vphone interrupt permission 0")
    assert w.rpc("exist", [sel(text="Allow Pixel Launcher to send you notifications?")])
    sh(w, "cmd vphone interrupt none")
    assert not w.rpc("exist", [sel(text="Allow")])
    sh(w, "cmd vphone interrupt rate 1")
    sh(w, "cmd vphone reset")
    sh(w, "input swipe 540 1500 540 1200 100")
    assert not w.rpc("exist", [sel(text="Rate this app")])


def test_interruption_counts_uiautomator2_inputs_once_each(u2_device, virtual_phone) -> None:
    d = u2_device
    d.shell("monkey -p com.android.settings 1")
    d.shell("cmd vphone interrupt permission 4")
    d.click(540, 1200)                                    # 1 (a row: its page opens)
    d.press("back")                                       # 2
    d.swipe(540, 1500, 540, 1000, 0.05)                   # 3
    assert not d(text="Allow").exists
    d(text="Display").click()                             # 4
    assert d(text="Allow Settings to send you notifications?").exists
    before = d.shell("settings list secure").output
    d(text="Don't allow").click()
    assert not d(text="Allow").exists and d.shell("settings list secure").output == before
    assert d.shell("cmd vphone interrupt popup 1").exit_code != 0


def test_font_scale_leaves_a_slider_and_a_field_as_wide_as_their_layout():
    """A SeekBar's text is its value: its track does not shrink with the font (a drag to the
    end of the shown track must still reach the maximum), nor does an EditText's box."""
    from virtual_phone.display import scale_text
    from virtual_phone.hierarchy import Node

    bar = Node("android.widget.SeekBar", (100, 500, 980, 600), text="102.0")
    field = Node("android.widget.EditText", (100, 700, 980, 800), text="hi")
    label = Node("android.widget.TextView", (100, 900, 500, 1000), text="Brightness")
    root = Node("android.widget.FrameLayout", (0, 0, 1080, 2400), children=[bar, field, label])
    for f in (0.85, 1.3):
        shown = scale_text(root, f)
        assert shown.children[0].bounds == bar.bounds and shown.children[1].bounds == field.bounds
        assert shown.children[2].bounds == (100, 900, 100 + round(400 * f), 1000)
