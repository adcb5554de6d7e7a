"""State commands: settings, svc, cmd, dumpsys, wm, answering as Android 14 does."""

from __future__ import annotations

import time

from .apps.interruptions import KINDS as INTERRUPTIONS
from .apps.settings import SUGGESTIONS_MAX
from .shell_base import Commands, Out, fail, ok

_VPHONE_USAGE = ("usage: cmd vphone launcher-order [SEED] | interrupt permission|rate|headsup AFTER | "
                 "interrupt none | suggestions [N SEED] | reset")


def _fmt_duration(ms: int) -> str:
    """android.util.TimeUtils.formatDuration, e.g. +10h45m19s877ms."""
    sign = "+" if ms >= 0 else "-"
    ms = abs(ms)
    d, rem = divmod(ms, 86400000)
    h, rem = divmod(rem, 3600000)
    m, rem = divmod(rem, 60000)
    s, milli = divmod(rem, 1000)
    out = sign
    for v, u in ((d, "d"), (h, "h"), (m, "m"), (s, "s")):
        if v or (out != sign):
            out += f"{v}{u}"
    return out + f"{milli}ms"


def _fmt_time(ms: int) -> str:
    t = time.gmtime(ms / 1000)
    return time.strftime("%Y-%m-%d %H:%M:%S", t) + f".{ms % 1000:03d}"


_SYNC_COLUMNS = ("Authority", "Syncable", "Enabled", "Stats", "Loc", "Poll", "Per", "Feed", "User", "Othr",
                 "Tot", "Fail", "Can", "Time", "Last Sync", "Backoff")


def _print_table(rows: list[list[str]]) -> str:
    """SyncManager.PrintTable.writeTo: each column padded to its widest cell, two spaces after
    every cell, a dashed rule under the header; the last column unpadded."""
    cols = len(rows[0])
    widths = [max(len(r[c]) for r in rows) for c in range(cols)]

    def line(r: list[str]) -> str:
        return "".join((cell if c == cols - 1 else cell.ljust(widths[c])) + "  " for c, cell in enumerate(r)) + "\n"
    return line(rows[0]) + "-" * (sum(widths) + (cols - 1) * 2) + "\n" + "".join(line(r) for r in rows[1:])


class StateCommands(Commands):
    def settings(self, a: list[str], i: bytes) -> Out:
        a = [x for x in a if x not in ("--user", "current", "0")] if "--user" in a else a
        if len(a) < 2:
            return fail("usage: settings [--user <USER_ID> | current] get namespace key\n", 1)
        verb, table = a[0], a[1]
        if table not in ("global", "system", "secure"):
            return fail(f"Invalid namespace '{table}'\n", 255)
        st = self.w.state
        if verb == "get":
            v = st.get(table, a[2])
            return ok(("null" if v is None else v) + "\n")
        if verb == "put":
            key, value = a[2], a[3]
            if table == "global" and key == "zen_mode":
                return Out()  # ZenModeHelper reverts direct writes; use `cmd notification set_dnd`
            st.put(table, key, value)
            return Out()
        if verb == "delete":
            return ok(f"Deleted {1 if st.delete(table, a[2]) else 0} rows\n")
        if verb == "list":
            return ok("".join(f"{k}={v}\n" for k, v in sorted(st.tables[table].items())))
        return fail(f"Invalid command: {verb}\n", 255)

    def svc(self, a: list[str], i: bytes) -> Out:
        what, verb = a[0], a[1] if len(a) > 1 else ""
        if verb not in ("enable", "disable"):
            return ok(f"Control the {what} manager\n\nusage: svc {what} [enable|disable]\n")
        on = verb == "enable"
        if what == "wifi":
            self.w.state.set_wifi(on)
        elif what == "bluetooth":
            self.w.state.set_bluetooth(on)
        elif what == "data":
            self.w.state.put("global", "mobile_data", "1" if on else "0")
        return Out()

    def cmd(self, a: list[str], i: bytes) -> Out:
        if not a:
            return fail("cmd: No service specified; use -l to list all running services.\n", 255)
        svc, rest = a[0], a[1:]
        st = self.w.state
        if svc == "wifi":
            if rest[:1] == ["set-wifi-enabled"]:
                st.set_wifi(rest[1] == "enabled")
                return Out()
            if rest[:1] == ["status"]:
                if not st.wifi:
                    return ok("Wifi is disabled\nWifi scanning is only available when wifi is enabled\n")
                return ok('Wifi is enabled\nWifi scanning is always available\n'
                          'Wifi is connected to "AndroidWifi"\n'
                          'WifiInfo: SSID: "AndroidWifi", BSSID: 02:15:b2:00:01:00, MAC: 02:00:00:00:00:00, '
                          'IP: /10.0.2.16, Security type: 0, Supplicant state: COMPLETED, Wi-Fi standard: 4, '
                          'RSSI: -50, Link speed: 54Mbps, Frequency: 2447MHz\n')
        if svc == "bluetooth_manager" and rest[:1] in (["enable"], ["disable"]):
            st.set_bluetooth(rest[0] == "enable")
            return Out()
        if svc == "connectivity" and rest[:1] == ["airplane-mode"]:
            if len(rest) == 1:
                return ok("enabled\n" if st.airplane else "disabled\n")
            st.set_airplane(rest[1] == "enable")
            return Out()
        if svc == "uimode" and rest[:1] == ["night"]:
            names = {"0": "auto", "1": "no", "2": "yes", "3": "custom"}
            if len(rest) > 1:
                codes = {v: k for k, v in names.items()}
                if rest[1] not in codes:
                    return fail("Error: mode must be 'yes', 'no', or 'auto'\n", 255)
                st.put("secure", "ui_night_mode", codes[rest[1]])
            return ok(f"Night mode: {names.get(st.get('secure', 'ui_night_mode') or '1', 'no')}\n")
        if svc == "notification" and rest[:1] == ["set_dnd"]:
            modes = {"on": "2", "none": "2", "priority": "1", "alarms": "3", "off": "0", "all": "0"}
            if len(rest) < 2 or rest[1] not in modes:
                return fail("Invalid mode\n", 255)
            st.put("global", "zen_mode", modes[rest[1]])
            return Out()
        if svc == "location":
            if rest[:1] == ["set-location-enabled"]:
                st.set_location(rest[1] == "true")
                return Out()
            if rest[:1] == ["is-location-enabled"]:
                return ok("true\n" if st.location else "false\n")
        if svc == "power" and rest[:1] == ["set-mode"]:
            st.set_battery_saver(rest[1] == "1")
            return Out()
        if svc == "vphone":
            return self._vphone(rest)
        if svc == "package":
            return self.pm(rest, i)
        if svc == "activity":
            return self.am(rest, i)
        return fail(f"Unknown command: {' '.join(a)}\n", 255)

    def _vphone(self, a: list[str]) -> Out:
        """`cmd vphone ...`: the virtual phone's own knobs, which a real phone does not have (it
        answers "Can't find service: vphone"): the launcher's icon order, interruptions and Settings'
        suggestion cards."""
        w = self.w
        if a == ["launcher-order"]:
            return ok(f"{w.launcher.order_seed}\n")
        if len(a) == 2 and a[0] == "launcher-order" and a[1].lstrip("-").isdigit():
            w.launcher.order_seed = int(a[1])
            w.invalidate()
            return Out()
        if a == ["interrupt", "none"]:
            w.disarm_interruption()
            return Out()
        if len(a) == 3 and a[0] == "interrupt" and a[1] in INTERRUPTIONS and a[2].isdigit():
            w.arm_interruption(a[1], int(a[2]))
            return Out()
        if a == ["suggestions"]:
            return ok("%d %d\n" % w.suggestions)
        if len(a) == 3 and a[0] == "suggestions" and a[1].isdigit() and a[2].isdigit() and int(a[1]) <= SUGGESTIONS_MAX:
            w.suggestions = (int(a[1]), int(a[2]))
            w.invalidate()
            return Out()
        if a == ["reset"]:
            w.launcher.order_seed = 0
            w.suggestions = (0, 0)
            w.disarm_interruption()
            return Out()
        return fail(f"Error: {_VPHONE_USAGE}: got {' '.join(a) or 'nothing'}\n", 255)

    def dumpsys(self, a: list[str], i: bytes) -> Out:
        w = self.w
        st = w.state
        what = a[0] if a else ""
        if what == "battery":
            return self._battery(a[1:])
        if what == "bluetooth_manager":
            on = st.bluetooth
            return ok(f"Bluetooth Status\n  enabled: {'true' if on else 'false'}\n  state: {'ON' if on else 'OFF'}\n"
                      f"  address: 22:22:1A:2B:3C:4D\n  name: {w.model}\n")
        if what == "alarm":
            return self._alarm()
        if what == "content":
            return ok(self._content())
        if what == "telephony.registry":
            # TelephonyRegistry's dump: per phone, mCallState 0 idle, 1 ringing, 2 off-hook.
            state = 2 if st.telephony.in_call is not None else 0
            return ok(f"last known state:\n  Phone Id=0\n    mCallState={state}\n    mRingingCallState=0\n"
                      f"    mForegroundCallState={1 if state else 0}\n    mCallIncomingNumber=\n"
                      f"  local logs:\n")
        if what == "window":
            return ok(self._window())
        if what == "activity":
            sub = a[1] if len(a) > 1 else "activities"
            return ok(self._activity_top() if sub == "top" else self._activities())
        if what == "display":
            return ok("DISPLAY MANAGER (dumpsys display)\n  mOnlyCore=false\n  mSafeMode=false\n"
                      "  mViewports=[DisplayViewport{type=INTERNAL, valid=true, isActive=true, displayId=0, "
                      "uniqueId='local:4619827259835644672', physicalPort=0, orientation=0, "
                      "logicalFrame=Rect(0, 0 - 1080, 2400), physicalFrame=Rect(0, 0 - 1080, 2400), "
                      "deviceWidth=1080, deviceHeight=2400}]\n"
                      "  mDefaultDisplayDefaultColorMode=0\n")
        if what == "uimode":
            return ok(f"Current UI Mode Service state:\n  mNightMode={st.get('secure', 'ui_night_mode')} "
                      f"mNightModeLocked=false mNightModeOverride=false\n"
                      f"  mComputedNightMode={'true' if st.dark else 'false'}\n")
        if what == "power":
            return ok(f"POWER MANAGER (dumpsys power)\n  mWakefulness=Awake\n  mIsPowered={str(st.powered).lower()}\n"
                      f"  mHoldingDisplaySuspendBlocker=true\n  mBatterySaverEnabled={str(st.battery_saver).lower()}\n")
        if what == "package" and len(a) > 1:
            pkg = a[1]
            if pkg not in self._packages():
                return ok("")
            return ok(f"Packages:\n  Package [{pkg}] ({w.record_id(pkg)}):\n    versionCode=340000 minSdk=31 "
                      f"targetSdk=34\n    versionName=14\n")
        return ok("")

    def _content(self) -> str:
        """ContentService's dump, SyncManager's part (dumpSyncState): the accounts and, per
        account, its sync adapters' authorities, syncable (1) and enabled (its Account sync
        switch). No sync has run (the stats are 0); the observer tree is left out."""
        st = self.w.state
        now = st.clock.now_ms()
        up = int(st.clock.elapsed())
        lines = ["Data connected: true", f"Battery saver: {str(st.battery_saver).lower()}",
                 "Background network restriction:  disabled", f"Auto sync: u0={str(st.auto_sync).lower()} ",
                 "Memory low: false", "Device idle: false", "Reported active: false", "Clock valid: true",
                 f"Accounts: {len(st.accounts)}", f"Now: {up * 1000} ({_fmt_time(now)})",
                 f"Uptime: {up // 3600:d}h{up // 60 % 60:02d}m{up % 60:02d}s" if up >= 3600 else
                 f"Uptime: {up // 60}m{up % 60:02d}s" if up >= 60 else f"Uptime: {up}s",
                 "Time spent syncing: 0s, sync not in progress", "", "Active Syncs: 0", "",
                 "Pending Syncs: 0", "", "Periodic Syncs: 0", "", "Sync Status"]
        out = "\n".join(lines) + "\n"
        for acc in st.accounts:
            out += f"Account {acc.name} u0 {acc.type}\n" + "=" * 71 + "\n"
            rows = [list(_SYNC_COLUMNS)]
            for authority in sorted(acc.sync):
                blank = [""] * len(_SYNC_COLUMNS)
                rows.append([authority, "1", str(acc.sync[authority]).lower(), "Total", *["0"] * 9, "0s", "", ""])
                rows.append(blank[:3] + ["Today"] + [""] * 9 + ["0s", "", ""])
                rows.append(blank[:3] + ["Yestr"] + [""] * 9 + ["0s", "", ""])
            out += _print_table(rows)
        return out + "\nPer Adapter History\n(SERVER is now split up to FEED and OTHER)\n\nObserver tree:\n"

    def _battery(self, a: list[str]) -> Out:
        st = self.w.state
        if a[:1] == ["unplug"]:
            st.set_powered(False)
            return Out()
        if a[:1] == ["reset"]:
            st.set_powered(None)
            return Out()
        if a[:1] == ["set"] and len(a) >= 3:
            if a[1] in ("ac", "usb", "wireless"):
                st.set_powered(a[2] != "0")
            elif a[1] == "level":
                st.battery_level = int(a[2])
            return Out()
        p = st.powered
        lines = ["Current Battery Service state:"]
        if st.powered_override is not None:
            lines.append("  (UPDATES STOPPED -- use 'reset' to restart)")
        lines += ["  AC powered: false", f"  USB powered: {str(p).lower()}", "  Wireless powered: false",
                  "  Dock powered: false", "  Max charging current: 500000" if p else "  Max charging current: 0",
                  "  Max charging voltage: 5000000" if p else "  Max charging voltage: 0",
                  "  Charge counter: 2550000", f"  status: {2 if p else 3}", "  health: 2", "  present: true",
                  f"  level: {st.battery_level}", "  scale: 100", "  voltage: 4012", "  temperature: 250",
                  "  technology: Li-ion"]
        return ok("\n".join(lines) + "\n")

    def _alarm(self) -> Out:
        now_ms = self.w.state.clock.now_ms()
        nxt = self.w.state.next_alarm_ms(now_ms / 1000)
        lines = ["Current Alarm Manager state:", f"  nowRTC={now_ms}={_fmt_time(now_ms)} "
                 f"nowELAPSED={int(self.w.state.clock.elapsed() * 1000)}", ""]
        lines.append("  Next alarm clock information: ")
        if nxt is not None:
            lines.append(f"    user:0 pendingSend:false time:{nxt} = {_fmt_time(nxt)} = {_fmt_duration(nxt - now_ms)}")
        lines.append("")
        return ok("\n".join(lines) + "\n")

    def _short(self, pkg: str, act: str) -> str:
        return act[len(pkg):] if act.startswith(pkg + ".") else act

    def _task_id(self, pkg: str) -> int:
        t = self.w.tasks.get(pkg)
        return t.id if t else 1

    def _window(self) -> str:
        w = self.w
        pkg, act = w.component()
        top = w.top
        return ("WINDOW MANAGER WINDOWS (dumpsys window windows)\n"
                f"  Window #0 Window{{{w.record_id('sb')} u0 StatusBar}}:\n"
                f"  Window #1 Window{{{w.record_id(top, 'w')} u0 {pkg}/{act}}}:\n\n"
                f"  mCurrentFocus=Window{{{w.record_id(top, 'w')} u0 {pkg}/{act}}}\n"
                f"  mFocusedApp=ActivityRecord{{{w.record_id(top)} u0 {pkg}/{self._short(pkg, act)} "
                f"t{self._task_id(pkg)}}}\n")

    def _activities(self) -> str:
        w = self.w
        pkg, act = w.component()
        rec = f"ActivityRecord{{{w.record_id(w.top)} u0 {pkg}/{self._short(pkg, act)} t{self._task_id(pkg)}}}"
        lines = ["ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)", "Display #0 (activities from top to bottom):"]
        order = [w.fg] + [p for p in reversed(list(w.tasks)) if p != w.fg]
        for p in order:
            stack = [w.launcher] if p not in w.tasks else w.tasks[p].stack
            lines.append(f"  * Task{{{w.record_id(p, 't')} #{self._task_id(p)} type=standard A=10123:{p} U=0 "
                         f"visible={'true' if p == w.fg else 'false'} mode=fullscreen sz={len(stack)}}}")
            for k, s in reversed(list(enumerate(stack))):
                lines.append(f"      * Hist  #{k}: ActivityRecord{{{w.record_id(s)} u0 {s.pkg}/"
                             f"{self._short(s.pkg, s.activity)} t{self._task_id(p)}}}")
        lines += ["", f"  ResumedActivity: {rec}", f"  topResumedActivity={rec}", ""]
        return "\n".join(lines) + "\n"

    def _activity_top(self) -> str:
        w = self.w
        pkg, act = w.component()
        return (f"TASK 10123:{pkg} id={self._task_id(pkg)} userId=0\n"
                f"  ACTIVITY {pkg}/{self._short(pkg, act)} {w.record_id(w.top)} pid={self._pid(pkg)}\n")

    def _density(self, a: list[str]) -> Out:
        """WindowManagerShellCommand.runDisplayDensity: print, `reset`, or an override N (>= 72),
        kept where WindowManagerService keeps it (secure display_density_forced)."""
        st = self.w.state
        if not a:
            forced = st.get("secure", "display_density_forced") or ""
            override = f"Override density: {forced}\n" if forced.isdigit() else ""
            return ok("Physical density: 420\n" + override)
        if a[0] == "reset":
            st.put("secure", "display_density_forced", "")
            return Out()
        if not a[0].lstrip("-").isdigit():
            return fail(f'Error: bad number java.lang.NumberFormatException: For input string: "{a[0]}"\n', 255)
        if int(a[0]) < 72:
            return fail("Error: density must be >= 72\n", 255)
        n = int(a[0])   # the physical density itself is no override (DisplayContent.setForcedDensity)
        st.put("secure", "display_density_forced", "" if n == 420 else str(n))
        return Out()

    def wm(self, a: list[str], i: bytes) -> Out:
        if a[:1] == ["size"]:
            return ok("Physical size: 1080x2400\n")
        if a[:1] == ["density"]:
            return self._density(a[1:])
        if a[:1] == ["user-rotation"]:
            if len(a) > 1 and a[1] in ("free", "lock"):
                self.w.state.put("system", "accelerometer_rotation", "1" if a[1] == "free" else "0")
            return Out()
        return fail(f"Unknown command: {' '.join(a)}\n", 255)

