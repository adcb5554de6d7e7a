"""Median time per JSON-RPC round trip and per dump_hierarchy through the whole stack.

uiautomator2 -> adbutils -> real adb server -> virtual phone (adbd, u2 server, world), on a
private adb server port; shell and dump also through agent_host's Phone (adbutils without its
version query per stream and its 10 ms sleep per close), the ratio printed. Run:  .venv/bin/python bench/vphone_rpc.py [--n 40]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_RPC_MS = 60.0
TARGET_DUMP_MS = 100.0



def _median_ms(fn: Callable[[], object], n: int) -> tuple[float, float]:
    fn()  # warm: first calls pay for imports and caches
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=40, help="samples per measurement")
    args = ap.parse_args()

    from virtual_phone.phone import free_port

    adb_port = free_port()   # never 5037 (a developer's adb server) nor an emulator's
    os.environ["ANDROID_ADB_SERVER_PORT"] = str(adb_port)
    import adbutils
    import uiautomator2
    from uiautomator2.core import _http_request

    from virtual_phone import adb_server
    from virtual_phone.phone import VirtualPhone

    adb_server.ensure_server(adb_port)
    try:
        with VirtualPhone(adb_port=adb_port) as phone:
            t0 = time.perf_counter()
            d = uiautomator2.connect(phone.serial)
            connect_ms = (time.perf_counter() - t0) * 1000
            dev = adbutils.AdbClient(port=adb_port).device(phone.serial)

            rows: list[tuple[str, float, float, float | None]] = []
            rows.append(("adb shell echo (adbutils)", *_median_ms(lambda: dev.shell("echo x"), args.n), None))
            # agent_host's Phone: adbutils as shipped, less its version query per stream and its
            # 10 ms sleep per close (phone/device.py close_streams_at_once, remember_server_version)
            from agent_host.phone.device import Phone
            ours = Phone.connect(phone.serial)
            plain_shell = rows[-1][1]
            rows.append(("adb shell echo (agent_host Phone)", *_median_ms(lambda: ours.shell("echo x"), args.n), None))
            ratio_shell = plain_shell / rows[-1][1]
            rows.append(("HTTP GET /ping (transport only)",
                         *_median_ms(lambda: _http_request(dev, 9008, "GET", "/ping"), args.n), None))
            rows.append(("JSON-RPC round trip (deviceInfo)",
                         *_median_ms(lambda: d.jsonrpc.deviceInfo(), args.n), TARGET_RPC_MS))
            phone.u2.continue_nudge = False
            rows.append(("  same, without the 100 Continue nudge",
                         *_median_ms(lambda: d.jsonrpc.deviceInfo(), max(5, args.n // 4)), None))
            phone.u2.continue_nudge = True
            rows.append(("dump_hierarchy, home screen", *_median_ms(d.dump_hierarchy, args.n), TARGET_DUMP_MS))
            plain_dump = rows[-1][1]
            rows.append(("dump_hierarchy, home screen (agent_host Phone)", *_median_ms(ours.dump, args.n), None))
            ratio_dump = plain_dump / rows[-1][1]
            d.shell("am start -n com.android.settings/.Settings")
            size = len(d.dump_hierarchy())
            rows.append((f"dump_hierarchy, Settings ({size // 1024} KiB)",
                         *_median_ms(d.dump_hierarchy, args.n), TARGET_DUMP_MS))

            print(f"virtual phone {phone.serial} via adb server 127.0.0.1:{adb_port}; "
                  f"{args.n} samples each; u2.connect from scratch {connect_ms:.0f} ms")
            print(f"{'measurement':48} {'median':>8} {'p90':>8} {'target':>8} {'median/target':>14}")
            failed = False
            for name, med, p90, target in rows:
                if target is None:
                    print(f"{name:48} {med:7.1f}ms {p90:7.1f}ms {'-':>8} {'-':>14}")
                else:
                    ok = med <= target
                    failed |= not ok
                    print(f"{name:48} {med:7.1f}ms {p90:7.1f}ms {target:6.0f}ms "
                          f"{med / target:13.2f}{'' if ok else '  OVER'}")
            print(f"adbutils as shipped / agent_host Phone: shell {ratio_shell:.1f}x, dump {ratio_dump:.1f}x")
            return 1 if failed else 0
    finally:
        adb_server.kill_server(adb_port)


if __name__ == "__main__":
    sys.exit(main())
