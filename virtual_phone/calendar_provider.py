"""The calendar provider (content://com.android.calendar): calendars and events, as CalendarContract has them.

What a real phone answers, and where that is written down:
- Columns and insert rules: CalendarContract.Events (developer.android.com reference): an insert
  needs calendar_id, dtstart, eventTimezone and dtend (non-recurring); times are epoch
  milliseconds; all-day events start and end at UTC midnight.
- Delete "as an app" (the shell is not a sync adapter) only sets `deleted=1` on the row until
  the calendar syncs (same page, "Delete"), so checks filter with `--where "deleted=0"`.
- The shell may read and write it: packages/Shell/AndroidManifest.xml in frameworks/base grants
  READ_CALENDAR and WRITE_CALENDAR to the shell uid.
The calendar with _id 1 stands for the phone's first account calendar; setup commands insert
into it (`--bind calendar_id:i:1`), which a Pixel with one Google account also has.
"""

from __future__ import annotations

import calendar as _cal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from .phone_clock import time_text

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


@dataclass
class Event:
    id: int
    calendar_id: int
    title: str | None = None  # columns an insert leaves out are NULL
    dtstart: int = 0  # epoch ms
    dtend: int = 0
    all_day: bool = False
    location: str | None = None
    description: str | None = None
    timezone: str = "UTC"
    deleted: bool = False
    rrule: str | None = None  # RFC 5545 recurrence, e.g. FREQ=WEEKLY;BYDAY=FR (the editor's Repeat row)

    def row(self) -> dict[str, object]:
        return {"_id": self.id, "calendar_id": self.calendar_id, "title": self.title, "dtstart": self.dtstart,
                "dtend": self.dtend, "allDay": int(self.all_day), "eventLocation": self.location,
                "description": self.description, "eventTimezone": self.timezone, "deleted": int(self.deleted),
                "rrule": self.rrule}


@dataclass
class Calendar:
    id: int
    name: str
    account_name: str
    account_type: str = "com.google"

    def row(self) -> dict[str, object]:
        return {"_id": self.id, "name": self.name, "calendar_displayName": self.name,
                "account_name": self.account_name, "account_type": self.account_type, "visible": 1,
                "calendar_access_level": 700}   # CAL_ACCESS_OWNER: the account's own calendar


@dataclass
class CalendarStore:
    calendars: list[Calendar] = field(default_factory=lambda: [Calendar(1, "Personal", "vphone.user@gmail.com")])
    events: list[Event] = field(default_factory=list)
    next_id: int = 1

    def live(self) -> list[Event]:
        """Events the Calendar app shows: not deleted, soonest first."""
        return sorted((e for e in self.events if not e.deleted), key=lambda e: (e.dtstart, e.id))

    def get(self, event_id: int) -> Event | None:
        return next((e for e in self.events if e.id == event_id), None)

    def insert(self, values: dict[str, str]) -> Event:
        """`content insert` binds (all arrive as text): the provider's required columns are enforced."""
        for col in ("calendar_id", "dtstart", "eventTimezone"):
            if col not in values:
                raise ValueError(f"{col} is required")
        all_day = values.get("allDay", "0") in ("1", "true")
        if "dtend" not in values and "duration" not in values:
            raise ValueError("DTEND and DURATION cannot both be null for an event.")
        start = int(values["dtstart"])
        end = int(values["dtend"]) if "dtend" in values else start + HOUR_MS
        e = self.add(int(values["calendar_id"]), values.get("title"), start, end, all_day=all_day,
                     location=values.get("eventLocation"), description=values.get("description"),
                     timezone=values["eventTimezone"])
        return e

    def add(self, calendar_id: int, title: str | None, dtstart: int, dtend: int, *, all_day: bool = False,
            location: str | None = None, description: str | None = None, timezone: str = "UTC") -> Event:
        e = Event(self.next_id, calendar_id, title, dtstart, dtend, all_day, location, description,
                  "UTC" if all_day else timezone)
        self.next_id += 1
        self.events.append(e)
        return e

    def update(self, event_id: int, values: Mapping[str, str | None]) -> None:
        e = self.get(event_id)
        if e is None:
            return
        cols = {"title": "title", "eventLocation": "location", "description": "description",
                "eventTimezone": "timezone", "rrule": "rrule"}
        for col, attr in cols.items():
            if col in values:
                setattr(e, attr, values[col])
        for col in ("dtstart", "dtend"):
            if values.get(col) is not None:
                setattr(e, col, int(values[col]))  # type: ignore[arg-type]
        if values.get("allDay") is not None:
            e.all_day = values["allDay"] in ("1", "true")

    def delete(self, event_id: int) -> None:
        """An app's delete: the row stays with deleted=1 until a sync adapter removes it."""
        e = self.get(event_id)
        if e is not None:
            e.deleted = True

    def rows(self) -> list[dict[str, object]]:
        return [e.row() for e in self.events]


def utc_ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> int:
    return _cal.timegm((year, month, day, hour, minute, 0)) * 1000


def day_start(ms: int) -> int:
    return ms - ms % DAY_MS


def fmt_time(ms: int, h24: bool = False) -> str:
    """Google Calendar's times: "9:00 AM", or "09:00" on the 24-hour clock."""
    return time_text(ms, h24)


def fmt_date(ms: int) -> str:
    """Google Calendar's editor rows: "Tue, Dec 15, 2026"."""
    t = time.gmtime(ms / 1000)
    return time.strftime("%a, %b ", t) + f"{t.tm_mday}, {t.tm_year}"
