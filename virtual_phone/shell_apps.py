"""Activity, input, package and process commands: am, monkey, input, screencap, uiautomator, pm, appops, ps, ime."""

from __future__ import annotations

import base64
import binascii

from .apk import ApkError
from .apk import read as read_apk
from .core import Intent, Package
from .hierarchy import to_dump_xml
from .screenshot import render
from .shell_base import Commands, Out, fail, ok

KEYCODES = {
    "HOME": 3, "BACK": 4, "CALL": 5, "ENDCALL": 6, "DPAD_UP": 19, "DPAD_DOWN": 20, "DPAD_LEFT": 21,
    "DPAD_RIGHT": 22, "DPAD_CENTER": 23, "VOLUME_UP": 24, "VOLUME_DOWN": 25, "POWER": 26, "CAMERA": 27,
    "TAB": 61, "SPACE": 62, "ENTER": 66, "DEL": 67, "MENU": 82, "SEARCH": 84, "APP_SWITCH": 187,
    "WAKEUP": 224, "SLEEP": 223, "VOLUME_MUTE": 164, "ESCAPE": 111,
}

U2_PID = 7788
LATIN_IME = "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME"
# The broadcasts uiautomator2's AdbKeyboard (com.github.uiautomator/.AdbKeyboard) receives while
# it is the selected input method; each answers result=-1 (RESULT_OK) as its receiver does.
ADB_KEYBOARD = "com.github.uiautomator/.AdbKeyboard"
_KEYBOARD_ACTIONS = ("ADB_KEYBOARD_INPUT_TEXT", "ADB_KEYBOARD_CLEAR_TEXT", "ADB_KEYBOARD_HIDE",
                     "ADB_KEYBOARD_SMART_ENTER", "ADB_KEYBOARD_EDITOR_CODE", "ADB_KEYBOARD_INPUT_KEYCODE")


# AOSP cmds/uiautomator Launcher.HelpCommand with the dump and events subcommands.
_UIAUTOMATOR_USAGE = """Usage: uiautomator <subcommand> [options]

Available subcommands:

help: displays help message

runtest: executes UI automation tests
    runtest <class spec> [options]
    <class spec>: <JARS> < -c <CLASSES> | -e class <CLASSES> >
      <JARS>: a list of jar files containing test classes and dependencies. If
        the path is relative, it's assumed to be under /data/local/tmp. Use
        absolute path if the file is elsewhere. Multiple files can be
        specified, separated by space.
      <CLASSES>: a list of test class names to run, separated by comma. To
        a single method, use TestClass#testMethod format. The -e or -c option
        may be repeated. This option is not required and if not provided then
        all the tests in provided jars will be run automatically.
    options:
      --nohup: trap SIG_HUP, so test won't terminate even if parent process
               is terminated, e.g. USB is disconnected.
      -e debug [true|false]: wait for debugger to connect before starting.
      -e runner [CLASS]: use specified test runner class instead. If
        unspecified, framework default runner will be used.
      -e <NAME> <VALUE>: other name-value pairs to be passed to test classes.
        May be repeated.
      -e outputFormat simple | -s: enabled less verbose JUnit style output.

dump: creates an XML dump of current UI hierarchy
    dump [--verbose][file]
      [--compressed]: dumps compressed layout information.
      [file]: the location where the dumped XML should be stored, default is
      /sdcard/window_dump.xml

events: prints out accessibility events until terminated
"""


class AppCommands(Commands):
    def am(self, a: list[str], i: bytes) -> Out:
        w = self.w
        verb = a[0] if a else ""
        if verb == "force-stop":
            w.force_stop(a[-1])
            return Out()
        if verb == "broadcast":
            act = a[a.index("-a") + 1] if "-a" in a else ""
            extras = " (has extras)" if any(x in a for x in ("--es", "--ei", "--ez")) else ""
            head = f"Broadcasting: Intent {{ act={act} flg=0x400000{extras} }}\n"
            if act == "android.intent.action.AIRPLANE_MODE":
                return Out(head.encode(), (f"Exception occurred while executing 'broadcast':\n"
                                           f"java.lang.SecurityException: Permission Denial: not allowed to send "
                                           f"broadcast {act} from pid=4242, uid=2000\n").encode(), 255)
            if act in _KEYBOARD_ACTIONS:
                return self._keyboard(act, a, head)
            return ok(head + "Broadcast completed: result=0\n")
        if verb in ("start", "start-activity"):
            return self._am_start(a[1:])
        return fail(f"Unknown command: {verb}\n", 255)

    def _keyboard(self, act: str, a: list[str], head: str) -> Out:
        w = self.w
        if w.state.get("secure", "default_input_method") != ADB_KEYBOARD:
            return ok(head + "Broadcast completed: result=0\n")    # no receiver registered
        extras = {a[k + 1]: a[k + 2] for k in range(len(a) - 2) if a[k] in ("--es", "--ei")}
        if act == "ADB_KEYBOARD_INPUT_TEXT":
            try:
                w.type_text(base64.b64decode(extras.get("text", "")).decode("utf-8"))
            except (binascii.Error, UnicodeDecodeError):
                return ok(head + 'Broadcast completed: result=0, data="bad base64 text"\n')
        elif act == "ADB_KEYBOARD_CLEAR_TEXT":
            field = w.focused_field()
            if field is not None and field.on_text is not None:
                field.on_text("")
                w.invalidate()
        elif act in ("ADB_KEYBOARD_SMART_ENTER", "ADB_KEYBOARD_EDITOR_CODE"):
            w.press_key(66)
        elif act == "ADB_KEYBOARD_INPUT_KEYCODE":
            w.press_key(int(extras.get("code", "-1")))
        return ok(head + 'Broadcast completed: result=-1, data="success"\n')

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
                return ok(f"Starting: Intent {{ cmp={comp} }}\nError type 3\n"
                          f"Error: Activity class {{{comp}}} does not exist.\n")
            w.launch(pkg)
            return ok(f"Starting: Intent {{ cmp={comp} }}\n")
        head = f"Starting: Intent {{ act={act}{' (has extras)' if extras else ''} }}\n"
        intent = Intent(action=act, data=opts.get("-d", ""), mime=opts.get("-t", ""), extras=extras)
        if w.start(intent):
            return ok(head)
        if act == "android.intent.action.MAIN" and "-n" not in opts:
            w.home()
            return ok(head)
        return ok(head + "Error: Activity not started, unable to resolve Intent "
                  f"{{ act={act} flg=0x10000000 }}\n")

    def monkey(self, a: list[str], i: bytes) -> Out:
        pkg = a[a.index("-p") + 1] if "-p" in a else ""
        head = "".join(f"  bash arg: {x}\n" for x in a)
        if pkg not in self.w.apps:
            return Out((head + "** No activities found to run, monkey aborted.\n").encode(), b"", 251)
        self.w.launch(pkg)
        return ok(head + "Events injected: 1\n## Network stats: elapsed time=12ms (0ms mobile, 0ms wifi, "
                  "12ms not connected)\n")

    def input(self, a: list[str], i: bytes) -> Out:
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
                    w.press_key(code)
            return Out()
        if verb == "tap":
            w.tap(int(float(a[1])), int(float(a[2])))
            return Out()
        if verb in ("swipe", "draganddrop"):
            x1, y1, x2, y2 = (int(float(v)) for v in a[1:5])
            dur = int(a[5]) if len(a) > 5 else 300   # InputShellCommand's default, ms
            if self.hold(dur / 1000.0):
                return Out(b"", b"", 130)
            if (x1, y1) == (x2, y2):
                w.tap(x1, y1, long=dur >= 500)
            else:
                w.swipe(x1, y1, x2, y2)
            return Out()
        if verb == "text":
            w.type_text(" ".join(a[1:]).replace("%s", " "))
            return Out()
        return fail(f"Error: Unknown command: {verb}\n", 1)

    def screencap(self, a: list[str], i: bytes) -> Out:
        png = render(self.w, "PNG")
        files = [x for x in a if not x.startswith("-")]
        if files:
            self.w.fs.write(files[0], png)
            return Out()
        return Out(png)

    def uiautomator(self, a: list[str], i: bytes) -> Out:
        """`uiautomator dump [--compressed] [FILE]` as AOSP's DumpCommand answers it.

        The file defaults to /sdcard/window_dump.xml; /dev/tty (the usual `exec-out` idiom)
        is the command's own output, so the XML comes first and the message right after it.
        """
        if not a or a[0] != "dump":
            return ok(_UIAUTOMATOR_USAGE)
        path = "/sdcard/window_dump.xml"
        for arg in a[1:]:
            if not arg.startswith("-"):
                path = arg if arg.startswith("/") else "/" + arg  # java.io.File against cwd /
        xml = to_dump_xml(self.w.active_window().root, compressed="--compressed" in a[1:])
        msg = f"UI hierchary dumped to: {path}\n"  # sic: AOSP's spelling
        if path == "/dev/tty":
            return ok(xml + msg)
        if self.w.fs.exists(path.rsplit("/", 1)[0] or "/"):
            self.w.fs.write(path, xml.encode())
        return ok(msg)  # a FileWriter failure is only logged; the message is printed regardless

    # --- packages and processes -------------------------------------------------------------------

    def pm(self, a: list[str], i: bytes) -> Out:
        w = self.w
        verb = a[0] if a else ""
        if verb == "list" and a[1:2] == ["packages"]:
            rest = [x for x in a[2:] if x]
            if "-3" in rest:
                return ok("".join(f"package:{p}\n" for p in sorted(w.user_packages)))
            flt = [x for x in rest if not x.startswith("-")]
            pk = [p for p in self._packages() if not flt or flt[0] in p]
            return ok("".join(f"package:{p}\n" for p in pk))
        if verb == "clear":
            pkg = a[-1]
            if pkg not in self._packages():
                return ok("Failed\n", 1)
            w.force_stop(pkg)
            clear = w.packages[pkg].clear
            if clear is not None:
                clear(w.state)
            return ok("Success\n")
        if verb == "path":
            pkg = a[-1]
            if pkg not in self._packages():
                return ok("", 1)
            return ok(f"package:/product/app/{pkg.rsplit('.', 1)[-1]}/{pkg.rsplit('.', 1)[-1]}.apk\n")
        if verb == "install":
            # Nothing here runs an APK: accept the file as adb's `pm install` would report.
            files = [x for x in a[1:] if not x.startswith("-")]
            if not files or not w.fs.exists(files[-1]):
                return ok(f"Error: Unable to open file: {files[-1] if files else ''}\n"
                          "Consider using a file under /data/local/tmp/\n", 1)
            try:
                info = read_apk(w.fs.read(files[-1]))
            except ApkError:
                return ok("Failure [INSTALL_PARSE_FAILED_NOT_APK: Failed to parse "
                          f"{files[-1]}: Failed to load asset path {files[-1]}]\n", 1)
            # Nothing in it runs; the package is listed, and an input method it declares is
            # listed by `ime list -a` and can be enabled and selected.
            w.packages.setdefault(info.package, Package(pkg=info.package))
            w.user_packages[info.package] = info.input_methods
            return ok("Success\n")
        if verb == "uninstall":
            pkg = a[-1]
            if pkg in w.user_packages:
                w.packages.pop(pkg, None)
                for ime in w.user_packages.pop(pkg):
                    if w.state.get("secure", "default_input_method") == ime:
                        w.state.put("secure", "default_input_method", LATIN_IME)
                return ok("Success\n")
            # Every other package here is a system app (and unknown ones fail the same way on A14).
            return ok("Failure [DELETE_FAILED_INTERNAL_ERROR]\n", 1)
        if verb in ("grant", "revoke", "enable", "disable-user"):
            return Out()
        return fail(f"Unknown command: {verb}\n", 255)

    def appops(self, a: list[str], i: bytes) -> Out:
        """`appops set PKG OP MODE` (silent on success), the one form tasks use; other forms are
        not emulated and fail rather than answer in a made-up format."""
        st = self.w.state
        if a[:1] == ["set"] and len(a) >= 4 and a[-1] in ("allow", "ignore", "deny", "default", "foreground"):
            pkg, op, mode = a[-3], a[-2].removeprefix("android:").upper(), a[-1]
            if mode == "default":
                st.appops.pop((pkg, op), None)
            else:
                st.appops[(pkg, op)] = mode
            return Out()
        return fail(f"appops {' '.join(a)}: not emulated by the virtual phone\n", 255)

    def ps(self, a: list[str], i: bytes) -> Out:
        head = "USER            PID   PPID        VSZ    RSS WCHAN            ADDR S NAME                       \n"

        def row(user: str, pid: int, ppid: int, name: str) -> str:
            return f"{user:<12}{pid:>7}{ppid:>7} {12000000:>10} {90000:>6} do_epoll_wait       0 S {name}\n"

        if not a:
            return ok(head + row("shell", 4242, 1, "sh") + row("shell", 4243, 4242, "ps"))
        rows = [row("root", 1, 0, "init"), row("system", 600, 1, "system_server"),
                row("u0_a200", self._pid("com.android.systemui"), 600, "com.android.systemui"),
                row("u0_a201", self._pid("com.google.android.apps.nexuslauncher"), 600,
                    "com.google.android.apps.nexuslauncher"),
                row("u0_a202", self._pid("com.google.android.inputmethod.latin"), 600,
                    "com.google.android.inputmethod.latin")]
        for k, pkg in enumerate(self.w.running_packages()):
            rows.append(row(f"u0_a{210 + k}", self._pid(pkg), 600, pkg))
        if self.w.u2_running:
            # `app_process / com.wetest.uia2.Main` sets no --nice-name: ps names it app_process.
            rows.append(row("shell", U2_PID, 7700, "app_process"))
        rows += [row("shell", 4242, 1, "sh"), row("shell", 4243, 4242, "ps")]
        if "-u" in a or "-U" in a:
            flag = "-u" if "-u" in a else "-U"
            users = set(a[a.index(flag) + 1].split(",")) if a.index(flag) + 1 < len(a) else set()
            rows = [r for r in rows if r.split()[0] in users]
        return ok(head + "".join(rows))

    def pidof(self, a: list[str], i: bytes) -> Out:
        if a and (a[0] in self.w.running_packages() or a[0] == "com.android.systemui"):
            return ok(f"{self._pid(a[0])}\n")
        if a and a[0] == "app_process" and self.w.u2_running:
            return ok(f"{U2_PID}\n")
        return ok("", 1)

    def ime(self, a: list[str], i: bytes) -> Out:
        """`ime list [-s] [-a]`, `ime enable|disable|set ID` (IMMS's shell command, Android 14)."""
        st = self.w.state
        known = [LATIN_IME] + [m for ms in self.w.user_packages.values() for m in ms]
        enabled = [m for m in (st.get("secure", "enabled_input_methods") or "").split(":") if m]
        if a[:1] == ["list"]:
            shown = known if "-a" in a else [m for m in known if m in enabled]
            if "-s" in a:
                return ok("".join(m + "\n" for m in shown))
            return ok("".join(f"{m}:\n  mId={m}\n" for m in shown))
        if a[:1] in (["enable"], ["set"], ["disable"]) and len(a) >= 2:
            verb, ime_id = a[0], a[-1]
            if ime_id not in known:
                return ok(f"Unknown input method {ime_id} cannot be {'selected' if verb == 'set' else verb + 'd'}"
                          " for user #0\n")
            if verb == "set":
                st.put("secure", "default_input_method", ime_id)
                return ok(f"Input method {ime_id} selected for user #0\n")
            was = ime_id in enabled
            if verb == "enable":
                if not was:
                    st.put("secure", "enabled_input_methods", ":".join(enabled + [ime_id]))
                return ok(f"Input method {ime_id}: {'already enabled' if was else 'now enabled'} for user #0\n")
            if was:
                st.put("secure", "enabled_input_methods", ":".join(m for m in enabled if m != ime_id))
                if st.get("secure", "default_input_method") == ime_id:
                    st.put("secure", "default_input_method", LATIN_IME)
            return ok(f"Input method {ime_id}: {'now disabled' if was else 'already disabled'} for user #0\n")
        return fail(f"Unknown command: {' '.join(a)}\n", 255)
