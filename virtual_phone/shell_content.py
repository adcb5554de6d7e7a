"""`content query|insert|update|delete` over the contacts, SMS, call-log and calendar providers
(cmds/content formats).

`content update` changes contacts data, SMS and call-log rows (shell_columns.py: which columns,
and how each provider refuses an unknown one) and calendar events; with no --where it changes
every row, as delete deletes every row.

A provider's exception is printed as cmds/content prints it (`Error while accessing provider:AUTH`,
then the exception's first line; the stack trace is left out) and the command exits 1. AOSP's
Content.Command.execute catches the exception, so a real phone probably exits 0 there: a check
that must work on both looks at stderr, not only at the exit code.

SMS writes follow Android 4.4+: only the default SMS app may write the provider; anyone else's
insert, update or delete is silently dropped by AppOps (OP_WRITE_SMS defaults to "ignore") unless
`appops set com.android.shell WRITE_SMS allow` ran first, as scripts that seed an inbox do.
The shell holds READ_SMS, and WRITE_CALL_LOG (AndroidWorld clears the log with `content delete
--uri content://call_log/calls`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .shell_base import Commands, Out, fail, ok
from .shell_columns import CALLS, DATA, SMS, Table, fix_name
from .state import MIME_PHONE
from .telephony import SMS_DRAFT, SMS_INBOX, SMS_SENT

SMS_BOXES = {"": None, "inbox": SMS_INBOX, "sent": SMS_SENT, "draft": SMS_DRAFT}
SHELL = "com.android.shell"

CALENDAR_AUTHORITY = "content://com.android.calendar"


class ContentCommands(Commands):
    def content(self, a: list[str], i: bytes) -> Out:
        verb = a[0] if a else ""
        opts: dict[str, str] = {}
        typed: dict[str, str | None] = {}   # an `n` (null) bind is None
        k = 1
        while k < len(a):
            if a[k] == "--bind":
                name, typ, val = (a[k + 1].split(":", 2) + ["", ""])[:3]
                typed[name] = None if typ == "n" else val
                k += 2
            elif a[k].startswith("--") and k + 1 < len(a):
                opts[a[k]] = a[k + 1]
                k += 2
            else:
                k += 1
        # Inserts take binds as text, a null one as empty (what they always did).
        binds = {name: "" if v is None else v for name, v in typed.items()}
        uri = opts.get("--uri", "").rstrip("/")
        st = self.w.state
        if uri.startswith(CALENDAR_AUTHORITY) and verb == "update":
            return self._calendar_write(verb, uri, typed, opts.get("--where"))
        if uri.startswith(CALENDAR_AUTHORITY) and verb in ("insert", "delete"):
            return self._calendar_write(verb, uri, binds, opts.get("--where"))
        if verb == "update":
            return self._update(uri, typed, opts.get("--where"))
        if verb == "query" and uri.startswith("content://sms") and "--sort" not in opts:
            opts["--sort"] = "date DESC"  # Sms.DEFAULT_SORT_ORDER
        if verb == "query" and uri.startswith("content://call_log") and "--sort" not in opts:
            opts["--sort"] = "date DESC"  # CallLog.Calls.DEFAULT_SORT_ORDER
        if uri.startswith("content://sms") and verb in ("insert", "delete"):
            return self._sms_write(verb, uri, binds, opts.get("--where"))
        if uri.startswith("content://call_log") and verb in ("insert", "delete"):
            return self._call_log_write(verb, uri, binds, opts.get("--where"))
        if verb == "query":
            rows = self._query(uri)
            if rows is None:
                return fail(f"Error while accessing provider:{uri.split('/')[2] if uri.count('/') > 2 else uri}\n"
                          "java.lang.IllegalArgumentException: Unknown URI " + uri + "\n", 1)
            rows = _where(rows, opts.get("--where"))
            sort = opts.get("--sort")
            if sort:
                col, _, dirn = sort.partition(" ")
                rows.sort(key=lambda r: _sort_key(r.get(col)), reverse=dirn.strip().upper() == "DESC")
            proj = opts.get("--projection")
            cols = re.split(r"\s*:\s*", proj) if proj else None   # Content.Parser: split("[\\s]*:[\\s]*")
            if not rows:
                return ok("No result found.\n")
            out = []
            for n, r in enumerate(rows):
                keys = cols or list(r)
                out.append(f"Row: {n} " + ", ".join(f"{c}={_val(r.get(c))}" for c in keys))
            return ok("\n".join(out) + "\n")
        if verb == "insert":
            if uri.endswith("/raw_contacts"):
                st.insert_raw_contact(binds.get("account_type") or None, binds.get("account_name") or None)
                return Out()
            if uri.endswith("com.android.contacts/data"):
                st.insert_data(int(binds["raw_contact_id"]), binds.get("mimetype", ""), binds.get("data1"),
                               binds.get("data2"), binds.get("data3"))
                return Out()
            return fail(f"java.lang.IllegalArgumentException: Unknown URI {uri}\n", 1)
        if verb == "delete":
            where = opts.get("--where", "")
            if uri.endswith("/raw_contacts"):
                for r in _where(self._query(uri) or [], where or None):
                    st.delete_raw_contact(_row_id(r))
                return Out()
            if uri.endswith("com.android.contacts/data"):
                keep = {d.id for d in st.data_rows} - {_row_id(r) for r in _where(self._query(uri) or [], where)}
                st.data_rows = [d for d in st.data_rows if d.id in keep]
                return Out()
            return fail(f"java.lang.IllegalArgumentException: Unknown URI {uri}\n", 1)
        return fail("usage: content [subcommand] [options]\n", 1)

    def _calendar_write(self, verb: str, uri: str, binds: Mapping[str, str | None], where: str | None) -> Out:
        cal = self.w.state.calendar
        m = re.fullmatch(re.escape(CALENDAR_AUTHORITY) + r"/events(?:/(\d+))?", uri)
        if m is None:
            return fail(f"java.lang.IllegalArgumentException: Unknown URL {uri}\n", 1)
        if verb == "insert":
            try:
                cal.insert({name: v or "" for name, v in binds.items()})
            except ValueError as e:
                return fail(f"java.lang.IllegalArgumentException: {e}\n", 1)
            return Out()
        rows = cal.rows() if m.group(1) is None else [r for r in cal.rows() if str(r["_id"]) == m.group(1)]
        for r in _where(rows, where):
            if verb == "delete":
                cal.delete(_row_id(r))
            else:
                cal.update(_row_id(r), binds)
        return Out()

    def _update(self, uri: str, binds: dict[str, str | None], where: str | None) -> Out:
        """`content update` of contacts data, SMS or call-log rows (the calendar has its own above).

        Like delete, no --where means every row. cmds/content prints nothing on success.
        """
        table = self._table(uri)
        if table is None:
            return fail(f"java.lang.IllegalArgumentException: Unknown URI {uri}\n", 1)
        if not binds:
            # Content.Parser refuses the line before asking a provider; it prints its usage and this
            # line on stdout (and exits 0); the usage is left out here, and the exit code is 1.
            return ok("[ERROR] Bindings not specified. Did you specify --bind argument(s)?\n", 1)
        for column in binds:
            refusal = table.refusal(column)
            if refusal is not None:
                # The provider throws before it changes anything (exit code: module docstring).
                return fail(f"Error while accessing provider:{table.authority}\n{refusal}\n", 1)
        if table is SMS and not self.w.state.appop_allowed(SHELL, "WRITE_SMS", "ignore"):
            return Out()  # as for insert and delete: AppOps drops the call without a word
        ids = {_row_id(r) for r in _where(self._query(uri) or [], where)}
        for row in table.rows(self.w.state):
            if row.id in ids:
                for column, value in binds.items():
                    table.writable[column](row, value)
                if table is DATA:
                    fix_name(row, binds)
        return Out()

    def _table(self, uri: str) -> Table | None:
        if uri == "content://com.android.contacts/data":
            return DATA
        if uri.startswith("content://sms") and self._sms_box(uri)[0]:
            return SMS
        if uri == "content://call_log/calls":
            return CALLS
        return None

    def _sms_box(self, uri: str) -> tuple[bool, int | None]:
        rest = uri.removeprefix("content://sms").strip("/")
        return (rest in SMS_BOXES), SMS_BOXES.get(rest)

    def _sms_write(self, verb: str, uri: str, binds: dict[str, str], where: str | None) -> Out:
        known, box = self._sms_box(uri)
        if not known:
            return fail(f"java.lang.IllegalArgumentException: Unknown URI {uri}\n", 1)
        st = self.w.state
        if not st.appop_allowed(SHELL, "WRITE_SMS", "ignore"):
            return Out()  # AppOps MODE_IGNORED: the provider never sees the call, and nobody is told
        tel = st.telephony
        if verb == "insert":
            type_ = box if box is not None else int(binds.get("type") or SMS_INBOX)
            tel.add_sms(binds.get("address", ""), binds.get("body", ""), type_,
                        date=int(binds["date"]) if binds.get("date") else None,
                        read=int(binds["read"]) if binds.get("read") else None)
            return Out()
        doomed = {_row_id(r) for r in _where(self._query(uri) or [], where)}
        tel.sms = [m for m in tel.sms if m.id not in doomed]
        return Out()

    def _call_log_write(self, verb: str, uri: str, binds: dict[str, str], where: str | None) -> Out:
        if uri != "content://call_log/calls":
            return fail(f"java.lang.IllegalArgumentException: Unknown URI {uri}\n", 1)
        tel = self.w.state.telephony
        if verb == "insert":
            number = binds.get("number", "")
            tel.add_call(number, int(binds.get("type") or 1), date=int(binds["date"]) if binds.get("date") else None,
                         duration=int(binds.get("duration") or 0),
                         name=binds.get("name") or self.w.state.name_for_number(number),
                         new=int(binds.get("new") or 1))
            return Out()
        doomed = {_row_id(r) for r in _where(self._query(uri) or [], where)}
        tel.calls = [c for c in tel.calls if c.id not in doomed]
        return Out()

    def _query(self, uri: str) -> list[dict[str, object]] | None:
        st = self.w.state
        if uri == CALENDAR_AUTHORITY + "/events":
            return st.calendar.rows()
        if uri == CALENDAR_AUTHORITY + "/calendars":
            return [c.row() for c in st.calendar.calendars]
        if uri.startswith("content://sms"):
            known, box = self._sms_box(uri)
            if not known:
                return None
            return [m.row() for m in st.telephony.sms if box is None or m.type == box]
        if uri == "content://call_log/calls":
            return [c.row() for c in st.telephony.calls]
        if uri in ("content://com.android.contacts/data/phones", "content://contacts/phones"):
            return [{"_id": d.id, "raw_contact_id": d.raw_contact_id, "display_name": st.display_name(d.raw_contact_id),
                     "number": d.data1, "data1": d.data1, "data2": d.data2, "type": d.data2,
                     "mimetype": d.mimetype} for d in st.data_rows if d.mimetype == MIME_PHONE]
        if uri == "content://com.android.contacts/data":
            return [{"_id": d.id, "raw_contact_id": d.raw_contact_id, "mimetype": d.mimetype, "data1": d.data1,
                     "data2": d.data2, "data3": d.data3, "display_name": st.display_name(d.raw_contact_id)}
                    for d in st.data_rows]
        if uri == "content://com.android.contacts/raw_contacts":
            return [{"_id": r.id, "account_type": r.account_type, "account_name": r.account_name, "deleted": 0,
                     "display_name": st.display_name(r.id)} for r in st.raw_contacts]
        if uri in ("content://com.android.contacts/contacts", "content://contacts/people"):
            return [{"_id": r.id, "display_name": st.display_name(r.id),
                     "has_phone_number": int(any(d.raw_contact_id == r.id and d.mimetype == MIME_PHONE
                                                 for d in st.data_rows))}
                    for r in st.raw_contacts if st.display_name(r.id) is not None]
        return None


def _val(v: object) -> str:
    return "NULL" if v is None else str(v)


def _sort_key(v: object) -> tuple[int, object]:
    if isinstance(v, int):
        return (0, v)
    return (1, "" if v is None else str(v))


def _where(rows: list[dict[str, object]], where: str | None) -> list[dict[str, object]]:
    """`col=value` / `col='value'` clauses joined by AND: enough for the usual setup commands."""
    if not where:
        return rows
    out = rows
    for clause in re.split(r"\s+AND\s+", where, flags=re.I):
        m = re.fullmatch(r"\s*(\w+)\s*(=|!=|<>|>|<)\s*'?(.*?)'?\s*", clause)
        if not m:
            continue
        col, op, val = m.groups()

        def keep(r: dict[str, object], col: str = col, op: str = op, val: str = val) -> bool:
            cur = _val(r.get(col))
            if op == "=":
                return cur == val
            if op in ("!=", "<>"):
                return cur != val
            try:
                return float(cur) > float(val) if op == ">" else float(cur) < float(val)
            except ValueError:
                return False
        out = [r for r in out if keep(r)]
    return out


def _row_id(row: dict[str, object]) -> int:
    """A queried row's `_id` (an int, or its text as `content query` prints it)."""
    value = row["_id"]
    assert isinstance(value, (int, str)), value
    return int(value)
