"""Google Calendar (com.google.android.calendar): schedule list, event editor, event details.

Everything shown is read from the calendar provider (calendar_provider.py), and the editor
writes through it, so `content query --uri content://com.android.calendar/events` sees what
the screen shows. Pickers are the Material ones: a date picker with a text-input mode
("Switch to text input mode", MM/DD/YYYY), and the clock's dial time picker.
The pickers' accessibility labels ("Change to previous month", "Switch to text input mode")
are Material Components' own, as public Android UI tests select them. Google Calendar is closed source: "Add title", "Add location" and "Add description" match
public automation notes on the app; the other labels ("Create new event", "Edit event",
"Delete this event?") and the resource ids are plausible, not checked on a Pixel.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import partial

from ..calendar_provider import DAY_MS, HOUR_MS, Event, day_start, fmt_date, fmt_time, utc_ms
from ..core import App, AppHost, Dialog, Screen
from ..hierarchy import Callback, Node, SCREEN_H, SCREEN_W, clip
from .base import (
    BUTTON, EDIT_TEXT, FL, IMAGE_BUTTON, LL, NAV_TOP, RECYCLER, STATUS_H, SWITCH, TV, VIEW_GROUP, Scroll,
    confirm, popup_menu, window_frame,
)
from .clock import TimePicker

PKG = "com.google.android.calendar"
C = PKG + ":id/"
ACTIVITY = "com.android.calendar.AllInOneActivity"


def _time_range(e: Event, h24: bool) -> str:
    if e.all_day:
        return "All day"
    return f"{fmt_time(e.dtstart, h24)} – {fmt_time(e.dtend, h24)}"


class CalendarHome(Screen):
    """Schedule view: every event, soonest first, under its day's header."""

    pkg = PKG
    activity = ACTIVITY

    def __init__(self) -> None:
        super().__init__()
        self.scroll = Scroll()

    @property
    def title(self) -> str:
        return "Calendar"

    def build(self, w: AppHost) -> Node:
        top, bottom = 320, NAV_TOP
        rows: list[tuple[int, Event | None, str]] = []  # (height, event, or a day header's text)
        last_day = None
        for ev in w.state.calendar.live():
            d = day_start(ev.dtstart)
            if d != last_day:
                rows.append((110, None, time.strftime("%a, %b %d, %Y", time.gmtime(d / 1000))))
                last_day = d
            rows.append((200, ev, ""))
        self.scroll.content_h = sum(h for h, _, _ in rows) + 240
        self.scroll.viewport_h = bottom - top
        self.scroll.by(0)
        kids: list[Node] = []
        y = top - self.scroll.offset
        for h, e, header in rows:
            if y + h > top and y < bottom:
                if e is None:
                    kids.append(Node(TV, (63, y + 30, 1017, y + 100), text=header, rid=C + "day_header"))
                else:
                    kids.append(self._chip(w, e, y, h))
            y += h
        can = self.scroll.content_h > self.scroll.viewport_h
        lst = clip(Node(RECYCLER, (0, top, SCREEN_W, bottom), rid=C + "schedule_list", focusable=True,
                        scrollable=can, on_scroll=self.scroll.by if can else None, children=kids),
                   (0, top, SCREEN_W, bottom))
        bar = Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 320), rid=C + "toolbar", children=[
            Node(IMAGE_BUTTON, (0, STATUS_H, 147, 300), desc="Show Calendar List and Settings drawer",
                 clickable=True, focusable=True, on_click=lambda: None),
            Node(TV, (189, 180, 700, 270), text="Schedule", rid=C + "date_picker_text_view"),
            Node(IMAGE_BUTTON, (828, STATUS_H, 954, 300), desc="Search", clickable=True, focusable=True,
                 on_click=lambda: None)])
        body: list[Node] = [bar]
        if lst is not None:
            body.append(lst)
        if not w.state.calendar.live():
            body.append(Node(TV, (200, 1100, 880, 1170), text="Nothing planned. Tap to create.",
                             rid=C + "empty_state"))
        body.append(Node(IMAGE_BUTTON, (807, 1908, 1017, 2118), rid=C + "floating_action_button",
                         desc="Create new event", clickable=True, focusable=True,
                         on_click=lambda: w.open(EventEditor(w))))
        return window_frame([Node(FL, (0, STATUS_H, SCREEN_W, NAV_TOP), children=body)])

    def _chip(self, w: AppHost, e: Event, y: int, h: int) -> Node:
        desc = ", ".join(p for p in (e.title or "(No title)", _time_range(e, w.state.time_24h), e.location) if p)
        kids = [Node(TV, (105, y + 30, 1000, y + 95), text=e.title or "(No title)", rid=C + "title"),
                Node(TV, (105, y + 95, 1000, y + 145), text=_time_range(e, w.state.time_24h), rid=C + "time")]
        if e.location:
            kids.append(Node(TV, (105, y + 145, 1000, y + 190), text=e.location, rid=C + "location"))
        return Node(VIEW_GROUP, (63, y + 10, 1017, y + h - 10), desc=desc, clickable=True, focusable=True,
                    on_click=lambda: w.open(EventDetails(e.id)), children=kids)


class EventEditor(Screen):
    """New event, or edit an existing one; Save writes the provider row."""

    pkg = PKG
    activity = "com.google.android.calendar.event.EditEventActivity"

    def __init__(self, w: AppHost, event_id: int | None = None) -> None:
        super().__init__()
        self.event_id = event_id
        e = w.state.calendar.get(event_id) if event_id is not None else None
        if e is not None:
            self.values = {"title": e.title or "", "location": e.location or "", "description": e.description or ""}
            self.start, self.end, self.all_day = e.dtstart, e.dtend, e.all_day
            self.rrule = e.rrule
        else:
            now = w.state.clock.now_ms()
            self.start = now - now % HOUR_MS + HOUR_MS  # the next full hour, as Calendar proposes
            self.end = self.start + HOUR_MS
            self.values = {"title": "", "location": "", "description": ""}
            self.all_day = False
            self.rrule = None
        self.focus: str | None = None
        self.original = (dict(self.values), self.start, self.end, self.all_day, self.rrule)

    @property
    def title(self) -> str:
        return "Edit event" if self.event_id is not None else "New event"

    def _field(self, key: str, hint: str, y: int, h: int = 150) -> Node:
        def setter(text: str) -> None:
            self.values[key] = text
            self.focus = key

        def focus() -> None:
            self.focus = key

        return Node(EDIT_TEXT, (147, y, 1017, y + h), text=self.values[key] or hint, hint=hint, rid=C + key,
                    clickable=True, focusable=True, focused=self.focus == key, long_clickable=True,
                    on_click=focus, on_text=setter)

    def build(self, w: AppHost) -> Node:
        bar = Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 300), rid=C + "toolbar", children=[
            Node(IMAGE_BUTTON, (0, STATUS_H, 147, 300), desc="Cancel", clickable=True, focusable=True,
                 on_click=w.back),
            Node(BUTTON, (800, 160, 1017, 280), text="Save", rid=C + "save", clickable=True, focusable=True,
                 on_click=lambda: self.save(w))])
        kids: list[Node] = [self._field("title", "Add title", 330, 170)]
        y = 540
        kids.append(Node(LL, (0, y, SCREEN_W, y + 150), clickable=True, focusable=True,
                         on_click=self._toggle_all_day, children=[
                             Node(TV, (147, y + 40, 700, y + 110), text="All-day", rid=C + "all_day_label"),
                             Node(SWITCH, (870, y + 30, 996, y + 120), rid=C + "all_day_switch", checkable=True,
                                  checked=self.all_day, clickable=True, focusable=True,
                                  on_click=self._toggle_all_day)]))
        y += 170
        for which, ms in (("start", self.start), ("end", self.end)):
            label = "Start" if which == "start" else "End"
            row = [Node(TV, (147, y + 30, 640, y + 110), text=fmt_date(ms), rid=C + f"{which}_date",
                        desc=f"{label} date", clickable=True, focusable=True,
                        on_click=partial(self._pick_date, w, which))]
            if not self.all_day:
                row.append(Node(TV, (700, y + 30, 1017, y + 110), text=fmt_time(ms, w.state.time_24h), rid=C + f"{which}_time",
                                desc=f"{label} time", clickable=True, focusable=True,
                                on_click=partial(self._pick_time, w, which)))
            kids.append(Node(LL, (0, y, SCREEN_W, y + 140), children=row))
            y += 150
        kids.append(Node(LL, (0, y, SCREEN_W, y + 140), clickable=True, focusable=True,
                         on_click=lambda: self._pick_repeat(w), children=[
                             Node(TV, (147, y + 30, 1017, y + 110), text=_repeat_label(self.rrule, self.start),
                                  rid=C + "recurrence", desc="Repeat")]))
        y += 150
        y += 40
        kids.append(self._field("location", "Add location", y))
        y += 190
        kids.append(self._field("description", "Add description", y))
        form = Node(FL, (0, 300, SCREEN_W, NAV_TOP), rid=C + "edit_form", children=kids)
        return window_frame([Node(FL, (0, STATUS_H, SCREEN_W, NAV_TOP), children=[bar, form])])

    def _toggle_all_day(self) -> None:
        self.all_day = not self.all_day
        if self.all_day:
            # an end at midnight is the day before's (AOSP's EditEventView steps it back a day):
            # 23:00 to 00:00 is one all-day day, not two
            self.start = day_start(self.start)
            self.end = max(self.start + DAY_MS, day_start(self.end - 1) + DAY_MS)

    def _set(self, which: str, ms: int) -> None:
        """Moving the start keeps the duration (the end moves with it); an end before the start is refused."""
        if which == "start":
            self.end += ms - self.start
            self.start = ms
        elif ms >= self.start:
            self.end = ms

    def _pick_date(self, w: AppHost, which: str) -> None:
        cur = self.start if which == "start" else self.end
        picker = DatePicker(cur)
        self.focus = None  # the dialog's field takes the keyboard

        def ok() -> None:
            picked = picker.value()
            if picked is None:
                picker.error = "Invalid format."
                w.invalidate()
                return
            self._set(which, picked + cur % DAY_MS)
            w.close_dialog()

        w.show_dialog(Dialog(build=lambda _w: picker.build(w, ok), pkg=PKG))

    def _pick_time(self, w: AppHost, which: str) -> None:
        cur = self.start if which == "start" else self.end
        t = time.gmtime(cur / 1000)
        picker = TimePicker(t.tm_hour, t.tm_min, pkg=PKG)
        self.focus = None

        def ok() -> None:
            self._set(which, day_start(cur) + picker.hour24 * HOUR_MS + picker.minute * 60_000)
            w.close_dialog()

        w.show_dialog(Dialog(build=lambda _w: picker.build(w, ok), pkg=PKG))

    def _pick_repeat(self, w: AppHost) -> None:
        """Calendar's repeat choices: daily at the most often; Custom counts days, weeks, months
        or years (no hours), as on a Pixel."""
        def choose(rule: str | None) -> Callback:
            def f() -> None:
                self.rrule = rule
                w.close_dialog()
            return f

        def custom() -> None:
            w.close_dialog()
            w.show_dialog(Dialog(build=lambda _w: _choices("Repeats every", [
                (unit, choose(f"FREQ={freq}")) for unit, freq in
                (("day", "DAILY"), ("week", "WEEKLY"), ("month", "MONTHLY"), ("year", "YEARLY"))]), pkg=PKG))

        day = time.strftime("%A", time.gmtime(self.start / 1000))
        rules = [None, "FREQ=DAILY", f"FREQ=WEEKLY;BYDAY={day[:2].upper()}", "FREQ=MONTHLY", "FREQ=YEARLY"]
        w.show_dialog(Dialog(build=lambda _w: _choices("Repeat", [
            *((_repeat_label(r, self.start), choose(r)) for r in rules), ("Custom…", custom)],
            checked=_repeat_label(self.rrule, self.start)), pkg=PKG))

    def type_text(self, text: str) -> None:
        if self.focus is not None:
            self.values[self.focus] += text

    def delete_char(self) -> None:
        if self.focus is not None:
            self.values[self.focus] = self.values[self.focus][:-1]

    def save(self, w: AppHost) -> None:
        cal = w.state.calendar
        v = self.values
        if self.event_id is None:
            e = cal.add(1, v["title"].strip() or None, self.start, self.end, all_day=self.all_day,
                        location=v["location"].strip() or None, description=v["description"].strip() or None)
            e.rrule = self.rrule
            w.finish()
            w.open(EventDetails(e.id))
        else:
            cal.update(self.event_id, {"title": v["title"].strip() or None,
                                       "eventLocation": v["location"].strip() or None,
                                       "description": v["description"].strip() or None, "dtstart": str(self.start),
                                       "dtend": str(self.end), "allDay": "1" if self.all_day else "0",
                                       "rrule": self.rrule})
            w.finish()

    def on_back(self, w: AppHost) -> bool:
        if (self.values, self.start, self.end, self.all_day, self.rrule) == self.original:
            return False

        def discard() -> None:
            w.close_dialog()
            w.finish()

        confirm(w, "Discard changes?", "", "Discard", discard, negative="Keep editing", pkg=PKG)
        return True


def _repeat_label(rrule: str | None, start: int) -> str:
    day = time.strftime("%A", time.gmtime(start / 1000))
    freq = (rrule or "").split(";")[0]
    return {"": "Does not repeat", "FREQ=DAILY": "Every day", "FREQ=WEEKLY": f"Every week on {day}",
            "FREQ=MONTHLY": "Every month", "FREQ=YEARLY": "Every year"}.get(freq, "Custom")


def _choices(title: str, items: list[tuple[str, Callback]], checked: str = "") -> Node:
    """A single-choice list dialog (radio rows, no buttons: a tap chooses and closes)."""
    l, r = 84, 996
    top = (SCREEN_H - (126 + len(items) * 147 + 42)) // 2
    rows: list[Node] = [Node(TV, (l + 63, top + 42, r - 63, top + 124), text=title, rid="android:id/alertTitle")]
    for i, (label, action) in enumerate(items):
        y = top + 126 + i * 147
        rows.append(Node(LL, (l, y, r, y + 147), clickable=True, focusable=True, on_click=action, children=[
            Node("android.widget.CheckedTextView", (l + 63, y + 20, r - 42, y + 127), text=label,
                 rid="android:id/text1", checkable=True, checked=label == checked)]))
    bottom = top + 126 + len(items) * 147 + 42
    return Node(FL, (l, top, r, bottom), rid="android:id/content", children=rows)


class DatePicker:
    """Material date picker: a month grid with previous/next month, or a MM/DD/YYYY text field."""

    def __init__(self, ms: int) -> None:
        t = time.gmtime(ms / 1000)
        self.year, self.month, self.day = t.tm_year, t.tm_mon, t.tm_mday
        self.shown = (t.tm_year, t.tm_mon)
        self.text_mode = False
        self.text = ""
        self.error = ""

    def value(self) -> int | None:
        if not self.text_mode:
            return utc_ms(self.year, self.month, self.day)
        m = re.fullmatch(r"\s*(\d{1,2})/(\d{1,2})/(\d{4})\s*", self.text)
        if not m:
            return None
        mo, d, y = (int(g) for g in m.groups())
        try:
            time.strptime(f"{y}-{mo}-{d}", "%Y-%m-%d")  # 02/30/2027 is no date
        except ValueError:
            return None
        return utc_ms(y, mo, d)

    def _step(self, n: int) -> None:
        y, m = self.shown
        m += n
        y, m = y + (m - 1) // 12, (m - 1) % 12 + 1
        self.shown = (y, m)

    def build(self, w: AppHost, ok: Callback) -> Node:
        l, t, r, b = 63, 420, 1017, 1980
        sel = time.strftime("%b %d, %Y", time.gmtime(utc_ms(self.year, self.month, self.day) / 1000))
        kids: list[Node] = [
            Node(TV, (126, t + 50, 800, t + 110), text="Select date", rid=C + "mtrl_picker_title_text"),
            Node(TV, (126, t + 120, 800, t + 240), text=sel, rid=C + "mtrl_picker_header_selection_text"),
            Node(IMAGE_BUTTON, (850, t + 130, 975, t + 240),
                 desc="Switch to calendar input mode" if self.text_mode else "Switch to text input mode",
                 rid=C + "mtrl_picker_header_toggle", clickable=True, focusable=True, on_click=self._toggle),
        ]
        if self.text_mode:
            def setter(text: str) -> None:
                self.text = text
                self.error = ""
            kids.append(Node(EDIT_TEXT, (126, t + 320, 954, t + 470), text=self.text or "mm/dd/yyyy",
                             hint="Date", rid=C + "mtrl_picker_text_input_date", clickable=True, focusable=True,
                             focused=True, on_text=setter))
            if self.error:
                kids.append(Node(TV, (126, t + 480, 954, t + 540), text=self.error, rid=C + "textinput_error"))
        else:
            y, m = self.shown
            month_name = time.strftime("%B %Y", (y, m, 1, 0, 0, 0, 0, 1, 0))
            gy = t + 300
            kids += [Node(TV, (126, gy, 700, gy + 100), text=month_name, rid=C + "month_navigation_fragment_toggle"),
                     Node(IMAGE_BUTTON, (730, gy, 850, gy + 100), desc="Change to previous month",
                          rid=C + "month_navigation_previous", clickable=True, focusable=True,
                          on_click=lambda: self._step(-1)),
                     Node(IMAGE_BUTTON, (855, gy, 975, gy + 100), desc="Change to next month",
                          rid=C + "month_navigation_next", clickable=True, focusable=True,
                          on_click=lambda: self._step(1))]
            first_wday = time.gmtime(utc_ms(y, m, 1) / 1000).tm_wday  # Monday 0
            col0 = (first_wday + 1) % 7  # weeks start on Sunday
            days = (utc_ms(y + (m == 12), m % 12 + 1, 1) - utc_ms(y, m, 1)) // DAY_MS
            cell = 120
            cells: list[Node] = []
            for d in range(1, days + 1):
                k = col0 + d - 1
                cx, cy = 126 + (k % 7) * cell, gy + 140 + (k // 7) * cell
                full = time.strftime("%A, %B ", time.gmtime(utc_ms(y, m, d) / 1000)) + f"{d}, {y}"

                def pick(d: int = d) -> None:
                    self.year, self.month, self.day = y, m, d
                cells.append(Node(TV, (cx, cy, cx + cell, cy + cell), text=str(d), desc=full, clickable=True,
                                  focusable=True, selected=(y, m, d) == (self.year, self.month, self.day),
                                  on_click=pick))
            kids.append(Node("android.widget.GridView", (126, gy + 140, 126 + 7 * cell, gy + 140 + 6 * cell),
                             rid=C + "month_grid", children=cells))
        by = b - 168
        kids += [Node(BUTTON, (540, by, 756, by + 126), text="Cancel", rid=C + "cancel_button", clickable=True,
                      focusable=True, on_click=w.close_dialog),
                 Node(BUTTON, (777, by, 975, by + 126), text="OK", rid=C + "confirm_button", clickable=True,
                      focusable=True, on_click=ok)]
        return Node(FL, (l, t, r, b), children=[Node(FL, (l, t, r, b), rid="android:id/content", children=[
            Node(VIEW_GROUP, (l, t, r, b), rid=C + "mtrl_calendar_main_pane", children=kids)])])

    def _toggle(self) -> None:
        self.text_mode = not self.text_mode
        self.error = ""


class EventDetails(Screen):
    pkg = PKG
    activity = "com.google.android.calendar.event.EventInfoActivity"

    def __init__(self, event_id: int) -> None:
        super().__init__()
        self.event_id = event_id

    @property
    def title(self) -> str:
        return "Event"

    def build(self, w: AppHost) -> Node:
        e = w.state.calendar.get(self.event_id)
        if e is None or e.deleted:
            return window_frame([Node(FL, (0, STATUS_H, SCREEN_W, NAV_TOP), children=[
                Node(TV, (200, 1100, 880, 1170), text="This event no longer exists")])])
        bar = Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 300), rid=C + "toolbar", children=[
            Node(IMAGE_BUTTON, (0, STATUS_H, 147, 300), desc="Close", clickable=True, focusable=True,
                 on_click=w.back),
            Node(IMAGE_BUTTON, (786, STATUS_H, 912, 300), desc="Edit event", clickable=True, focusable=True,
                 on_click=lambda: w.open(EventEditor(w, self.event_id))),
            Node(IMAGE_BUTTON, (954, STATUS_H, 1080, 300), desc="More options", clickable=True, focusable=True,
                 on_click=lambda: self._menu(w))])
        when = fmt_date(e.dtstart) if e.all_day else f"{fmt_date(e.dtstart)} · {_time_range(e, w.state.time_24h)}"
        kids = [bar, Node(TV, (147, 360, 1017, 460), text=e.title or "(No title)", rid=C + "title"),
                Node(TV, (147, 480, 1017, 540), text=when, rid=C + "when_datetime")]
        y = 600
        for text, rid in ((e.location, "location"), (e.description, "description")):
            if text:
                kids.append(Node(TV, (147, y, 1017, y + 100), text=text, rid=C + rid))
                y += 130
        return window_frame([Node(FL, (0, STATUS_H, SCREEN_W, NAV_TOP), children=kids)])

    def _menu(self, w: AppHost) -> None:
        def ask_delete() -> None:
            def delete() -> None:
                w.state.calendar.delete(self.event_id)
                w.close_dialog()
                w.finish()

            confirm(w, "Delete this event?", "", "Delete", delete, pkg=PKG)

        w.show_dialog(Dialog(build=lambda _w: popup_menu([("Delete", ask_delete)]),
                             pkg=PKG))


APP = App(pkg=PKG, label="Calendar", activity="com.android.calendar.LaunchActivity", root=CalendarHome)
