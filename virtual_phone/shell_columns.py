"""What `content update` may change in the contacts data, SMS and call-log tables, and how each provider refuses the rest.

A column is one of three kinds:
- writable here: the phone stores it, and the update changes what queries and apps show;
- a column of the real table this phone does not store (an SMS's `locked`, a data row's
  `data7`): a real phone takes the update; this one refuses it with a line saying so, rather
  than answer a later query with the old value;
- not a column of the table: refused as the provider refuses it (`unknown`).

How each provider refuses an unknown column (the first line of the exception `content` prints):
- call_log: CallLogProvider.update calls DbQueryUtils.checkForSupportedColumns, which throws
  `IllegalArgumentException: Column 'X'. Is invalid.` (the recent DbQueryUtils; older releases
  said `Column 'X' is invalid.`).
- sms and contacts data: the values reach SQLiteDatabase.update, and SQLite fails to compile the
  statement: `SQLiteException: no such column: X (code 1 SQLITE_ERROR)`. A real phone goes on with
  `: , while compiling: UPDATE ...`; that tail is left out here (its exact SQL is not known).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .state import MIME_NAME, DataRow, DeviceState
from .telephony import Call, Sms

_Setter = Callable[[object, str | None], None]


def _text(attr: str, nullable: bool = False) -> _Setter:
    def put(obj: object, v: str | None) -> None:
        # The stored SMS and call rows keep text columns as str: a null bind is stored as "".
        setattr(obj, attr, v if nullable or v is not None else "")
    return put


def _int(attr: str) -> _Setter:
    def put(obj: object, v: str | None) -> None:
        if v is None:
            raise ValueError(f"{attr} cannot be NULL on the virtual phone")
        setattr(obj, attr, int(v))
    return put


@dataclass(frozen=True)
class Table:
    authority: str                              # what `Error while accessing provider:` names
    columns: frozenset[str]                     # the real table's columns
    writable: dict[str, _Setter]
    unknown: Callable[[str], str]               # the exception line for a column the table lacks
    rows: Callable[[DeviceState], list]         # the stored rows, each with an `id`

    def refusal(self, column: str) -> str | None:
        """The exception line for binding `column`, or None when it can be written."""
        if column in self.writable:
            return None
        if column in self.columns:
            return f"java.lang.UnsupportedOperationException: the virtual phone does not store column {column}"
        return self.unknown(column)


def _no_such_column(column: str) -> str:
    return f"android.database.sqlite.SQLiteException: no such column: {column} (code 1 SQLITE_ERROR)"


def fix_name(row: DataRow, values: dict[str, str | None]) -> None:
    """StructuredNameRowHandler keeps a name row's parts and its display name in step.

    A new display name (data1) alone is split into given (data2) and family (data3) names; new
    parts alone make the display name. NameSplitter also finds prefixes, middle names and
    suffixes (data4-6), which this phone does not store: the middle of "Mary Ann Lee" is dropped.
    """
    if row.mimetype != MIME_NAME:
        return
    if "data1" in values and not {"data2", "data3"} & values.keys():
        words = (row.data1 or "").split()
        row.data2 = words[0] if words else None
        row.data3 = words[-1] if len(words) > 1 else None
    elif "data1" not in values and {"data2", "data3"} & values.keys():
        row.data1 = " ".join(p for p in (row.data2, row.data3) if p) or None


DATA = Table(
    "com.android.contacts",
    frozenset({"_id", "raw_contact_id", "mimetype", "is_primary", "is_super_primary", "is_read_only",
               "data_version", "carrier_presence", "preferred_phone_account_component_name",
               "preferred_phone_account_id", *(f"data{n}" for n in range(1, 16)),
               *(f"data_sync{n}" for n in range(1, 5))}),
    {col: _text(col, nullable=True) for col in ("data1", "data2", "data3")},
    _no_such_column,
    lambda st: st.data_rows,
)

SMS = Table(
    "sms",
    frozenset(Sms(0, 0, "", "", 1, 0).row()),
    {"address": _text("address"), "body": _text("body"), "type": _int("type"), "date": _int("date"),
     "date_sent": _int("date_sent"), "read": _int("read"), "seen": _int("seen")},
    _no_such_column,
    lambda st: st.telephony.sms,
)

CALLS = Table(
    "call_log",
    frozenset(Call(0, "", 1, 0).row()),
    {"number": _text("number"), "name": _text("name", nullable=True), "type": _int("type"),
     "date": _int("date"), "duration": _int("duration"), "new": _int("new"), "is_read": _int("is_read")},
    lambda column: f"java.lang.IllegalArgumentException: Column '{column}'. Is invalid.",
    lambda st: st.telephony.calls,
)
