"""Messages and Phone in the virtual phone: the SMS and call-log providers as Android answers them."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from virtual_phone.adb_server import adb_command
from virtual_phone.fs import VirtualFS
from virtual_phone.world import World

SEED = ('content insert --uri content://sms/inbox --bind address:s:6505550123 '
        '--bind "body:s:Your code is 4821" --bind date:l:1700000000000')


@pytest.fixture
def w() -> World:
    return World(VirtualFS())


def sh(w: World, cmd: str) -> str:
    r = w.shell(cmd)
    return (r.stdout + r.stderr).decode()


def sel(**kw: Any) -> list[dict[str, Any]]:
    from uiautomator2._selector import Selector

    return [dict(Selector(**kw))]


def texts(w: World) -> list[str]:
    return [n.text for win in w.windows() for n in win.root.walk() if n.text]


def test_sms_writes_need_the_write_sms_appop_as_on_android_4_4_and_later(w: World) -> None:
    assert sh(w, SEED) == ""  # silently dropped: AppOps ignores the shell's write
    assert sh(w, "content query --uri content://sms/inbox") == "No result found.\n"
    sh(w, "appops set com.android.shell WRITE_SMS allow")
    sh(w, SEED)
    assert sh(w, "content query --uri content://sms/inbox --projection address:body:type:read") == (
        "Row: 0 address=6505550123, body=Your code is 4821, type=1, read=0\n")
    sh(w, "appops set com.android.shell WRITE_SMS default")
    sh(w, "content delete --uri content://sms")
    assert "Row: 0" in sh(w, "content query --uri content://sms")  # the delete was dropped too


def test_sms_query_is_newest_first_and_filters_by_box_and_where(w: World) -> None:
    sh(w, "appops set com.android.shell WRITE_SMS allow")
    sh(w, "content insert --uri content://sms/inbox --bind address:s:111 --bind body:s:old --bind date:l:1000")
    sh(w, "content insert --uri content://sms/inbox --bind address:s:111 --bind body:s:new --bind date:l:2000")
    sh(w, "content insert --uri content://sms/sent --bind address:s:222 --bind body:s:mine --bind date:l:1500")
    assert sh(w, "content query --uri content://sms/inbox --projection body") == "Row: 0 body=new\nRow: 1 body=old\n"
    assert sh(w, "content query --uri content://sms --projection body") == (
        "Row: 0 body=new\nRow: 1 body=mine\nRow: 2 body=old\n")
    assert sh(w, "content query --uri content://sms/sent --projection address:type") == "Row: 0 address=222, type=2\n"
    assert sh(w, "content query --uri content://sms/inbox --projection body --where \"body='old'\"") == "Row: 0 body=old\n"
    sh(w, "content delete --uri content://sms --where \"address='111'\"")
    assert sh(w, "content query --uri content://sms --projection body") == "Row: 0 body=mine\n"


def test_pm_clear_of_the_contacts_provider_restarts_ids_at_1(w: World) -> None:
    """Task setups insert data rows for raw_contact_id 1, 2, ... right after the clear."""
    for _ in range(2):
        sh(w, "pm clear com.android.providers.contacts")
        sh(w, "content insert --uri content://com.android.contacts/raw_contacts --bind account_type:n: "
              "--bind account_name:n:")
        sh(w, "content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:1 "
              "--bind mimetype:s:vnd.android.cursor.item/name --bind 'data1:s:Ada Lovelace'")
        sh(w, "content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:1 "
              "--bind mimetype:s:vnd.android.cursor.item/phone_v2 --bind data1:s:6505550142 --bind data2:i:2")
        assert sh(w, "content query --uri content://com.android.contacts/data/phones "
                     "--projection display_name:number") == "Row: 0 display_name=Ada Lovelace, number=6505550142\n"


def test_a_call_is_logged_when_it_ends_and_the_registry_shows_it_meanwhile(w: World) -> None:
    sh(w, "am start -a android.intent.action.DIAL -d tel:5550100")
    assert w.fg == "com.google.android.dialer" and "555-0100" in texts(w)
    w.rpc("click", sel(text="Call"))
    assert "mCallState=2" in sh(w, "dumpsys telephony.registry")
    assert sh(w, "content query --uri content://call_log/calls") == "No result found.\n"  # not yet logged
    sh(w, "input keyevent KEYCODE_ENDCALL")
    assert "mCallState=0" in sh(w, "dumpsys telephony.registry")
    assert sh(w, "content query --uri content://call_log/calls --projection number:type") == (
        "Row: 0 number=5550100, type=2\n")
    sh(w, "content delete --uri content://call_log/calls")
    assert sh(w, "content query --uri content://call_log/calls") == "No result found.\n"


def test_call_log_rows_show_in_recents_with_the_contacts_name(w: World) -> None:
    sh(w, "content insert --uri content://com.android.contacts/raw_contacts --bind account_type:n: "
          "--bind account_name:n:")
    sh(w, "content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:1 "
          "--bind mimetype:s:vnd.android.cursor.item/name --bind 'data1:s:Alan Turing'")
    sh(w, "content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:1 "
          "--bind mimetype:s:vnd.android.cursor.item/phone_v2 --bind data1:s:6505550168 --bind data2:i:2")
    sh(w, "content insert --uri content://call_log/calls --bind number:s:6505550168 --bind type:i:3 "
          "--bind date:l:1700000000000 --bind duration:i:0")
    assert "name=Alan Turing" in sh(w, "content query --uri content://call_log/calls --projection name")
    sh(w, "monkey -p com.google.android.dialer 1")
    assert "Alan Turing" in texts(w) and any(t.startswith("Missed call") for t in texts(w))
    w.rpc("click", sel(description="Call Alan Turing"))
    assert "Mobile (650) 555-0168" in texts(w)


def test_sendto_opens_the_thread_with_a_draft_that_send_delivers(w: World) -> None:
    sh(w, 'am start -a android.intent.action.SENDTO -d sms:6505550142 --es sms_body "On my way"')
    assert "On my way" in texts(w) and sh(w, "content query --uri content://sms") == "No result found.\n"
    w.rpc("click", sel(description="Send SMS"))
    assert sh(w, "content query --uri content://sms/sent --projection address:body") == (
        "Row: 0 address=6505550142, body=On my way\n")
    assert "Sent" in " ".join(texts(w))


def test_opening_a_thread_marks_it_read_and_delete_removes_only_it(w: World) -> None:
    sh(w, "appops set com.android.shell WRITE_SMS allow")
    sh(w, SEED)
    sh(w, "content insert --uri content://sms/inbox --bind address:s:2025550111 --bind body:s:WINNER "
          "--bind date:l:1700000100000")
    sh(w, "monkey -p com.google.android.apps.messaging 1")
    w.rpc("click", sel(text="(650) 555-0123"))
    assert sh(w, "content query --uri content://sms/inbox --projection address:read") == (
        "Row: 0 address=2025550111, read=0\nRow: 1 address=6505550123, read=1\n")
    w.rpc("pressKey", ["back"])
    info = w.rpc("objInfo", sel(text="(202) 555-0111"))["bounds"]
    w.rpc("click", [(info["left"] + info["right"]) // 2, (info["top"] + info["bottom"]) // 2, 600])  # long press
    w.rpc("click", sel(description="Delete"))
    assert "Delete 1 conversation?" in texts(w)
    w.rpc("click", sel(text="Delete"))
    assert sh(w, "content query --uri content://sms --projection address") == "Row: 0 address=6505550123\n"


def test_messages_through_the_real_adb_stack(virtual_phone: Any, u2_device: Any) -> None:
    d = u2_device

    def adb_shell(cmd: str) -> str:
        argv = adb_command(virtual_phone.adb_port, "-s", virtual_phone.serial, "shell", cmd)
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout

    adb_shell("appops set com.android.shell WRITE_SMS allow")
    adb_shell(SEED)
    d.app_start("com.google.android.apps.messaging")
    d(text="Start chat").click()
    d(resourceId="com.google.android.apps.messaging:id/recipient_text_view").set_text("6505550123")
    d(textContains="Send to").click()
    d(resourceId="com.google.android.apps.messaging:id/compose_message_text").set_text("4821 received")
    d(description="Send SMS").click()
    assert adb_shell("content query --uri content://sms/sent --projection address:body") == (
        "Row: 0 address=6505550123, body=4821 received\n")
    assert d(text="Your code is 4821").exists  # same thread as the seeded message
