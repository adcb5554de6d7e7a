"""The shell commands a judge reads and changes a task's state with: toybox find and mv, and
`content update|delete|query` on the contacts data, SMS, call-log and calendar providers.

Everything goes through the real adb server and adbutils (shell v2, so stdout, stderr and the
exit code come apart as on a phone); what the apps show is read with uiautomator2.
"""

from __future__ import annotations

import hashlib
from typing import Any

import adbutils
import pytest

DOCS, DL = "/sdcard/Documents", "/sdcard/Download"
DATA = "content://com.android.contacts/data"
EV = "content://com.android.calendar/events"


@pytest.fixture
def dev(virtual_phone: Any) -> adbutils.AdbDevice:
    return adbutils.AdbClient(host="127.0.0.1", port=virtual_phone.adb_port).device(virtual_phone.serial)


def run(dev: adbutils.AdbDevice, cmd: str) -> tuple[int, str, str]:
    r = dev.shell2(cmd, v2=True)
    return r.returncode, r.stdout, r.stderr


def out(dev: adbutils.AdbDevice, cmd: str) -> str:
    code, stdout, stderr = run(dev, cmd)
    assert (code, stderr) == (0, ""), (cmd, code, stderr)
    return stdout


FILES = {f"{DOCS}/notes/todo.md": b"milk\n", f"{DOCS}/top.txt": b"top\n",
         f"{DL}/My Files/a b.txt": b"spaced\n", f"{DL}/report.pdf": b"%PDF-1.4\n"}


def _seed(dev: adbutils.AdbDevice) -> None:
    out(dev, f"mkdir -p {DOCS}/notes {DOCS}/empty '{DL}/My Files'")
    for path, data in FILES.items():
        dev.sync.push(data, path)


# --- find ------------------------------------------------------------------------------------

def test_find_lists_directories_before_their_contents_and_reports_a_missing_path(dev) -> None:
    _seed(dev)
    assert out(dev, f"find {DOCS} {DL} -mindepth 1 -type d") == (
        f"{DOCS}/empty\n{DOCS}/notes\n{DL}/My Files\n")
    assert out(dev, f"find {DOCS}") == (
        f"{DOCS}\n{DOCS}/empty\n{DOCS}/notes\n{DOCS}/notes/todo.md\n{DOCS}/top.txt\n")
    assert out(dev, f"find {DOCS}/ -maxdepth 1 -type f") == f"{DOCS}/top.txt\n"   # no "//"
    assert out(dev, f"find {DOCS} {DL} -name '*.md' -o -print 2>/dev/null; echo $?") == "1\n"
    assert out(dev, f"find /sdcard -iname 'A B.TXT'") == f"{DL}/My Files/a b.txt\n"
    code, stdout, stderr = run(dev, f"find {DOCS}/notes /sdcard/nowhere {DL} -type f")
    assert code == 1
    assert stdout == f"{DOCS}/notes/todo.md\n{DL}/My Files/a b.txt\n{DL}/report.pdf\n"
    assert stderr == "find: '/sdcard/nowhere': No such file or directory\n"


def test_find_exec_md5sum_hashes_every_file_once_names_with_spaces_intact(dev) -> None:
    _seed(dev)
    expected = "".join(f"{hashlib.md5(FILES[p]).hexdigest()}  {p}\n"
                       for p in (f"{DOCS}/notes/todo.md", f"{DOCS}/top.txt", f"{DL}/My Files/a b.txt",
                                 f"{DL}/report.pdf"))
    assert out(dev, f"find {DOCS} {DL} -type f -exec md5sum {{}} +") == expected
    assert out(dev, f"find {DOCS} {DL} -type f -exec toybox md5sum {{}} +") == expected
    assert out(dev, f"find {DOCS} {DL} -type f -exec md5sum {{}} \\;") == expected
    assert out(dev, f"find {DL} -type f -exec cat {{}} +") == "spaced\n%PDF-1.4\n"
    # `-exec ... ;` is a test: -print runs only where the command succeeded.
    assert out(dev, f"find {DOCS} -exec cat {{}} ';' -print 2>/dev/null") == (
        f"milk\n{DOCS}/notes/todo.md\ntop\n{DOCS}/top.txt\n")
    assert run(dev, f"find {DOCS} -exec nosuch {{}} +") == (
        127, "", "find: exec nosuch: No such file or directory\n")
    assert run(dev, f"find {DOCS} -exec md5sum {{}}") == (1, "", "find: -exec without \\;\n")


# --- mv --------------------------------------------------------------------------------------

def test_mv_renames_files_and_directories_keeping_their_mtimes(virtual_phone, dev) -> None:
    _seed(dev)
    virtual_phone.world.fs.write(f"{DOCS}/notes/old.md", b"x", mtime=1_700_000_000)
    assert out(dev, f"mv {DOCS}/notes {DL}") == ""                      # into an existing folder
    assert out(dev, f"stat -c %Y {DL}/notes/old.md") == "1700000000\n"
    assert out(dev, f"mv '{DL}/My Files/a b.txt' '{DL}/c d.txt' && ls {DL}") == (
        "My Files\nc d.txt\nnotes\nreport.pdf\n")
    assert out(dev, f"mv {DL}/notes {DOCS}/renamed && find {DOCS}/renamed") == (
        f"{DOCS}/renamed\n{DOCS}/renamed/old.md\n{DOCS}/renamed/todo.md\n")
    assert run(dev, f"mv {DL}/gone.txt {DOCS}/top.txt {DL}") == (
        1, "", f"mv: bad '{DL}/gone.txt': No such file or directory\n")
    assert out(dev, f"ls {DL}/top.txt") == f"{DL}/top.txt\n"              # the other source moved
    assert run(dev, f"mv {DL}/report.pdf {DL}/c\\ d.txt {DL}/top.txt") == (
        1, "", f"mv: '{DL}/top.txt' not directory\n")
    assert run(dev, f"mv {DOCS}/renamed {DOCS}/renamed/inner") == (
        1, "", f"mv: bad '{DOCS}/renamed': Invalid argument\n")


def test_apps_that_show_files_see_a_move(dev, u2_device) -> None:
    _seed(dev)
    d = u2_device
    d.app_start("com.google.android.documentsui")                       # opens in Downloads
    assert d(text="report.pdf").exists and not d(text="top.txt").exists
    out(dev, f"mv {DOCS}/top.txt {DL}/moved.txt && mv {DL}/report.pdf {DOCS}")
    assert d(text="moved.txt").exists and not d(text="report.pdf").exists
    out(dev, f"mkdir -p {DOCS}/Markor && echo hi > {DOCS}/Markor/old.md")
    d.app_start("net.gsantner.markor")
    assert d(text="old.md").exists
    out(dev, f"mv {DOCS}/Markor/old.md {DOCS}/Markor/new.md")
    assert d(text="new.md").exists and not d(text="old.md").exists


# --- content: contacts data --------------------------------------------------------------------

def _contact(dev: adbutils.AdbDevice, name: str, number: str) -> int:
    out(dev, "content insert --uri content://com.android.contacts/raw_contacts "
             "--bind account_type:n: --bind account_name:n:")
    rid = int(out(dev, "content query --uri content://com.android.contacts/raw_contacts --projection _id "
                       "--sort '_id DESC'").splitlines()[0].rsplit("=", 1)[1])
    out(dev, f"content insert --uri {DATA} --bind raw_contact_id:i:{rid} "
             f"--bind mimetype:s:vnd.android.cursor.item/name --bind 'data1:s:{name}'")
    out(dev, f"content insert --uri {DATA} --bind raw_contact_id:i:{rid} "
             f"--bind mimetype:s:vnd.android.cursor.item/phone_v2 --bind 'data1:s:{number}' --bind data2:i:2")
    return rid


def test_content_query_lists_every_data_row_values_with_commas_as_is(dev) -> None:
    _contact(dev, "Ann Lee", "555-1234")
    _contact(dev, "Lee, Bob", "555, 0100")
    assert out(dev, f"content query --uri {DATA} --projection raw_contact_id:mimetype:data1") == (
        "Row: 0 raw_contact_id=1, mimetype=vnd.android.cursor.item/name, data1=Ann Lee\n"
        "Row: 1 raw_contact_id=1, mimetype=vnd.android.cursor.item/phone_v2, data1=555-1234\n"
        "Row: 2 raw_contact_id=2, mimetype=vnd.android.cursor.item/name, data1=Lee, Bob\n"
        "Row: 3 raw_contact_id=2, mimetype=vnd.android.cursor.item/phone_v2, data1=555, 0100\n")


def test_content_update_renames_a_contact_and_changes_a_number(dev, u2_device) -> None:
    rid = _contact(dev, "Ann Lee", "555-1234")
    d = u2_device
    d.app_start("com.google.android.contacts")
    assert d(text="Ann Lee").exists
    name_row = f"raw_contact_id={rid} AND mimetype='vnd.android.cursor.item/name'"
    assert run(dev, f"content update --uri {DATA} --bind 'data1:s:Ann Smith' --where \"{name_row}\"") == (0, "", "")
    assert out(dev, f"content query --uri {DATA} --projection data1:data2:data3 --where \"{name_row}\"") == (
        "Row: 0 data1=Ann Smith, data2=Ann, data3=Smith\n")               # the name's parts follow
    assert d(text="Ann Smith").exists and not d(text="Ann Lee").exists
    out(dev, f"content update --uri {DATA} --bind data1:s:555-9999 --where \"data1='555-1234'\"")
    assert out(dev, "content query --uri content://com.android.contacts/data/phones "
                    "--projection display_name:number") == "Row: 0 display_name=Ann Smith, number=555-9999\n"


def test_content_update_refuses_a_column_the_table_lacks(dev) -> None:
    _contact(dev, "Ann Lee", "555-1234")
    assert run(dev, f"content update --uri {DATA} --bind nickname:s:x --where _id=1") == (
        1, "", "Error while accessing provider:com.android.contacts\n"
               "android.database.sqlite.SQLiteException: no such column: nickname (code 1 SQLITE_ERROR)\n")
    assert out(dev, f"content query --uri {DATA} --projection data1 --where _id=1") == "Row: 0 data1=Ann Lee\n"
    code, _, stderr = run(dev, f"content update --uri {DATA} --bind data9:s:x")
    assert code == 1 and "does not store column data9" in stderr


# --- content: SMS and call log -------------------------------------------------------------------

def _sms(dev: adbutils.AdbDevice) -> None:
    out(dev, "appops set com.android.shell WRITE_SMS allow")
    for n, body in enumerate(("first", "second", "third")):
        out(dev, f"content insert --uri content://sms/inbox --bind address:s:555010{n} "
                 f"--bind 'body:s:{body}' --bind date:l:{1_700_000_000_000 + n}")


def test_content_update_changes_an_sms_body_and_the_messages_app_shows_it(dev, u2_device) -> None:
    _sms(dev)
    assert run(dev, "content update --uri content://sms --bind 'body:s:changed, really' --where \"_id=3\"") == (
        0, "", "")
    assert out(dev, "content query --uri content://sms --projection _id:body") == (
        "Row: 0 _id=3, body=changed, really\nRow: 1 _id=2, body=second\nRow: 2 _id=1, body=first\n")
    u2_device.app_start("com.google.android.apps.messaging")
    assert u2_device(text="changed, really").exists
    assert run(dev, "content update --uri content://sms --bind colour:s:red --where _id=1") == (
        1, "", "Error while accessing provider:sms\n"
               "android.database.sqlite.SQLiteException: no such column: colour (code 1 SQLITE_ERROR)\n")
    out(dev, "appops set com.android.shell WRITE_SMS ignore")
    out(dev, "content update --uri content://sms --bind body:s:dropped")   # AppOps drops it silently
    assert "dropped" not in out(dev, "content query --uri content://sms --projection body")


def test_content_update_changes_call_log_rows(dev) -> None:
    for n in ("5550100", "5550101"):
        out(dev, f"content insert --uri content://call_log/calls --bind number:s:{n} --bind type:i:3 "
                 "--bind date:l:1700000000000")
    out(dev, "content update --uri content://call_log/calls --bind number:s:5559999 --bind type:i:1 "
             "--bind duration:i:42 --where \"number='5550101'\"")
    assert out(dev, "content query --uri content://call_log/calls --projection number:type:duration "
                    "--sort _id") == ("Row: 0 number=5550100, type=3, duration=0\n"
                                      "Row: 1 number=5559999, type=1, duration=42\n")
    assert run(dev, "content update --uri content://call_log/calls --bind bogus:i:1") == (
        1, "", "Error while accessing provider:call_log\n"
               "java.lang.IllegalArgumentException: Column 'bogus'. Is invalid.\n")


def test_content_delete_without_where_empties_sms_and_call_log(dev) -> None:
    _sms(dev)
    out(dev, "content insert --uri content://call_log/calls --bind number:s:5550100 --bind type:i:3")
    assert out(dev, "content delete --uri content://sms") == ""
    assert out(dev, "content delete --uri content://call_log/calls") == ""
    assert out(dev, "content query --uri content://sms") == "No result found.\n"
    assert out(dev, "content query --uri content://call_log/calls") == "No result found.\n"


# --- content: calendar ------------------------------------------------------------------------

def test_calendar_update_by_title_and_start_then_delete_every_event(dev, u2_device) -> None:
    for start in (1797418800000, 1797505200000):
        out(dev, f"content insert --uri {EV} --bind calendar_id:i:1 --bind eventTimezone:s:UTC "
                 f"--bind 'title:s:Team sync' --bind dtstart:l:{start} --bind dtend:l:{start + 3_600_000}")
    out(dev, f"content update --uri {EV} --bind title:s:X --bind dtstart:l:1797415200000 "
             "--where \"title='Team sync' AND dtstart=1797418800000\"")
    assert out(dev, f"content query --uri {EV} --projection title:dtstart:dtend --where deleted=0") == (
        "Row: 0 title=X, dtstart=1797415200000, dtend=1797422400000\n"
        "Row: 1 title=Team sync, dtstart=1797505200000, dtend=1797508800000\n")
    u2_device.app_start("com.google.android.calendar")
    assert u2_device(text="Team sync").exists
    assert out(dev, f"content delete --uri {EV}") == ""
    # An app's delete marks the rows deleted=1 until a sync adapter removes them (calendar_provider.py).
    assert out(dev, f"content query --uri {EV} --projection title:deleted") == (
        "Row: 0 title=X, deleted=1\nRow: 1 title=Team sync, deleted=1\n")
    assert out(dev, f"content query --uri {EV} --where deleted=0") == "No result found.\n"
    assert not u2_device(text="Team sync").exists and not u2_device(text="X").exists
