"""Google Clock (com.google.android.deskclock): Alarm tab, Material time picker, alarm rows."""

from __future__ import annotations

import math
import time
from functools import partial

from ..core import App, AppHost, Dialog, Intent, Screen
from ..hierarchy import SCREEN_W, Callback, Node, clip
from ..phone_clock import clock_text
from ..state import Alarm, DeviceState
from .base import (
    BUTTON, EDIT_TEXT, FL, IMAGE_BUTTON, LL, NAV_TOP, RECYCLER, STATUS_H, SWITCH, TV, VIEW_GROUP, Category, Pref,
    Scroll, alert_dialog, lay_out_list, popup_menu, window_frame,
)


PKG = "com.google.android.deskclock"
C = PKG + ":id/"
TABS = ("Alarm", "Clock", "Timer", "Stopwatch")
ROW_H = 330
EXTRA_H = 300  # an expanded alarm shows its label and a Delete button


class Clock(Screen):
    pkg = PKG
    activity = "com.android.deskclock.DeskClock"

    def __init__(self) -> None:
        super().__init__()
        self.tab = "Alarm"
        self.scroll = Scroll()
        self.expanded: int | None = None  # the alarm whose details (label, Delete) are open

    @property
    def title(self) -> str:
        return self.tab

    def build(self, w: AppHost) -> Node:
        body = {"Alarm": self._alarms, "Clock": self._clock, "Timer": self._timer,
                "Stopwatch": self._stopwatch}[self.tab](w)
        tab_w = SCREEN_W // len(TABS)
        tabs = []
        for i, name in enumerate(TABS):
            l, t = i * tab_w, 2127
            tabs.append(Node(FL, (l, t, l + tab_w, NAV_TOP), desc=name, clickable=True, focusable=True,
                             selected=name == self.tab, on_click=partial(self._select, w, name), children=[
                                 Node("android.widget.ImageView", (l + tab_w // 2 - 40, t + 40, l + tab_w // 2 + 40,
                                                                   t + 110), rid=C + "navigation_bar_item_icon_view"),
                                 Node(TV, (l + 20, t + 120, l + tab_w - 20, t + 180), text=name,
                                      rid=C + "navigation_bar_item_large_label_view", selected=name == self.tab)]))
        top = Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 300), rid=C + "toolbar", children=[
            Node(IMAGE_BUTTON, (954, 174, 1080, 300), desc="More options", clickable=True, focusable=True,
                 on_click=lambda: self._menu(w))])
        return window_frame([Node(VIEW_GROUP, (0, 0, SCREEN_W, NAV_TOP), rid=C + "main_layout", children=[
            top, body, Node(FL, (0, 2127, SCREEN_W, NAV_TOP), rid=C + "bottom_navigation", children=tabs)])])

    def _select(self, w: AppHost, name: str) -> None:
        self.tab = name

    def _menu(self, w: AppHost) -> None:
        def settings() -> None:
            w.close_dialog()
            w.open(ClockSettings())
        noop = w.close_dialog
        w.show_dialog(Dialog(build=lambda _w: popup_menu([
            ("Screen saver", noop), ("Settings", settings), ("Send feedback", noop), ("Help", noop)]), pkg=PKG))

    def _alarms(self, w: AppHost) -> Node:
        top, bottom = 300, 2127
        alarms = list(w.state.alarms)
        if self.expanded not in {a.id for a in alarms}:
            self.expanded = None
        heights = [ROW_H + (EXTRA_H if a.id == self.expanded else 0) for a in alarms]
        self.scroll.content_h = sum(heights) + 300  # room for the FAB under the last row
        self.scroll.viewport_h = bottom - top
        self.scroll.by(0)
        rows: list[Node] = []
        y = top - self.scroll.offset
        for a, h in zip(alarms, heights):
            if y + h > top and y < bottom:
                rows.append(self._row(w, a, y + 21, h - 42))
            y += h
        can = self.scroll.content_h > self.scroll.viewport_h
        lst = clip(Node(RECYCLER, (0, top, SCREEN_W, bottom), rid=C + "alarm_recycler_view", focusable=True,
                        scrollable=can, on_scroll=self.scroll.by if can else None, children=rows),
                   (0, top, SCREEN_W, bottom))
        kids: list[Node] = [lst] if lst else []
        if not alarms:
            kids.append(Node(TV, (290, 1100, 790, 1170), text="No alarms", rid=C + "alarms_empty_view"))
        kids.append(Node(IMAGE_BUTTON, (414, 1908, 666, 2085), rid=C + "fab", desc="Add alarm", clickable=True,
                         focusable=True, on_click=lambda: self._add(w)))
        return Node(FL, (0, top, SCREEN_W, bottom), rid=C + "fragment_container", children=kids)

    def _row(self, w: AppHost, a: Alarm, t: int, h: int) -> Node:
        def toggle() -> None:
            a.enabled = not a.enabled
            w.state.update_next_alarm()

        def expand() -> None:
            self.expanded = None if self.expanded == a.id else a.id

        def delete() -> None:
            w.state.delete_alarm(a.id)
            self.expanded = None

        open_ = self.expanded == a.id
        kids = [Node(TV, (84, t + 42, 520, t + 200), text=a.label(w.state.time_24h), rid=C + "digital_clock", clickable=True,
                     on_click=expand),
                Node(TV, (84, t + 200, 600, t + 260), text="Tomorrow" if a.enabled else "Not scheduled",
                     rid=C + "upcoming_instance_label"),
                Node(SWITCH, (870, t + 90, 996, t + 170), rid=C + "onoff", checkable=True, checked=a.enabled,
                     clickable=True, focusable=True, on_click=toggle),
                Node(IMAGE_BUTTON, (870, t + 190, 996, t + 280), rid=C + "arrow",
                     desc="Collapse alarm" if open_ else "Expand alarm", clickable=True, focusable=True,
                     on_click=expand)]
        if open_:
            y = t + ROW_H - 42
            kids += [Node(TV, (84, y, 600, y + 100), text="Add label", rid=C + "edit_label", clickable=True,
                          focusable=True, on_click=lambda: None),
                     Node(BUTTON, (84, y + 130, 400, y + 230), text="Delete", rid=C + "delete", clickable=True,
                          focusable=True, on_click=delete)]
        return Node(FL, (42, t, 1038, t + h), rid=C + "alarm_item", clickable=True, focusable=True,
                    on_click=expand, children=kids)

    def _clock(self, w: AppHost) -> Node:
        t = w.state.clock.gmtime()
        return Node(FL, (0, 300, SCREEN_W, 2127), rid=C + "fragment_container", children=[
            Node(TV, (200, 600, 880, 800), text=clock_text(t.tm_hour, t.tm_min, w.state.time_24h, am_pm=False),
                 rid=C + "digital_clock"),
            Node(TV, (300, 800, 780, 860), text=time.strftime("%a, %b %d", t), rid=C + "date")])

    def _timer(self, w: AppHost) -> Node:
        return Node(FL, (0, 300, SCREEN_W, 2127), rid=C + "fragment_container", children=[
            Node(TV, (200, 500, 880, 700), text="00h 00m 00s", rid=C + "timer_setup_time")])

    def _stopwatch(self, w: AppHost) -> Node:
        return Node(FL, (0, 300, SCREEN_W, 2127), rid=C + "fragment_container", children=[
            Node(TV, (300, 800, 780, 1000), text="0:00", rid=C + "stopwatch_time_text"),
            Node(IMAGE_BUTTON, (414, 1908, 666, 2085), rid=C + "fab", desc="Start", clickable=True,
                 focusable=True, on_click=lambda: None)])

    def _add(self, w: AppHost) -> None:
        t = w.state.clock.gmtime()
        picker = TimePicker(t.tm_hour, t.tm_min)

        def ok() -> None:
            w.state.add_alarm(picker.hour24, picker.minute)
            w.close_dialog()

        w.show_dialog(Dialog(build=lambda _w: picker.build(w, ok), pkg=PKG))


SNOOZE_MINUTES = range(1, 31)   # Google Clock's Snooze length picker: 1 to 30 minutes, nothing longer


class ClockSettings(Screen):
    """Clock's Settings: the Alarms rows, Snooze length among them. Its values live in the app's
    own preferences on a real phone (no shell reads them); here in DeviceState, which `pm clear` resets."""
    pkg = PKG
    activity = "com.android.deskclock.settings.SettingsActivity"

    def __init__(self) -> None:
        super().__init__()
        self.scroll = Scroll()

    @property
    def title(self) -> str:
        return "Settings"

    def build(self, w: AppHost) -> Node:
        noop = lambda: None  # noqa: E731
        items = [Category(title="Clock"), Pref(title="Style", summary="Digital", on_click=noop),
                 Pref(title="Display time with seconds", switch=False, on_click=noop),
                 Category(title="Alarms"), Pref(title="Silence after", summary="10 minutes", on_click=noop),
                 Pref(title="Snooze length", summary=_minutes(w.state.clock_snooze_min), on_click=lambda: self._snooze(w)),
                 Pref(title="Alarm volume", on_click=noop),
                 Pref(title="Gradually increase volume", summary="Never", on_click=noop),
                 Pref(title="Start week on", summary="Sunday", on_click=noop)]
        bar = Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 300), rid=C + "toolbar", children=[
            Node(IMAGE_BUTTON, (0, STATUS_H, 147, 300), desc="Navigate up", clickable=True, focusable=True,
                 on_click=w.back),
            Node(TV, (189, 180, 700, 260), text="Settings")])
        return window_frame([bar, lay_out_list(items, 300, NAV_TOP, self.scroll)])

    def _snooze(self, w: AppHost) -> None:
        picker = {"v": w.state.clock_snooze_min}

        def step(d: int) -> None:
            picker["v"] = min(SNOOZE_MINUTES[-1], max(SNOOZE_MINUTES[0], picker["v"] + d))

        def typed(text: str) -> None:   # NumberPicker keeps a typed value only inside its range
            if text.strip().isdigit() and int(text) in SNOOZE_MINUTES:
                picker["v"] = int(text)

        def ok() -> None:
            w.state.clock_snooze_min = picker["v"]
            w.close_dialog()

        def rows(y: int) -> tuple[list[Node], int]:
            v, l, r = picker["v"], 390, 690
            kids = []
            if v > SNOOZE_MINUTES[0]:
                kids.append(Node(BUTTON, (l, y, r, y + 120), text=str(v - 1), clickable=True, focusable=True,
                                 on_click=lambda: step(-1)))
            kids.append(Node(EDIT_TEXT, (l, y + 120, r, y + 240), text=str(v), rid="android:id/numberpicker_input",
                             clickable=True, focusable=True, on_text=typed))
            if v < SNOOZE_MINUTES[-1]:
                kids.append(Node(BUTTON, (l, y + 240, r, y + 360), text=str(v + 1), clickable=True, focusable=True,
                                 on_click=lambda: step(1)))
            return [Node("android.widget.NumberPicker", (l, y, r, y + 360), scrollable=True, focusable=True,
                         on_scroll=lambda dy: step(1 if dy > 0 else -1), children=kids),
                    Node(TV, (r + 21, y + 150, r + 250, y + 210), text="minutes")], 400

        w.show_dialog(Dialog(build=lambda _w: alert_dialog(
            "Snooze length", "", [("OK", "android:id/button1", ok), ("Cancel", "android:id/button2", w.close_dialog)],
            extra=rows), pkg=PKG))


def _minutes(n: int) -> str:
    return f"{n} minute" if n == 1 else f"{n} minutes"


class TimePicker:
    """Material time picker: hour dial 1-12, then minute dial 00-55 by 5, AM/PM, OK/Cancel."""

    def __init__(self, hour24: int, minute: int, pkg: str = PKG) -> None:
        self.ids = pkg + ":id/"  # Calendar shows the same picker under its own package
        self.hour12 = hour24 % 12 or 12
        self.pm = hour24 >= 12
        self.minute = minute
        self.mode = "hour"

    @property
    def hour24(self) -> int:
        return (self.hour12 % 12) + (12 if self.pm else 0)

    def build(self, w: AppHost, ok: Callback) -> Node:
        l, t, r, b = 63, 456, 1017, 1944
        c = self.ids
        kids: list[Node] = [Node(TV, (126, t + 63, 800, t + 120), text="Select time", rid=c + "header_title")]
        hy = t + 170

        def set_mode(m: str) -> None:
            self.mode = m

        kids.append(Node(VIEW_GROUP, (126, hy, 954, hy + 240), rid=c + "material_clock_display", children=[
            Node("android.widget.Button", (126, hy, 396, hy + 240), text=str(self.hour12), rid=c + "material_hour_tv",
                 desc=f"{self.hour12} o'clock", checkable=True, checked=self.mode == "hour", clickable=True,
                 focusable=True, on_click=lambda: set_mode("hour")),
            Node(TV, (396, hy, 450, hy + 240), text=":"),
            Node("android.widget.Button", (450, hy, 720, hy + 240), text=f"{self.minute:02d}",
                 rid=c + "material_minute_tv", desc=f"{self.minute} minutes", checkable=True,
                 checked=self.mode == "minute", clickable=True, focusable=True, on_click=lambda: set_mode("minute")),
            Node(LL, (760, hy, 954, hy + 240), rid=c + "material_clock_period_toggle", children=[
                Node(BUTTON, (760, hy, 954, hy + 120), text="AM", rid=c + "material_clock_period_am_button",
                     checkable=True, checked=not self.pm, clickable=True, focusable=True,
                     on_click=lambda: setattr(self, "pm", False)),
                Node(BUTTON, (760, hy + 120, 954, hy + 240), text="PM", rid=c + "material_clock_period_pm_button",
                     checkable=True, checked=self.pm, clickable=True, focusable=True,
                     on_click=lambda: setattr(self, "pm", True))])]))
        cx, cy, rad = 540, t + 850, 330
        face: list[Node] = []
        for i in range(12):
            ang = math.radians(i * 30 - 90)
            x, y = int(cx + rad * math.cos(ang)), int(cy + rad * math.sin(ang))
            if self.mode == "hour":
                val = 12 if i == 0 else i
                label, sel = str(val), val == self.hour12

                def pick(v: int = val) -> None:
                    self.hour12 = v
                    self.mode = "minute"  # the dial moves on to minutes, as Material's does
            else:
                val = i * 5
                label, sel = f"{val:02d}", val == self.minute

                def pick(v: int = val) -> None:
                    self.minute = v
            face.append(Node(TV, (x - 60, y - 60, x + 60, y + 60), text=label, desc=label, clickable=True, focusable=True, selected=sel,
                             on_click=pick))
        # The dial comes before the header chips in child order so a text selector such as "7"
        # or "00" finds the dial item, not the chip showing the current value.
        kids.insert(1, Node(VIEW_GROUP, (cx - 420, cy - 420, cx + 420, cy + 420), rid=c + "material_clock_face",
                            children=face))
        by = b - 168
        kids.append(Node(IMAGE_BUTTON, (84, by, 210, by + 126), rid=c + "material_timepicker_mode_button",
                         desc="Switch to text input mode for the time input.", clickable=True, focusable=True,
                         on_click=lambda: None))
        kids.append(Node(BUTTON, (540, by, 756, by + 126), text="Cancel", rid=c + "material_timepicker_cancel_button",
                         clickable=True, focusable=True, on_click=w.close_dialog))
        kids.append(Node(BUTTON, (777, by, 975, by + 126), text="OK", rid=c + "material_timepicker_ok_button",
                         clickable=True, focusable=True, on_click=ok))
        return Node(FL, (l, t, r, b), children=[Node(FL, (l, t, r, b), rid="android:id/content", children=[
            Node(VIEW_GROUP, (l, t, r, b), rid=c + "material_timepicker_container", children=kids)])])


def _set_alarm(w: AppHost, intent: Intent) -> bool:
    """AlarmClock.ACTION_SET_ALARM: EXTRA_HOUR/EXTRA_MINUTES, the app opens unless EXTRA_SKIP_UI."""
    h = int(intent.extras.get("android.intent.extra.alarm.HOUR", "0"))
    m = int(intent.extras.get("android.intent.extra.alarm.MINUTES", "0"))
    w.state.add_alarm(h % 24, m % 60)
    if intent.extras.get("android.intent.extra.alarm.SKIP_UI", "false") != "true":
        w.launch(PKG)
    return True


def _show_alarms(w: AppHost, intent: Intent) -> bool:
    w.launch(PKG)
    return True


def _clear(state: DeviceState) -> None:
    """`pm clear`: the app's alarms and its preferences go."""
    state.clear_alarms()
    state.clock_snooze_min = 10


APP = App(pkg=PKG, label="Clock", activity="com.android.deskclock.DeskClock", root=Clock,
          clear=_clear,
          intents={"android.intent.action.SET_ALARM": _set_alarm, "android.intent.action.SHOW_ALARMS": _show_alarms})
