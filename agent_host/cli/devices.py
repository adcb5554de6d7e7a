"""`agent-host devices`: every phone the adb server sees, real or virtual."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass

from agent_host.errors import UserError

EPILOG = """\
examples:
  agent-host devices
  agent-host devices --json
  ANDROID_ADB_SERVER_PORT=15037 agent-host devices     ask another adb server

States are adb's: device (ready), offline, unauthorized, ...; model and Android
version are read only from phones in state "device". HELD BY names the agent-host
process driving the phone now (run, episode, tasks check-solutions, demo: one per phone).
"""


@dataclass
class DeviceRow:
    serial: str
    state: str
    model: str = ""
    android_version: str = ""
    sdk: str = ""
    held_by: str = ""      # the agent-host process driving it now (one per phone), "" when free


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("devices", help="list phones the adb server sees (serial, model, Android, state)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="one JSON array instead of a table")
    p.set_defaults(func=_run)


def list_devices() -> list[DeviceRow]:
    import adbutils

    from agent_host.runs.phone_lock import describe, holder
    from virtual_phone import adb_server

    # Ensure the server ourselves: adbutils would start one holding our stdout open.
    port = adb_server.ensure_server()
    client = adbutils.AdbClient(host="127.0.0.1", port=port)
    rows = []
    for info in client.list():
        row = DeviceRow(serial=info.serial, state=info.state)
        identity = None      # ro.serialno: a run may hold this device under another name
        if info.state == "device":
            try:
                out = client.device(info.serial).shell(
                    "getprop ro.product.model; getprop ro.build.version.release; "
                    "getprop ro.build.version.sdk; getprop ro.serialno", timeout=10)
                lines = (out.splitlines() + ["", "", "", ""])[:4]
                row.model, row.android_version, row.sdk, identity = (x.strip() for x in lines)
            except adbutils.AdbError:
                row.state = "unreachable"
        held = holder(info.serial, identity or None)
        if held is not None:
            row.held_by = describe(held)
        rows.append(row)
    return rows


def _run(args: argparse.Namespace) -> int:
    import subprocess

    import adbutils
    try:
        rows = list_devices()
    except (OSError, RuntimeError, adbutils.AdbError) as exc:
        raise UserError(f"adb server: {exc}") from None
    except subprocess.SubprocessError:  # `adb start-server` waited on a port something else holds
        import os
        port = os.environ.get("ANDROID_ADB_SERVER_PORT", "5037")
        raise UserError(f"adb server: no adb server answers on port {port} (ANDROID_ADB_SERVER_PORT), "
                        f"and one cannot start there; is another program listening on it?") from None
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return 0
    if not rows:
        print("no devices (start one with: agent-host phone start)")
        return 0
    header = ("SERIAL", "STATE", "MODEL", "ANDROID", "HELD BY")
    table = [header] + [(r.serial, r.state, r.model or "-", r.android_version or "-", r.held_by or "-")
                        for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0
