"""phone/requirements.py: each requirement read from a phone (the virtual phone over real adb),
and `{phone.*}` facts bound into a task before its steps run."""

from __future__ import annotations

import pytest

from agent_host.config.requirements import REQUIREMENTS, PhoneFacts, UnboundPhoneFact, local_epoch_ms
from agent_host.config.tasks import bind_phone, load_tasks
from agent_host.judge.checks import Judge
from agent_host.phone.device import Phone
from agent_host.phone.requirements import (adb_over_usb, bind_task, check_rows, contact_sync_accounts,
                                           installed_packages, read_phone_facts, sim_ready, writable_calendar)
from agent_host.phone.steps import run_steps


def test_a_writable_visible_calendar_is_the_lowest_id_the_shell_may_add_to():
    out = ("Row: 0 _id=1, calendar_access_level=200, visible=1, account_type=com.google\n"   # read-only (holidays)
           "Row: 1 _id=4, calendar_access_level=700, visible=0, account_type=com.google\n"   # hidden
           "Row: 2 _id=7, calendar_access_level=700, visible=1, account_type=com.google\n"
           "Row: 3 _id=9, calendar_access_level=700, visible=1, account_type=LOCAL\n")
    assert writable_calendar(out) == 7
    assert writable_calendar("No result found.\n") is None


def test_sim_state_and_adb_transport():
    assert sim_ready("READY") and sim_ready("ABSENT,READY") and not sim_ready("ABSENT") and not sim_ready("")
    assert adb_over_usb("0A281FDD4000D3") and adb_over_usb("emulator-5554") and adb_over_usb("127.0.0.1:6101")
    assert not adb_over_usb("192.168.1.20:5555")
    assert not adb_over_usb("adb-0A281FDD-x1Yz._adb-tls-connect._tcp")
    assert not adb_over_usb("lab:5037/192.168.1.20:5555") and adb_over_usb("lab:5037/0A281FDD4000D3")


def test_times_are_the_wall_clock_in_the_phones_zone():
    utc = local_epoch_ms("2026-12-15T10:00", "UTC")
    assert utc == 1797328800000
    assert local_epoch_ms("2026-12-15T10:00", "America/New_York") == utc + 5 * 3_600_000     # EST
    assert local_epoch_ms("2026-07-15T10:00", "Europe/Berlin") == local_epoch_ms("2026-07-15T08:00", "UTC")
    with pytest.raises(UnboundPhoneFact, match="unknown to this machine"):
        local_epoch_ms("2026-12-15T10:00", "Mars/Olympus")


def test_bind_phone_fills_every_part_and_refuses_a_phone_without_a_calendar():
    (task,) = load_tasks(["calendar-add-event-dentist@verify"])
    assert task.needs_phone_facts
    bound = bind_phone(task, PhoneFacts("s", calendar_id=3, timezone="America/New_York"))
    insert = next(s.command.command for s in bound.setup if "content insert" in str(s))
    assert "calendar_id:i:3" in insert and "eventTimezone:s:America/New_York" in insert
    assert f"dtstart:l:{1797328800000 + 5 * 3_600_000}" in insert
    assert str(1797328800000 + 5 * 3_600_000) in bound.check.model_dump_json()
    assert not bound.needs_phone_facts and bind_phone(bound, PhoneFacts("t")) is bound
    with pytest.raises(UnboundPhoneFact, match="calendar_account"):
        bind_phone(task, PhoneFacts("s", calendar_id=None))


# `dumpsys content` as SyncManager.dumpSyncState prints it (the account name is masked on some
# builds), cut to what matters: a Google account whose contacts sync is on, another whose
# adapter is not syncable, and an Exchange account with contacts off.
SYNC_DUMP = """\
Data connected: true
Auto sync: u0=true u10=false
Accounts: 3

Sync Status
Account XXXXXXXXX u0 com.google
=======================================================================
Authority             Syncable  Enabled  Stats  Loc  Poll  Per  Feed  User  Othr  Tot  Fail  Can  Time  Last Sync  Backoff
--------------------------------------------------------------------------------------------------------------------------
com.android.calendar  1         true     Total  0    3     0    0     0     0     3    0     0    2s    POLL SUCCESS
                                         Today                                                    0s    2024-05-01 10:00:00
com.android.contacts  1         true     Total  0    3     0    0     0     0     3    0     0    4s
Account work@example.com u0 com.android.exchange
=======================================================================
Authority             Syncable  Enabled  Stats  Loc  Poll  Per  Feed  User  Othr  Tot  Fail  Can  Time  Last Sync  Backoff
--------------------------------------------------------------------------------------------------------------------------
com.android.calendar  1         true     Total  0    0     0    0     0     0     0    0     0    0s
com.android.contacts  1         false    Total  0    0     0    0     0     0     0    0     0    0s
Account other@example.com u0 com.example (locked)
=======================================================================
Authority             Syncable  Enabled  Stats  Loc  Poll  Per  Feed  User  Othr  Tot  Fail  Can  Time  Last Sync  Backoff
--------------------------------------------------------------------------------------------------------------------------
com.android.contacts  0         true     Total  0    0     0    0     0     0     0    0     0    0s

Per Adapter History
  XXXXXXXXX/com.google u0 [com.android.contacts]
"""


def test_an_account_syncs_contacts_when_its_contacts_authority_is_syncable_and_on():
    assert contact_sync_accounts(SYNC_DUMP) == ["com.google (XXXXXXXXX)"]
    assert contact_sync_accounts(SYNC_DUMP.replace("u0=true", "u0=false")) == []    # auto-sync off
    tenth = SYNC_DUMP.replace("XXXXXXXXX u0", "XXXXXXXXX u10")    # a user whose auto-sync is off
    assert contact_sync_accounts(tenth) == []
    assert contact_sync_accounts("Data connected: true\nAccounts: 0\n\nSync Status\n\nPer Adapter History\n") == []
    assert contact_sync_accounts("") is None          # no sync status: not read, never "met"


def test_installed_packages_are_read_from_pm_list():
    assert installed_packages("package:com.android.settings\npackage:net.gsantner.markor\n") == \
        {"com.android.settings", "net.gsantner.markor"}
    facts = PhoneFacts("s", packages=frozenset({"com.android.settings"}))
    assert facts.missing(["app:com.android.settings", "app:net.gsantner.markor"]) == ["app:net.gsantner.markor"]
    assert PhoneFacts("s").missing(["app:net.gsantner.markor"]) == []    # no package list read: no app missing


def test_the_virtual_phone_meets_every_requirement(virtual_phone):
    rows = check_rows(Phone.connect(virtual_phone.serial))
    assert [r.name for r in rows if not r.met] == []
    assert [r.name for r in rows] == list(REQUIREMENTS) and len(rows) == 13
    seen = {r.name: r.seen for r in rows}
    assert seen["no_contact_sync"] == "no account syncs contacts"
    assert seen["apps_installed"].startswith("all installed: settings, clock, contacts,")


def test_an_app_the_phone_lacks_is_named_in_its_row(virtual_phone):
    phone = Phone.connect(virtual_phone.serial)
    facts = read_phone_facts(phone, apps={"settings": "com.android.settings", "markor": "org.example.markor"})
    assert not facts.met["apps_installed"]
    assert facts.seen["apps_installed"] == "not installed: markor (org.example.markor)"
    assert facts.missing(["app:org.example.markor", "app:com.android.settings"]) == ["app:org.example.markor"]


def test_a_phone_with_an_account_that_syncs_contacts_says_so(virtual_phone_factory):
    synced = virtual_phone_factory(contact_sync=True)
    facts = read_phone_facts(Phone.connect(synced.serial))
    assert facts.missing(["no_contact_sync", "calendar_account"]) == ["no_contact_sync"]
    assert facts.seen["no_contact_sync"] == "contacts sync on: com.google (vphone.user@gmail.com)"


def test_why_contacts_tasks_need_no_contact_sync(virtual_phone_factory):
    """A contacts task clears the provider and seeds raw contact 1, 2, ...: on a phone whose
    account syncs contacts, the account's contacts come back first and take those ids."""
    (task,) = load_tasks(["call-contact[0]"], variants=("base",))
    assert "no_contact_sync" in task.requires
    synced = Phone.connect(virtual_phone_factory(contact_sync=True).serial)
    run_steps(task.setup, synced)
    names = synced.shell("content query --uri content://com.android.contacts/raw_contacts "
                         "--projection _id:account_type:display_name").text
    assert "_id=1, account_type=com.google, display_name=Robin Synced" in names
    assert "Ada Lovelace" not in names      # seeded into raw contact 1, under the synced contact's name


def test_a_phone_started_without_sim_and_calendar_says_so(virtual_phone_factory):
    bare = virtual_phone_factory(sim=False, calendar_account=False)
    facts = read_phone_facts(Phone.connect(bare.serial))
    assert facts.missing(["calendar_account", "sim_sms", "sim_call", "usb_adb", "no_contact_sync"]) == \
        ["calendar_account", "sim_sms", "sim_call"]
    assert facts.calendar_id is None


def _calendar_three(fs, *, model, seed):
    from virtual_phone.calendar_provider import Calendar
    from virtual_phone.world import World
    world = World(fs, model=model, seed=seed)
    world.state.calendar.calendars = [Calendar(3, "Work", "someone@example.com")]
    return world


def test_calendar_tasks_take_the_calendar_id_from_the_provider(virtual_phone_factory):
    vp = virtual_phone_factory(world_factory=_calendar_three)
    phone = Phone.connect(vp.serial)
    for key in ["calendar-add-event-dentist@verify", "calendar-where"]:
        (task,) = load_tasks([key])
        task = bind_task(task, phone)
        run_steps(task.setup, phone)
        rows = phone.shell("content query --uri content://com.android.calendar/events "
                           "--projection calendar_id --where deleted=0").text
        assert "calendar_id=3" in rows and "calendar_id=1" not in rows
        if task.variant == "verify":   # goal_setup's event, in calendar 3, is what the check finds
            assert Judge(task).evaluate(phone).goal is True
        run_steps(task.teardown, phone)
