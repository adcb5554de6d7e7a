"""SMS and call-log state: the rows Android's telephony and call-log providers hold.

Columns, codes and default orders follow AOSP: Telephony.Sms (TextBasedSmsColumns: type 1
inbox, 2 sent, 3 draft; read 0/1; date in epoch ms; default order "date DESC") and
CallLog.Calls (type 1 incoming, 2 outgoing, 3 missed, 5 rejected; duration in seconds;
default order "date DESC"). Threads group messages by address, as canonical_addresses does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .phone_clock import PhoneClock

SMS_INBOX, SMS_SENT, SMS_DRAFT = 1, 2, 3
CALL_INCOMING, CALL_OUTGOING, CALL_MISSED, CALL_REJECTED = 1, 2, 3, 5
# TelephonyManager.CALL_STATE_*: what `dumpsys telephony.registry` prints as mCallState.
CALL_STATE_IDLE, CALL_STATE_OFFHOOK = 0, 2


def digits(number: str) -> str:
    return re.sub(r"\D", "", number)


def same_number(a: str, b: str) -> bool:
    """PhoneNumberUtils.compare in spirit: the same digits, ignoring a leading country code 1."""
    da, db = digits(a), digits(b)
    if not da or not db:
        return False
    return da == db or (len(da) >= 10 and len(db) >= 10 and da[-10:] == db[-10:])


def format_us(number: str) -> str:
    """How Messages and Phone show a North American number: 555-0100, (650) 555-0142; others as given."""
    d = digits(number)
    if len(d) == 11 and d[0] == "1":
        d = d[1:]
    if len(d) == 10:
        return f"({d[:3]}) {d[3:6]}-{d[6:]}"
    if len(d) == 7:
        return f"{d[:3]}-{d[3:]}"
    return number


def as_you_type(number: str) -> str:
    """The keypad's formatting while digits are entered: 555, 555-0, 555-0100, (555) 010-00."""
    d = digits(number)
    if not d or d != number or len(d) > 10:
        return number
    if len(d) <= 3:
        return d
    if len(d) <= 7:
        return f"{d[:3]}-{d[3:]}"
    return f"({d[:3]}) {d[3:6]}-{d[6:]}"


@dataclass
class Sms:
    id: int
    thread_id: int
    address: str
    body: str
    type: int
    date: int  # epoch ms
    read: int = 1
    seen: int = 1
    date_sent: int = 0

    def row(self) -> dict[str, object]:
        return {"_id": self.id, "thread_id": self.thread_id, "address": self.address, "person": None,
                "date": self.date, "date_sent": self.date_sent, "protocol": 0 if self.type == SMS_INBOX else None,
                "read": self.read, "status": -1, "type": self.type, "reply_path_present": None, "subject": None,
                "body": self.body, "service_center": None, "locked": 0, "sub_id": 1, "error_code": 0,
                "creator": "com.google.android.apps.messaging", "seen": self.seen}


@dataclass
class Call:
    id: int
    number: str
    type: int
    date: int  # epoch ms
    duration: int = 0  # seconds
    name: str | None = None  # the contact's name when the call was logged (CACHED_NAME)
    new: int = 1
    is_read: int = 0

    def row(self) -> dict[str, object]:
        return {"_id": self.id, "number": self.number, "presentation": 1, "date": self.date,
                "duration": self.duration, "type": self.type, "new": self.new, "name": self.name,
                "numbertype": 2 if self.name else 0, "numberlabel": None, "countryiso": "US",
                "is_read": self.is_read, "normalized_number": None, "formatted_number": format_us(self.number)}


@dataclass
class Telephony:
    sms: list[Sms] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    next_sms_id: int = 1
    next_call_id: int = 1
    threads: dict[str, int] = field(default_factory=dict)  # canonical address digits -> thread id
    in_call: str | None = None  # the number of the ongoing call, if any
    call_started: float = 0.0
    clock: PhoneClock = field(default_factory=PhoneClock)   # DeviceState hands in the phone's

    # --- SMS ----------------------------------------------------------------------------

    def thread_id(self, address: str) -> int:
        for key, tid in self.threads.items():
            if same_number(key, address) or key == address:
                return tid
        tid = len(self.threads) + 1
        self.threads[digits(address) or address] = tid
        return tid

    def add_sms(self, address: str, body: str, type_: int, *, date: int | None = None, read: int | None = None,
                seen: int = 1) -> Sms:
        now = self.clock.now_ms() if date is None else int(date)
        msg = Sms(self.next_sms_id, self.thread_id(address), address, body, type_, now,
                  read=(1 if type_ != SMS_INBOX else 0) if read is None else read, seen=seen,
                  date_sent=now if type_ == SMS_INBOX else 0)
        self.next_sms_id += 1
        self.sms.append(msg)
        return msg

    def conversations(self) -> list[list[Sms]]:
        """Threads with their messages oldest first, the most recent thread first."""
        by: dict[int, list[Sms]] = {}
        for m in sorted(self.sms, key=lambda m: (m.date, m.id)):
            if m.type != SMS_DRAFT:
                by.setdefault(m.thread_id, []).append(m)
        return sorted(by.values(), key=lambda ms: (ms[-1].date, ms[-1].id), reverse=True)

    def thread(self, address: str) -> list[Sms]:
        tid = self.thread_id(address)
        return sorted((m for m in self.sms if m.thread_id == tid and m.type != SMS_DRAFT), key=lambda m: (m.date, m.id))

    def mark_read(self, address: str) -> None:
        tid = self.thread_id(address)
        for m in self.sms:
            if m.thread_id == tid and m.type == SMS_INBOX:
                m.read = m.seen = 1

    def delete_thread(self, thread_id: int) -> None:
        self.sms = [m for m in self.sms if m.thread_id != thread_id]

    def clear_sms(self) -> None:
        self.sms.clear()
        self.threads.clear()
        self.next_sms_id = 1

    # --- calls --------------------------------------------------------------------------

    def add_call(self, number: str, type_: int, *, date: int | None = None, duration: int = 0,
                 name: str | None = None, new: int = 1) -> Call:
        call = Call(self.next_call_id, number, type_, self.clock.now_ms() if date is None else int(date),
                    duration, name, new)
        self.next_call_id += 1
        self.calls.append(call)
        return call

    def dial(self, number: str) -> None:
        self.in_call = number
        self.call_started = self.clock.now()

    def hang_up(self, name: str | None) -> Call | None:
        """The call ends: CallLogManager logs it as outgoing, with how long it lasted."""
        if self.in_call is None:
            return None
        number, started = self.in_call, self.call_started
        self.in_call = None
        return self.add_call(number, CALL_OUTGOING, date=int(started * 1000), duration=int(self.clock.now() - started),
                             name=name, new=0)

    def clear_calls(self) -> None:
        self.calls.clear()
        self.next_call_id = 1
