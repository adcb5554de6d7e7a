"""Virtual phone: the calendar provider, toybox mv/cp/stat, and the Calendar, Files and Markor apps,
each checked both ways (what the screen does, the shell sees; what the shell sets, the screen shows)."""

from __future__ import annotations

import re
import time

import pytest

from virtual_phone.fs import VirtualFS
from virtual_phone.world import World
from test_vphone_world import sel, sh, tap_text

EV = "content://com.android.calendar/events"
INS = f"content insert --uri {EV} --bind calendar_id:i:1 --bind eventTimezone:s:UTC"
Q = f"content query --uri {EV} --projection title:dtstart:dtend:eventLocation:allDay:deleted"


@pytest.fixture
def world() -> World:
    return World(VirtualFS())


def tap_desc(w: World, desc: str) -> None:
    b = w.rpc("objInfo", [sel(description=desc)])["bounds"]
    w.rpc("click", [(b["left"] + b["right"]) // 2, (b["top"] + b["bottom"]) // 2])


def long_press_text(w: World, text: str) -> None:
    b = w.rpc("objInfo", [sel(text=text)])["bounds"]
    w.tap((b["left"] + b["right"]) // 2, (b["top"] + b["bottom"]) // 2, long=True)


# --- calendar provider -------------------------------------------------------------------------

def test_calendar_insert_requires_the_providers_columns(world: World) -> None:
    r = world.shell(f"content insert --uri {EV} --bind calendar_id:i:1 --bind dtstart:l:1000 --bind dtend:l:2000")
    assert r.exit_code == 1 and b"eventTimezone is required" in r.stderr
    r = world.shell(f"{INS} --bind dtstart:l:1000")
    assert r.exit_code == 1 and b"DTEND and DURATION cannot both be null" in r.stderr
    assert sh(world, Q) == "No result found.\n"


def test_calendar_app_delete_only_marks_the_row(world: World) -> None:
    world.shell(f"{INS} --bind 'title:s:Team sync' --bind dtstart:l:1797411600000 --bind dtend:l:1797415200000")
    world.shell(f"{INS} --bind 'title:s:Lunch' --bind dtstart:l:1797516000000 --bind dtend:l:1797519600000")
    world.shell(f"content delete --uri {EV} --where \"title='Team sync' AND dtstart=1797411600000\"")
    assert sh(world, Q) == ("Row: 0 title=Team sync, dtstart=1797411600000, dtend=1797415200000, eventLocation=NULL, "
                            "allDay=0, deleted=1\n"
                            "Row: 1 title=Lunch, dtstart=1797516000000, dtend=1797519600000, eventLocation=NULL, "
                            "allDay=0, deleted=0\n")
    assert sh(world, f"{Q} --where \"deleted=0\"").count("Row:") == 1
    world.shell(f"content update --uri {EV}/2 --bind 'eventLocation:s:Canteen'")
    assert "eventLocation=Canteen" in sh(world, f"{Q} --where \"title='Lunch'\"")
    assert world.shell(f"content insert --uri {EV}/attendees --bind x:s:y").exit_code == 1


def test_pm_clear_calendar_provider_wipes_events(world: World) -> None:
    world.shell(f"{INS} --bind 'title:s:X' --bind dtstart:l:0 --bind dtend:l:1")
    assert sh(world, "pm clear com.android.providers.calendar") == "Success\n"
    assert sh(world, Q) == "No result found.\n"


# --- toybox file tools ---------------------------------------------------------------------

def test_mv_cp_stat(world: World) -> None:
    world.shell("mkdir -p /sdcard/Download/sub /sdcard/Documents && echo hi > /sdcard/Download/a.txt")
    assert sh(world, "stat -c '%n %s %F' /sdcard/Download/a.txt") == "/sdcard/Download/a.txt 3 regular file\n"
    assert sh(world, "stat -c %F /sdcard/Download/sub") == "directory\n"
    world.shell("touch /sdcard/Download/empty")
    assert sh(world, "stat -c %F /sdcard/Download/empty") == "regular empty file\n"
    r = world.shell("stat /sdcard/nope")
    assert r.exit_code == 1 and r.stderr == b"stat: '/sdcard/nope': No such file or directory\n"
    assert world.shell("mv /sdcard/Download/a.txt /sdcard/Documents").exit_code == 0
    assert sh(world, "ls /sdcard/Documents") == "a.txt\n"
    assert world.shell("ls /sdcard/Download/a.txt").exit_code == 1
    world.shell("echo x > /sdcard/Download/sub/b.txt && mv /sdcard/Download/sub /sdcard/Documents/moved")
    assert sh(world, "cat /sdcard/Documents/moved/b.txt") == "x\n"
    assert world.shell("cp /sdcard/Documents/moved /sdcard/copy").exit_code == 1  # a directory needs -r
    assert world.shell("cp -r /sdcard/Documents/moved /sdcard/copy").exit_code == 0
    assert sh(world, "cat /sdcard/copy/b.txt /sdcard/Documents/moved/b.txt") == "x\nx\n"
    assert world.shell("mv /sdcard/copy /sdcard/copy/inside").exit_code == 1
    assert world.shell("mv /sdcard/missing /sdcard/x").exit_code == 1


# --- Calendar app ----------------------------------------------------------------------------

def test_calendar_editor_writes_the_provider_and_keeps_the_duration(world: World) -> None:
    world.shell("monkey -p com.google.android.calendar -c android.intent.category.LAUNCHER 1")
    assert world.rpc("exist", [sel(text="Nothing planned. Tap to create.")])
    tap_desc(world, "Create new event")
    world.rpc("setText", [sel(text="Add title"), "Dentist"])
    tap_desc(world, "Start date")
    tap_desc(world, "Switch to text input mode")
    world.rpc("setText", [sel(text="mm/dd/yyyy"), "13/45/2026"])
    tap_text(world, "OK")
    assert world.rpc("exist", [sel(text="Invalid format.")])  # the dialog stays
    world.rpc("setText", [sel(text="13/45/2026"), "12/15/2026"])
    tap_text(world, "OK")
    tap_desc(world, "Start time")
    for t in ("10", "30", "AM", "OK"):
        tap_text(world, t)
    # The end moved with the start: one hour later, the default length.
    assert world.rpc("objInfo", [sel(description="End time")])["text"] == "11:30 AM"
    tap_text(world, "Save")
    assert sh(world, f"{Q} --where \"deleted=0\"") == (
        "Row: 0 title=Dentist, dtstart=1797330600000, dtend=1797334200000, eventLocation=NULL, allDay=0, "
        "deleted=0\n")
    assert world.rpc("exist", [sel(text="Tue, Dec 15, 2026 · 10:30 AM – 11:30 AM")])


@pytest.mark.parametrize("now", ["2026-12-06 09:10", "2026-12-06 22:38", "2026-12-06 23:00", "2026-12-06 23:59"])
def test_an_all_day_event_made_late_in_the_day_is_one_day_long(world: World, now: str) -> None:
    """Calendar proposes the next full hour for an hour: after 22:00 that is 23:00 to 00:00, and
    an end at midnight is the day before's (AOSP's EditEventView moves it back a day when All-day
    is switched on). The virtual phone made such events two days long, so the shipped
    calendar-all-day solutions failed every evening from 22:00 UTC."""
    import calendar

    world.state.clock.set(calendar.timegm(time.strptime(now, "%Y-%m-%d %H:%M")))
    world.shell("monkey -p com.google.android.calendar -c android.intent.category.LAUNCHER 1")
    tap_desc(world, "Create new event")
    world.rpc("setText", [sel(text="Add title"), "Holiday"])
    tap_text(world, "All-day")
    tap_desc(world, "Start date")
    tap_desc(world, "Switch to text input mode")
    world.rpc("setText", [sel(text="mm/dd/yyyy"), "12/24/2026"])
    tap_text(world, "OK")
    tap_text(world, "Save")
    assert sh(world, f"{Q} --where \"deleted=0\"") == (
        "Row: 0 title=Holiday, dtstart=1798070400000, dtend=1798156800000, eventLocation=NULL, allDay=1, "
        "deleted=0\n")


def test_calendar_shows_shell_events_and_deletes_through_the_menu(world: World) -> None:
    world.shell(f"{INS} --bind 'title:s:Book club' --bind dtstart:l:1797616800000 --bind dtend:l:1797620400000 "
                "--bind 'eventLocation:s:Maple Cafe'")
    world.shell("monkey -p com.google.android.calendar -c android.intent.category.LAUNCHER 1")
    assert world.rpc("exist", [sel(text="Fri, Dec 18, 2026")])
    tap_text(world, "Book club")
    assert world.rpc("exist", [sel(text="Maple Cafe")])
    tap_desc(world, "More options")
    tap_text(world, "Delete")
    assert world.rpc("exist", [sel(text="Delete this event?")])
    tap_text(world, "Delete")
    assert "deleted=1" in sh(world, Q)
    assert world.rpc("exist", [sel(text="Nothing planned. Tap to create.")])


# --- Files app -----------------------------------------------------------------------------

def test_files_rename_refuses_an_existing_name_and_move_picks_a_folder(world: World) -> None:
    world.shell("mkdir -p /sdcard/Download /sdcard/Documents && echo a > /sdcard/Download/a.pdf "
                "&& echo b > /sdcard/Download/b.pdf")
    world.shell("monkey -p com.google.android.documentsui -c android.intent.category.LAUNCHER 1")
    assert world.rpc("exist", [sel(text="a.pdf")]) and world.rpc("exist", [sel(text="b.pdf")])
    long_press_text(world, "a.pdf")
    assert world.rpc("exist", [sel(text="1 selected")])
    tap_desc(world, "More options")
    tap_text(world, "Rename")
    world.rpc("setText", [sel(resourceId="com.google.android.documentsui:id/input"), "b.pdf"])
    tap_text(world, "OK")
    assert world.rpc("exist", [sel(text="A file with this name already exists.")])
    world.rpc("setText", [sel(resourceId="com.google.android.documentsui:id/input"), "c.pdf"])
    tap_text(world, "OK")
    assert sh(world, "ls /sdcard/Download") == "b.pdf\nc.pdf\n"
    long_press_text(world, "b.pdf")
    tap_desc(world, "More options")
    tap_text(world, "Move to…")
    assert world.rpc("exist", [sel(text="Move to")])
    tap_text(world, "Documents")
    tap_text(world, "Move")
    assert sh(world, "ls /sdcard/Documents") == "b.pdf\n"
    assert not world.rpc("exist", [sel(text="b.pdf")])  # gone from the Downloads list too
    world.shell("mkdir -p /sdcard/Download/old")
    long_press_text(world, "c.pdf")
    tap_text(world, "old")  # in selection mode a tap selects
    tap_desc(world, "Delete")
    assert world.rpc("exist", [sel(text="Delete 2 items?")])
    tap_text(world, "Cancel")
    tap_text(world, "c.pdf")
    tap_desc(world, "Delete")
    assert world.rpc("exist", [sel(text='Delete folder "old" and its contents?')])


# --- Markor ----------------------------------------------------------------------------------

def test_markor_new_note_saves_on_back_and_only_when_changed(world: World) -> None:
    world.shell("monkey -p net.gsantner.markor -c android.intent.category.LAUNCHER 1")
    world.dump()  # the first screen Markor draws makes its notebook folder
    assert sh(world, "stat -c %F /sdcard/Documents/Markor") == "directory\n"
    tap_desc(world, "Create a new file or folder")
    world.rpc("setText", [sel(resourceId="net.gsantner.markor:id/new_file_dialog__name"), "groceries"])
    tap_text(world, "OK")
    editor = sel(resourceId="net.gsantner.markor:id/document__fragment__edit__highlighting_editor")
    world.rpc("setText", [editor, "apples"])
    world.rpc("pressKey", ["back"])
    assert sh(world, "cat /sdcard/Documents/Markor/groceries.md") == "apples"
    world.fs.write("/sdcard/Documents/Markor/groceries.md", b"apples", mtime=1000)
    tap_text(world, "groceries.md")
    world.rpc("pressKey", ["back"])  # nothing typed: the file is not rewritten
    assert sh(world, "stat -c %Y /sdcard/Documents/Markor/groceries.md") == "1000\n"
    tap_text(world, "groceries.md")
    world.rpc("setText", [editor, "apples\npears"])
    world.rpc("pressKey", ["home"])  # leaving the app saves too
    assert sh(world, "cat /sdcard/Documents/Markor/groceries.md") == "apples\npears"
    world.shell("monkey -p net.gsantner.markor -c android.intent.category.LAUNCHER 1")
    world.rpc("pressKey", ["back"])
    tap_desc(world, "Create a new file or folder")
    world.rpc("setText", [sel(resourceId="net.gsantner.markor:id/new_file_dialog__name"), "Archive"])
    tap_text(world, "Folder")
    assert sh(world, "stat -c %F /sdcard/Documents/Markor/Archive") == "directory\n"


def test_calendar_date_picker_month_grid(world: World) -> None:
    world.shell("monkey -p com.google.android.calendar -c android.intent.category.LAUNCHER 1")
    tap_desc(world, "Create new event")
    tap_desc(world, "Start date")
    shown = world.rpc("objInfo", [sel(resourceId="com.google.android.calendar:id/month_navigation_fragment_toggle")])
    tap_desc(world, "Change to next month")
    tap_desc(world, "Change to next month")
    tap_desc(world, "Change to previous month")
    nxt = world.rpc("objInfo", [sel(resourceId="com.google.android.calendar:id/month_navigation_fragment_toggle")])
    assert nxt["text"] != shown["text"]
    nm, ny = nxt["text"].split()
    cell = world.rpc("objInfo", [sel(text="28")])  # every month has a 28th
    assert cell["contentDescription"].endswith(f"{nm} 28, {ny}")
    tap_text(world, "28")
    tap_text(world, "OK")
    start = world.rpc("objInfo", [sel(description="Start date")])["text"]
    assert start.endswith(f" 28, {ny}") and nm[:3] in start
    tap_text(world, "Save")
    row = sh(world, f"content query --uri {EV} --projection dtstart:dtend")
    start_ms, end_ms = (int(v) for v in re.findall(r"=(\d+)", row))
    assert end_ms - start_ms == 3_600_000  # the end moved with the start: still one hour
    assert time.gmtime(start_ms / 1000).tm_mday == 28
