"""`adb shell` of the virtual phone: a small sh (`;` `&&` `||` `|` `>` `$?`) and Android 14's commands.

Output formats follow AOSP (see ../shared/notes/android-state-commands.md) because tasks and
checks written against this phone must run unchanged on a real one.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .state import MIME_PHONE

if TYPE_CHECKING:
    from .world import ShellResult, World


@dataclass
class Out:
    stdout: bytes = b""
    stderr: bytes = b""
    code: int = 0


def _o(text: str = "", code: int = 0) -> Out:
    return Out(text.encode(), b"", code)


def _e(text: str, code: int = 1) -> Out:
    return Out(b"", text.encode(), code)


KEYCODES = {
    "HOME": 3, "BACK": 4, "CALL": 5, "ENDCALL": 6, "DPAD_UP": 19, "DPAD_DOWN": 20, "DPAD_LEFT": 21,
    "DPAD_RIGHT": 22, "DPAD_CENTER": 23, "VOLUME_UP": 24, "VOLUME_DOWN": 25, "POWER": 26, "CAMERA": 27,
    "TAB": 61, "SPACE": 62, "ENTER": 66, "DEL": 67, "MENU": 82, "SEARCH": 84, "APP_SWITCH": 187,
    "WAKEUP": 224, "SLEEP": 223, "VOLUME_MUTE": 164, "ESCAPE": 111,
}

SETTINGS_ACTIONS = {
    "android.settings.SETTINGS": "SettingsHome",
    "android.settings.WIFI_SETTINGS": "InternetPage",
    "android.settings.WIRELESS_SETTINGS": "NetworkInternet",
    "android.settings.AIRPLANE_MODE_SETTINGS": "NetworkInternet",
    "android.settings.BLUETOOTH_SETTINGS": "BluetoothPage",
    "android.settings.DISPLAY_SETTINGS": "DisplayPage",
    "android.settings.SOUND_SETTINGS": "SoundVibration",
    "android.settings.ZEN_MODE_SETTINGS": "DoNotDisturb",
    "android.settings.LOCATION_SOURCE_SETTINGS": "LocationPage",
    "android.settings.BATTERY_SAVER_SETTINGS": "BatterySaverPage",
    "android.settings.DEVICE_INFO_SETTINGS": "AboutPhone",
}


def _tokens(command: str) -> list[str]:
    lex = shlex.shlex(command, posix=True, punctuation_chars=";&|<>")
    lex.whitespace_split = True
    lex.commenters = ""
    return list(lex)


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


class Shell:
    def __init__(self, world: World) -> None:
        self.w = world
        self.last = 0
        self.cmds: dict[str, Callable[[list[str], bytes], Out]] = {
            "echo": self.echo, "getprop": self.getprop, "settings": self.settings, "svc": self.svc,
            "cmd": self.cmd, "dumpsys": self.dumpsys, "wm": self.wm, "am": self.am, "monkey": self.monkey,
            "input": self.input, "screencap": self.screencap, "pm": self.pm, "ps": self.ps,
            "md5sum": self.md5sum, "md5": self.md5sum, "toybox": self.toybox, "ls": self.ls, "cat": self.cat,
            "rm": self.rm, "mkdir": self.mkdir, "touch": self.touch, "ime": self.ime, "content": self.content,
            "grep": self.grep, "head": self.head, "tail": self.tail, "wc": self.wc, "true": lambda a, i: _o(),
            "false": lambda a, i: _o("", 1), "date": self.date, "id": self.id, "sleep": lambda a, i: _o(),
            "logcat": lambda a, i: _o(), "app_process": lambda a, i: _o(), "setprop": lambda a, i: _o(),
            "uptime": self.uptime, "whoami": lambda a, i: _o("shell\n"), "exit": self.exit,
            "pidof": self.pidof, "which": self.which,
        }

    # --- the little sh --------------------------------------------------------------------

    def run(self, command: str) -> ShellResult:
        from .world import ShellResult

        try:
            toks = _tokens(command)
        except ValueError:
            return ShellResult(b"", b"/system/bin/sh: syntax error: unmatched quote\n", 2)
        out, err, merged = bytearray(), bytearray(), bytearray()
        i, skip = 0, False
        while i < len(toks):
            j = i
            while j < len(toks) and toks[j] not in (";", "&&", "||", "&"):
                j += 1
            if not skip:
                o = self._pipeline(toks[i:j])
                out += o.stdout
                err += o.stderr
                merged += o.stderr + o.stdout
                self.last = o.code
                if isinstance(o, _Exit):
                    break
            op = toks[j] if j < len(toks) else ";"
            skip = (op == "&&" and self.last != 0) or (op == "||" and self.last == 0)
            i = j + 1
        return ShellResult(bytes(out), bytes(err), self.last, bytes(merged))

    def _pipeline(self, toks: list[str]) -> Out:
        stages: list[list[str]] = [[]]
        for t in toks:
            if t == "|":
                stages.append([])
            else:
                stages[-1].append(t)
        data = b""
        err = b""
        res = Out()
        for k, st in enumerate(stages):
            res = self._simple(st, data if k else b"")
            err += res.stderr
            data = res.stdout
        return _Exit(data, err, res.code) if isinstance(res, _Exit) else Out(data, err, res.code)

    def _simple(self, toks: list[str], stdin: bytes) -> Out:
        args: list[str] = []
        redirect: tuple[str, bool] | None = None
        drop_err = False
        k = 0
        while k < len(toks):
            t = toks[k]
            if t in (">", ">>") and k + 1 < len(toks):
                if args and args[-1] == "2":
                    args.pop()
                    drop_err = True
                else:
                    redirect = (toks[k + 1], t == ">>")
                k += 2
                continue
            if t == "<":
                k += 2
                continue
            args.append(t.replace("$?", str(self.last)))
            k += 1
        while args and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", args[0]):
            args.pop(0)  # VAR=value prefixes (CLASSPATH=... app_process)
        if not args:
            return Out()
        name = args[0]
        fn = self.cmds.get(name.rsplit("/", 1)[-1])
        if fn is None:
            res = _e(f"/system/bin/sh: {name}: inaccessible or not found\n", 127)
        else:
            try:
                res = fn(args[1:], stdin)
            except (IndexError, ValueError):
                res = _e(f"{name}: bad arguments\n", 1)
        if drop_err:
            res = Out(res.stdout, b"", res.code)
        if redirect is not None:
            path, append = redirect
            if path != "/dev/null":
                prev = self.w.fs.read(path) if append and self.w.fs.exists(path) else b""
                self.w.fs.write(path, prev + res.stdout)
            res = Out(b"", res.stderr, res.code)
        return res

    def exit(self, a: list[str], i: bytes) -> Out:
        return _Exit(b"", b"", int(a[0]) if a else self.last)

    # --- simple tools -----------------------------------------------------------------------

    def echo(self, a: list[str], i: bytes) -> Out:
        nl = "\n"
        if a and a[0] == "-n":
            a, nl = a[1:], ""
        return _o(" ".join(a) + nl)

    def getprop(self, a: list[str], i: bytes) -> Out:
        props = self.w.props()
        if not a:
            return _o("".join(f"[{k}]: [{v}]\n" for k, v in sorted(props.items())))
        return _o(props.get(a[0], a[1] if len(a) > 1 else "") + "\n")

    def date(self, a: list[str], i: bytes) -> Out:
        if a and a[0] == "+%s":
            return _o(f"{int(time.time())}\n")
        return _o(time.strftime("%a %b %d %H:%M:%S GMT %Y\n", time.gmtime()))

    def uptime(self, a: list[str], i: bytes) -> Out:
        up = int(time.time() - self.w.boot_time)
        return _o(f" {time.strftime('%H:%M:%S', time.gmtime())} up 0 days, {up // 3600}:{up % 3600 // 60:02d},"
                  f"  0 users,  load average: 0.50, 0.40, 0.30\n")

    def id(self, a: list[str], i: bytes) -> Out:
        return _o("uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),1011(adb),"
                  "1015(sdcard_rw),1028(sdcard_r),3001(net_bt_admin),3002(net_bt),3003(inet) "
                  "context=u:r:shell:s0\n")

    def which(self, a: list[str], i: bytes) -> Out:
        found = [f"/system/bin/{n}" for n in a if n in self.cmds]
        return _o("".join(f + "\n" for f in found), 0 if len(found) == len(a) else 1)

    def grep(self, a: list[str], i: bytes) -> Out:
        flags: set[str] = set()
        pats: list[str] = []
        files: list[str] = []
        after = before = 0
        k = 0
        while k < len(a):
            t = a[k]
            if t in ("-e", "-A", "-B", "-C") and k + 1 < len(a):
                if t == "-e":
                    pats.append(a[k + 1])
                else:
                    n = int(a[k + 1])
                    after = n if t in ("-A", "-C") else after
                    before = n if t in ("-B", "-C") else before
                k += 2
                continue
            if t.startswith("-") and len(t) > 1 and t[1:].isalpha():
                flags.update(t[1:])
            elif not pats:
                pats.append(t)
            else:
                files.append(t)
            k += 1
        if not pats:
            return _e("usage: grep [-civoqE] [-A NUM] [-B NUM] PATTERN [FILE...]\n", 2)
        data = i
        for f in files:
            if not self.w.fs.exists(f):
                return _e(f"grep: {f}: No such file or directory\n", 2)
            data += self.w.fs.read(f)
        try:
            rx = [re.compile(p if ("E" in flags) else _bre(p), re.I if "i" in flags else 0) for p in pats]
        except re.error:
            return _e("grep: bad regex\n", 2)
        lines = data.decode(errors="replace").splitlines()
        hit_idx = [n for n, ln in enumerate(lines) if any(r.search(ln) for r in rx) != ("v" in flags)]
        code = 0 if hit_idx else 1
        if "q" in flags:
            return _o("", code)
        if "c" in flags:
            return _o(f"{len(hit_idx)}\n", code)
        if not (after or before):
            return _o("".join(lines[n] + "\n" for n in hit_idx), code)
        # Context lines; groups that do not touch are separated by "--", as toybox grep does.
        keep: list[int] = []
        for n in hit_idx:
            for m in range(max(0, n - before), min(len(lines), n + after + 1)):
                if not keep or m > keep[-1]:
                    keep.append(m)
        out: list[str] = []
        for j, m in enumerate(keep):
            if j and m != keep[j - 1] + 1:
                out.append("--")
            out.append(lines[m])
        return _o("".join(x + "\n" for x in out), code)

    def head(self, a: list[str], i: bytes) -> Out:
        n = int(a[a.index("-n") + 1]) if "-n" in a else 10
        return Out(b"".join(i.splitlines(keepends=True)[:n]))

    def tail(self, a: list[str], i: bytes) -> Out:
        n = int(a[a.index("-n") + 1]) if "-n" in a else 10
        return Out(b"".join(i.splitlines(keepends=True)[-n:]))

    def wc(self, a: list[str], i: bytes) -> Out:
        return _o(f"{len(i.splitlines())}\n")

    # --- files ------------------------------------------------------------------------------

    def toybox(self, a: list[str], i: bytes) -> Out:
        if not a:
            return _o("")
        fn = self.cmds.get(a[0])
        if fn is None:
            return _e(f"toybox: Unknown command {a[0]}\n", 1)
        return fn(a[1:], i)

    def md5sum(self, a: list[str], i: bytes) -> Out:
        out, err, code = [], [], 0
        for p in a:
            st = self.w.fs.stat(p)
            if st is None:
                err.append(f"md5sum: {p}: No such file or directory\n")
                code = 1
            elif st.is_dir:
                err.append(f"md5sum: {p}: Is a directory\n")
                code = 1
            else:
                out.append(f"{hashlib.md5(self.w.fs.read(p)).hexdigest()}  {p}\n")
        return Out("".join(out).encode(), "".join(err).encode(), code)

    def ls(self, a: list[str], i: bytes) -> Out:
        long = any(x.startswith("-") and "l" in x for x in a)
        paths = [x for x in a if not x.startswith("-")] or ["/"]
        out, err, code = [], [], 0
        for p in paths:
            st = self.w.fs.stat(p)
            if st is None:
                err.append(f"ls: {p}: No such file or directory\n")
                code = 1
                continue
            entries = self.w.fs.listdir(p) if st.is_dir else [(p, st)]
            for name, s in entries:
                if long:
                    kind = "d" if s.is_dir else "-"
                    ts = time.strftime("%Y-%m-%d %H:%M", time.gmtime(s.mtime))
                    out.append(f"{kind}{_perm(s.mode)} 1 shell shell {s.size} {ts} {name}\n")
                else:
                    out.append(name + "\n")
        return Out("".join(out).encode(), "".join(err).encode(), code)

    def cat(self, a: list[str], i: bytes) -> Out:
        if not a:
            return Out(i)
        data, err, code = b"", "", 0
        for p in a:
            st = self.w.fs.stat(p)
            if st is None:
                err += f"cat: {p}: No such file or directory\n"
                code = 1
            elif st.is_dir:
                err += f"cat: {p}: Is a directory\n"
                code = 1
            else:
                data += self.w.fs.read(p)
        return Out(data, err.encode(), code)

    def rm(self, a: list[str], i: bytes) -> Out:
        opts = "".join(x[1:] for x in a if x.startswith("-"))
        err, code = "", 0
        for p in (x for x in a if not x.startswith("-")):
            st = self.w.fs.stat(p)
            if st is None:
                if "f" not in opts:
                    err += f"rm: {p}: No such file or directory\n"
                    code = 1
            elif st.is_dir and "r" not in opts and "R" not in opts:
                err += f"rm: {p}: Is a directory\n"
                code = 1
            else:
                self.w.fs.remove(p)
        return Out(b"", err.encode(), code)

    def mkdir(self, a: list[str], i: bytes) -> Out:
        for p in (x for x in a if not x.startswith("-")):
            self.w.fs.mkdir(p)
        return Out()

    def touch(self, a: list[str], i: bytes) -> Out:
        for p in (x for x in a if not x.startswith("-")):
            if not self.w.fs.exists(p):
                self.w.fs.write(p, b"")
        return Out()

    # --- settings and state commands ----------------------------------------------------------

    def settings(self, a: list[str], i: bytes) -> Out:
        a = [x for x in a if x not in ("--user", "current", "0")] if "--user" in a else a
        if len(a) < 2:
            return _e("usage: settings [--user <USER_ID> | current] get namespace key\n", 1)
        verb, table = a[0], a[1]
        if table not in ("global", "system", "secure"):
            return _e(f"Invalid namespace '{table}'\n", 255)
        st = self.w.state
        if verb == "get":
            v = st.get(table, a[2])
            return _o(("null" if v is None else v) + "\n")
        if verb == "put":
            key, value = a[2], a[3]
            if table == "global" and key == "zen_mode":
                return Out()  # ZenModeHelper reverts direct writes; use `cmd notification set_dnd`
            st.put(table, key, value)
            return Out()
        if verb == "delete":
            return _o(f"Deleted {1 if st.delete(table, a[2]) else 0} rows\n")
        if verb == "list":
            return _o("".join(f"{k}={v}\n" for k, v in sorted(st.tables[table].items())))
        return _e(f"Invalid command: {verb}\n", 255)

    def svc(self, a: list[str], i: bytes) -> Out:
        what, verb = a[0], a[1] if len(a) > 1 else ""
        if verb not in ("enable", "disable"):
            return _o(f"Control the {what} manager\n\nusage: svc {what} [enable|disable]\n")
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
            return _e("cmd: No service specified; use -l to list all running services.\n", 255)
        svc, rest = a[0], a[1:]
        st = self.w.state
        if svc == "wifi":
            if rest[:1] == ["set-wifi-enabled"]:
                st.set_wifi(rest[1] == "enabled")
                return Out()
            if rest[:1] == ["status"]:
                if not st.wifi:
                    return _o("Wifi is disabled\nWifi scanning is only available when wifi is enabled\n")
                return _o('Wifi is enabled\nWifi scanning is always available\n'
                          'Wifi is connected to "AndroidWifi"\n'
                          'WifiInfo: SSID: "AndroidWifi", BSSID: 02:15:b2:00:01:00, MAC: 02:00:00:00:00:00, '
                          'IP: /10.0.2.16, Security type: 0, Supplicant state: COMPLETED, Wi-Fi standard: 4, '
                          'RSSI: -50, Link speed: 54Mbps, Frequency: 2447MHz\n')
        if svc == "bluetooth_manager" and rest[:1] in (["enable"], ["disable"]):
            st.set_bluetooth(rest[0] == "enable")
            return Out()
        if svc == "connectivity" and rest[:1] == ["airplane-mode"]:
            if len(rest) == 1:
                return _o("enabled\n" if st.airplane else "disabled\n")
            st.set_airplane(rest[1] == "enable")
            return Out()
        if svc == "uimode" and rest[:1] == ["night"]:
            names = {"0": "auto", "1": "no", "2": "yes", "3": "custom"}
            if len(rest) > 1:
                codes = {v: k for k, v in names.items()}
                if rest[1] not in codes:
                    return _e(f"Error: mode must be 'yes', 'no', or 'auto'\n", 255)
                st.put("secure", "ui_night_mode", codes[rest[1]])
            return _o(f"Night mode: {names.get(st.get('secure', 'ui_night_mode') or '1', 'no')}\n")
        if svc == "notification" and rest[:1] == ["set_dnd"]:
            modes = {"on": "2", "none": "2", "priority": "1", "alarms": "3", "off": "0", "all": "0"}
            if len(rest) < 2 or rest[1] not in modes:
                return _e("Invalid mode\n", 255)
            st.put("global", "zen_mode", modes[rest[1]])
            return Out()
        if svc == "location":
            if rest[:1] == ["set-location-enabled"]:
                st.set_location(rest[1] == "true")
                return Out()
            if rest[:1] == ["is-location-enabled"]:
                return _o("true\n" if st.location else "false\n")
        if svc == "power" and rest[:1] == ["set-mode"]:
            st.set_battery_saver(rest[1] == "1")
            return Out()
        if svc == "package":
            return self.pm(rest, i)
        if svc == "activity":
            return self.am(rest, i)
        return _e(f"Unknown command: {' '.join(a)}\n", 255)

    def dumpsys(self, a: list[str], i: bytes) -> Out:
        w = self.w
        st = w.state
        what = a[0] if a else ""
        if what == "battery":
            return self._battery(a[1:])
        if what == "bluetooth_manager":
            on = st.bluetooth
            return _o(f"Bluetooth Status\n  enabled: {'true' if on else 'false'}\n  state: {'ON' if on else 'OFF'}\n"
                      f"  address: 22:22:1A:2B:3C:4D\n  name: {w.model}\n")
        if what == "alarm":
            return self._alarm()
        if what == "window":
            return _o(self._window())
        if what == "activity":
            sub = a[1] if len(a) > 1 else "activities"
            return _o(self._activity_top() if sub == "top" else self._activities())
        if what == "display":
            return _o("DISPLAY MANAGER (dumpsys display)\n  mOnlyCore=false\n  mSafeMode=false\n"
                      "  mViewports=[DisplayViewport{type=INTERNAL, valid=true, isActive=true, displayId=0, "
                      "uniqueId='local:4619827259835644672', physicalPort=0, orientation=0, "
                      "logicalFrame=Rect(0, 0 - 1080, 2400), physicalFrame=Rect(0, 0 - 1080, 2400), "
                      "deviceWidth=1080, deviceHeight=2400}]\n"
                      "  mDefaultDisplayDefaultColorMode=0\n")
        if what == "uimode":
            return _o(f"Current UI Mode Service state:\n  mNightMode={st.get('secure', 'ui_night_mode')} "
                      f"mNightModeLocked=false mNightModeOverride=false\n"
                      f"  mComputedNightMode={'true' if st.dark else 'false'}\n")
        if what == "power":
            return _o(f"POWER MANAGER (dumpsys power)\n  mWakefulness=Awake\n  mIsPowered={str(st.powered).lower()}\n"
                      f"  mHoldingDisplaySuspendBlocker=true\n  mBatterySaverEnabled={str(st.battery_saver).lower()}\n")
        if what == "package" and len(a) > 1:
            pkg = a[1]
            if pkg not in self._packages():
                return _o("")
            return _o(f"Packages:\n  Package [{pkg}] ({w.record_id(pkg)}):\n    versionCode=340000 minSdk=31 "
                      f"targetSdk=34\n    versionName=14\n")
        return _o("")

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
        lines += [f"  AC powered: false", f"  USB powered: {str(p).lower()}", "  Wireless powered: false",
                  "  Dock powered: false", "  Max charging current: 500000" if p else "  Max charging current: 0",
                  "  Max charging voltage: 5000000" if p else "  Max charging voltage: 0",
                  "  Charge counter: 2550000", f"  status: {2 if p else 3}", "  health: 2", "  present: true",
                  f"  level: {st.battery_level}", "  scale: 100", "  voltage: 4012", "  temperature: 250",
                  "  technology: Li-ion"]
        return _o("\n".join(lines) + "\n")

    def _alarm(self) -> Out:
        now_ms = int(time.time() * 1000)
        nxt = self.w.state.next_alarm_ms(now_ms / 1000)
        lines = ["Current Alarm Manager state:", f"  nowRTC={now_ms}={_fmt_time(now_ms)} "
                 f"nowELAPSED={int((time.time() - self.w.boot_time) * 1000)}", ""]
        lines.append("  Next alarm clock information: ")
        if nxt is not None:
            lines.append(f"    user:0 pendingSend:false time:{nxt} = {_fmt_time(nxt)} = {_fmt_duration(nxt - now_ms)}")
        lines.append("")
        return _o("\n".join(lines) + "\n")

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

    def wm(self, a: list[str], i: bytes) -> Out:
        if a[:1] == ["size"]:
            return _o("Physical size: 1080x2400\n")
        if a[:1] == ["density"]:
            return _o("Physical density: 420\n")
        if a[:1] == ["user-rotation"]:
            if len(a) > 1 and a[1] in ("free", "lock"):
                self.w.state.put("system", "accelerometer_rotation", "1" if a[1] == "free" else "0")
            return Out()
        return _e(f"Unknown command: {' '.join(a)}\n", 255)

    # --- activities and input -------------------------------------------------------------------

    def am(self, a: list[str], i: bytes) -> Out:
        w = self.w
        verb = a[0] if a else ""
        if verb == "force-stop":
            w.force_stop(a[-1])
            return Out()
        if verb == "broadcast":
            act = a[a.index("-a") + 1] if "-a" in a else ""
            head = f"Broadcasting: Intent {{ act={act} flg=0x400000 }}\n"
            if act == "android.intent.action.AIRPLANE_MODE":
                return Out(head.encode(), (f"Exception occurred while executing 'broadcast':\n"
                                           f"java.lang.SecurityException: Permission Denial: not allowed to send "
                                           f"broadcast {act} from pid=4242, uid=2000\n").encode(), 255)
            return _o(head + "Broadcast completed: result=0\n")
        if verb in ("start", "start-activity"):
            return self._am_start(a[1:])
        return _e(f"Unknown command: {verb}\n", 255)

    def _am_start(self, a: list[str]) -> Out:
        w = self.w
        opts: dict[str, str] = {}
        extras: dict[str, str] = {}
        k = 0
        while k < len(a):
            t = a[k]
            if t in ("--ei", "--ez", "--es", "--el") and k + 2 < len(a):
                extras[a[k + 1]] = a[k + 2]
                k += 3
            elif t in ("-n", "-a", "-c", "-d", "-t", "--user", "-f"):
                opts[t] = a[k + 1]
                k += 2
            else:
                k += 1
        act = opts.get("-a", "")
        if "-n" in opts:
            comp = opts["-n"]
            pkg, _, cls = comp.partition("/")
            full = pkg + cls if cls.startswith(".") else cls
            app = w.apps.get(pkg)
            if app is None or full != app.activity:
                return _o(f"Starting: Intent {{ cmp={comp} }}\nError type 3\n"
                          f"Error: Activity class {{{comp}}} does not exist.\n")
            w.launch(pkg)
            return _o(f"Starting: Intent {{ cmp={comp} }}\n")
        head = f"Starting: Intent {{ act={act}{' (has extras)' if extras else ''} }}\n"
        if act == "android.intent.action.SET_ALARM":
            h = int(extras.get("android.intent.extra.alarm.HOUR", "0"))
            m = int(extras.get("android.intent.extra.alarm.MINUTES", "0"))
            w.state.add_alarm(h % 24, m % 60)
            if extras.get("android.intent.extra.alarm.SKIP_UI", "false") != "true":
                w.launch("com.google.android.deskclock")
            return _o(head)
        if act == "android.intent.action.SHOW_ALARMS":
            w.launch("com.google.android.deskclock")
            return _o(head)
        if act == "android.intent.action.INSERT" and "contact" in opts.get("-t", ""):
            from .apps.contacts import ContactEditor

            w.launch("com.google.android.contacts")
            w.open(ContactEditor())
            return _o(head)
        if act in SETTINGS_ACTIONS:
            from .apps import settings as sp

            w.launch("com.android.settings", fresh=True)
            cls_name = SETTINGS_ACTIONS[act]
            if cls_name != "SettingsHome":
                w.open(getattr(sp, cls_name)())
            return _o(head)
        if act == "android.intent.action.MAIN" and "-n" not in opts:
            w.home()
            return _o(head)
        return _o(head + "Error: Activity not started, unable to resolve Intent "
                  f"{{ act={act} flg=0x10000000 }}\n")

    def monkey(self, a: list[str], i: bytes) -> Out:
        pkg = a[a.index("-p") + 1] if "-p" in a else ""
        head = "".join(f"  bash arg: {x}\n" for x in a)
        if pkg not in self.w.apps:
            return Out((head + "** No activities found to run, monkey aborted.\n").encode(), b"", 251)
        self.w.launch(pkg)
        return _o(head + "Events injected: 1\n## Network stats: elapsed time=12ms (0ms mobile, 0ms wifi, "
                  "12ms not connected)\n")

    def input(self, a: list[str], i: bytes) -> Out:
        from .rpc import press_keycode

        w = self.w
        if a and a[0] in ("touchscreen", "touchpad", "keyboard"):
            a = a[1:]
        verb = a[0] if a else ""
        if verb == "keyevent":
            for key in (x for x in a[1:] if not x.startswith("--")):
                name = key.upper().removeprefix("KEYCODE_")
                code = int(key) if key.isdigit() else KEYCODES.get(name, -1)
                if code == 62:
                    w.type_text(" ")
                elif code >= 0:
                    press_keycode(w, code)
            return Out()
        if verb == "tap":
            w.tap(int(float(a[1])), int(float(a[2])))
            return Out()
        if verb in ("swipe", "draganddrop"):
            x1, y1, x2, y2 = (int(float(v)) for v in a[1:5])
            dur = int(a[5]) if len(a) > 5 else 300
            if (x1, y1) == (x2, y2):
                w.tap(x1, y1, long=dur >= 500)
            else:
                w.swipe(x1, y1, x2, y2)
            return Out()
        if verb == "text":
            w.type_text(" ".join(a[1:]).replace("%s", " "))
            return Out()
        return _e(f"Error: Unknown command: {verb}\n", 1)

    def screencap(self, a: list[str], i: bytes) -> Out:
        png = self.w.screenshot_png()
        files = [x for x in a if not x.startswith("-")]
        if files:
            self.w.fs.write(files[0], png)
            return Out()
        return Out(png)

    # --- packages and processes -------------------------------------------------------------------

    def _packages(self) -> list[str]:
        from .world import SYSTEM_PACKAGES

        return sorted(set(self.w.apps) | set(SYSTEM_PACKAGES))

    def pm(self, a: list[str], i: bytes) -> Out:
        w = self.w
        verb = a[0] if a else ""
        if verb == "list" and a[1:2] == ["packages"]:
            rest = [x for x in a[2:] if x]
            if "-3" in rest:
                return _o("")
            flt = [x for x in rest if not x.startswith("-")]
            pk = [p for p in self._packages() if not flt or flt[0] in p]
            return _o("".join(f"package:{p}\n" for p in pk))
        if verb == "clear":
            pkg = a[-1]
            if pkg not in self._packages():
                return _o("Failed\n", 1)
            w.force_stop(pkg)
            if pkg == "com.google.android.deskclock":
                w.state.clear_alarms()
            elif pkg == "com.android.providers.contacts":
                w.state.clear_contacts()
            return _o("Success\n")
        if verb == "path":
            pkg = a[-1]
            if pkg not in self._packages():
                return _o("", 1)
            return _o(f"package:/product/app/{pkg.rsplit('.', 1)[-1]}/{pkg.rsplit('.', 1)[-1]}.apk\n")
        if verb == "install":
            # Nothing here runs an APK: accept the file as adb's `pm install` would report.
            files = [x for x in a[1:] if not x.startswith("-")]
            if not files or not w.fs.exists(files[-1]):
                return _o(f"Error: Unable to open file: {files[-1] if files else ''}\n"
                          "Consider using a file under /data/local/tmp/\n", 1)
            return _o("Success\n")
        if verb == "uninstall":
            # Every package here is a system app (and unknown ones fail the same way on A14).
            return _o("Failure [DELETE_FAILED_INTERNAL_ERROR]\n", 1)
        if verb in ("grant", "revoke", "enable", "disable-user"):
            return Out()
        return _e(f"Unknown command: {verb}\n", 255)

    def _pid(self, pkg: str) -> int:
        return 1000 + int(hashlib.md5(pkg.encode()).hexdigest()[:4], 16) % 20000

    def ps(self, a: list[str], i: bytes) -> Out:
        head = "USER            PID   PPID        VSZ    RSS WCHAN            ADDR S NAME                       \n"

        def row(user: str, pid: int, ppid: int, name: str) -> str:
            return f"{user:<12}{pid:>7}{ppid:>7} {12000000:>10} {90000:>6} do_epoll_wait       0 S {name}\n"

        if not a:
            return _o(head + row("shell", 4242, 1, "sh") + row("shell", 4243, 4242, "ps"))
        rows = [row("root", 1, 0, "init"), row("system", 600, 1, "system_server"),
                row("u0_a200", self._pid("com.android.systemui"), 600, "com.android.systemui"),
                row("u0_a201", self._pid("com.google.android.apps.nexuslauncher"), 600,
                    "com.google.android.apps.nexuslauncher"),
                row("u0_a202", self._pid("com.google.android.inputmethod.latin"), 600,
                    "com.google.android.inputmethod.latin")]
        for k, pkg in enumerate(self.w.running_packages()):
            rows.append(row(f"u0_a{210 + k}", self._pid(pkg), 600, pkg))
        if self.w.u2_running:
            rows.append(row("shell", 7788, 7700, "uiautomator"))
        return _o(head + "".join(rows))

    def pidof(self, a: list[str], i: bytes) -> Out:
        if a and (a[0] in self.w.running_packages() or a[0] == "com.android.systemui"):
            return _o(f"{self._pid(a[0])}\n")
        if a and a[0] == "uiautomator" and self.w.u2_running:
            return _o("7788\n")
        return _o("", 1)

    def ime(self, a: list[str], i: bytes) -> Out:
        latin = "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME"
        if a[:1] == ["list"]:
            return _o(latin + "\n")
        if a[:1] in (["enable"], ["set"], ["disable"]):
            ime_id = a[-1]
            if ime_id != latin:
                return _o(f"Unknown input method {ime_id} cannot be {a[0]}d for user #0\n")
            return _o(f"Input method {ime_id}: already enabled for user #0\n" if a[0] == "enable"
                      else f"Input method {ime_id} selected for user #0\n")
        return _e(f"Unknown command: {' '.join(a)}\n", 255)

    # --- content provider ------------------------------------------------------------------------

    def content(self, a: list[str], i: bytes) -> Out:
        verb = a[0] if a else ""
        opts: dict[str, str] = {}
        binds: dict[str, str] = {}
        k = 1
        while k < len(a):
            if a[k] == "--bind":
                name, _typ, val = (a[k + 1].split(":", 2) + ["", ""])[:3]
                binds[name] = val
                k += 2
            elif a[k].startswith("--") and k + 1 < len(a):
                opts[a[k]] = a[k + 1]
                k += 2
            else:
                k += 1
        uri = opts.get("--uri", "").rstrip("/")
        st = self.w.state
        if verb == "query":
            rows = self._query(uri)
            if rows is None:
                return _e(f"Error while accessing provider:{uri.split('/')[2] if uri.count('/') > 2 else uri}\n"
                          "java.lang.IllegalArgumentException: Unknown URI " + uri + "\n", 1)
            rows = _where(rows, opts.get("--where"))
            sort = opts.get("--sort")
            if sort:
                col, _, dirn = sort.partition(" ")
                rows.sort(key=lambda r: _sort_key(r.get(col)), reverse=dirn.strip().upper() == "DESC")
            proj = opts.get("--projection")
            cols = proj.split(":") if proj else None
            if not rows:
                return _o("No result found.\n")
            out = []
            for n, r in enumerate(rows):
                keys = cols or list(r)
                out.append(f"Row: {n} " + ", ".join(f"{c}={_val(r.get(c))}" for c in keys))
            return _o("\n".join(out) + "\n")
        if verb == "insert":
            if uri.endswith("/raw_contacts"):
                st.insert_raw_contact(binds.get("account_type") or None, binds.get("account_name") or None)
                return Out()
            if uri.endswith("com.android.contacts/data"):
                st.insert_data(int(binds["raw_contact_id"]), binds.get("mimetype", ""), binds.get("data1"),
                               binds.get("data2"), binds.get("data3"))
                return Out()
            return _e(f"java.lang.IllegalArgumentException: Unknown URI {uri}\n", 1)
        if verb == "delete":
            where = opts.get("--where", "")
            if uri.endswith("/raw_contacts"):
                for r in _where(self._query(uri) or [], where or None):
                    st.delete_raw_contact(int(r["_id"]))
                return Out()
            if uri.endswith("com.android.contacts/data"):
                keep = {d.id for d in st.data_rows} - {int(r["_id"]) for r in _where(self._query(uri) or [], where)}
                st.data_rows = [d for d in st.data_rows if d.id in keep]
                return Out()
            return _e(f"java.lang.IllegalArgumentException: Unknown URI {uri}\n", 1)
        return _e("usage: content [subcommand] [options]\n", 1)

    def _query(self, uri: str) -> list[dict[str, object]] | None:
        st = self.w.state
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


class _Exit(Out):
    """`exit N`: stops the rest of the command line."""


def _perm(mode: int) -> str:
    s = ""
    for shift in (6, 3, 0):
        b = (mode >> shift) & 7
        s += ("r" if b & 4 else "-") + ("w" if b & 2 else "-") + ("x" if b & 1 else "-")
    return s


def _bre(p: str) -> str:
    """grep's basic regex: `\\|` alternation, literal `|+?(){}`."""
    out, k = "", 0
    while k < len(p):
        c = p[k]
        if c == "\\" and k + 1 < len(p):
            nxt = p[k + 1]
            out += nxt if nxt in "|+?(){}" else "\\" + nxt
            k += 2
            continue
        out += "\\" + c if c in "|+?(){}" else c
        k += 1
    return out


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

        def ok(r: dict[str, object], col: str = col, op: str = op, val: str = val) -> bool:
            cur = _val(r.get(col))
            if op == "=":
                return cur == val
            if op in ("!=", "<>"):
                return cur != val
            try:
                return float(cur) > float(val) if op == ">" else float(cur) < float(val)
            except ValueError:
                return False
        out = [r for r in out if ok(r)]
    return out
