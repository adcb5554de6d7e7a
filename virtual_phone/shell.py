"""`adb shell` of the virtual phone: a small sh (`;` `&&` `||` `|` `>` `2>&1` `$?`) and Android 14's commands.

The line is split by shell_lex (mksh's quoting); this module runs what it split.

Output formats follow AOSP (docs/android-state.md) because tasks and
checks written against this phone must run unchanged on a real one. The commands live in
groups (shell_state, shell_apps, shell_content); this module is the sh and the file tools.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable

from .core import ShellResult
from .shell_apps import AppCommands
from .shell_base import Exit, Out, fail, ok
from .shell_content import ContentCommands
from .shell_files import FileCommands
from .shell_find import FindCommands
from .shell_lex import STATUS, LexError, is_op, split
from .shell_state import StateCommands
from .shell_system import SystemCommands
from .ui import Ui


# A sleep longer than this ends early: the thread it holds is one of the phone's few.
MAX_SLEEP_S = 600.0


class Shell(StateCommands, AppCommands, ContentCommands, FileCommands, FindCommands, SystemCommands):
    def __init__(self, world: Ui) -> None:
        self.w = world
        self.last = 0
        self.cancel = threading.Event()   # set when the client closes the stream (World.shell)
        self.cmds: dict[str, Callable[[list[str], bytes], Out]] = {
            "echo": self.echo, "getprop": self.getprop, "settings": self.settings, "svc": self.svc,
            "cmd": self.cmd, "dumpsys": self.dumpsys, "wm": self.wm, "am": self.am, "monkey": self.monkey,
            "input": self.input, "screencap": self.screencap, "pm": self.pm, "ps": self.ps,
            "md5sum": self.md5sum, "md5": self.md5sum, "toybox": self.toybox, "ls": self.ls, "cat": self.cat,
            "rm": self.rm, "mkdir": self.mkdir, "touch": self.touch, "ime": self.ime, "content": self.content,
            "grep": self.grep, "head": self.head, "tail": self.tail, "wc": self.wc, "true": lambda a, i: ok(),
            "false": lambda a, i: ok("", 1), "date": self.date, "id": self.id, "sleep": self.sleep,
            "logcat": self.logcat, "log": self.log, "pwd": self.pwd, "ifconfig": self.ifconfig, "ip": self.ip,
            "export": lambda a, i: ok(), "exec": self.exec_, "app_process": lambda a, i: ok(), "setprop": lambda a, i: ok(),
            "uptime": self.uptime, "whoami": lambda a, i: ok("shell\n"), "exit": self.exit,
            "pidof": self.pidof, "which": self.which, "uiautomator": self.uiautomator,
            "appops": self.appops, "mv": self.mv, "cp": self.cp, "stat": self.stat, "find": self.find,
        }

    # --- the little sh --------------------------------------------------------------------

    def run(self, command: str) -> ShellResult:
        try:
            toks = split(command)
        except LexError as e:
            return ShellResult(b"", f"/system/bin/sh: syntax error: {e}\n".encode(), 2)
        out, err, merged = bytearray(), bytearray(), bytearray()
        i, skip = 0, False
        while i < len(toks):
            j = i
            while j < len(toks) and not is_op(toks[j], ";", "&&", "||", "&"):
                j += 1
            if not skip:
                o = self._pipeline(toks[i:j])
                out += o.stdout
                err += o.stderr
                merged += o.stderr + o.stdout
                self.last = o.code
                if isinstance(o, Exit):
                    break
            op = toks[j] if j < len(toks) else ";"
            skip = (op == "&&" and self.last != 0) or (op == "||" and self.last == 0)
            i = j + 1
        return ShellResult(bytes(out), bytes(err), self.last, bytes(merged))

    def _pipeline(self, toks: list[str]) -> Out:
        stages: list[list[str]] = [[]]
        for t in toks:
            if is_op(t, "|"):
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
        return Exit(data, err, res.code) if isinstance(res, Exit) else Out(data, err, res.code)

    def _simple(self, toks: list[str], stdin: bytes) -> Out:
        args: list[str] = []
        redirects: list[tuple[str, str]] = []
        k = 0
        while k < len(toks):
            t = toks[k]
            if is_op(t):
                if k + 1 >= len(toks) or is_op(toks[k + 1]):
                    return fail(f"/system/bin/sh: syntax error: unexpected '{t}'\n", 2)
                redirects.append((str(t), toks[k + 1].replace(STATUS, str(self.last))))
                k += 2
                continue
            args.append(t.replace(STATUS, str(self.last)))
            k += 1
        for op, target in redirects:
            if op == "<":
                if not self.w.fs.exists(target):
                    return fail(f"/system/bin/sh: can't open {target}: No such file or directory\n", 1)
                stdin = self.w.fs.read(target)
        while args and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", args[0]):
            args.pop(0)  # VAR=value prefixes (CLASSPATH=... app_process)
        if not args:
            return Out()
        name = args[0]
        fn = self.cmds.get(name.rsplit("/", 1)[-1])
        if fn is None:
            res = fail(f"/system/bin/sh: {name}: inaccessible or not found\n", 127)
        else:
            try:
                res = fn(args[1:], stdin)
            except (IndexError, ValueError):
                res = fail(f"{name}: bad arguments\n", 1)
        for op, target in redirects:
            res = self._redirect(res, op, target)
        return res

    def _redirect(self, res: Out, op: str, target: str) -> Out:
        """Apply one redirection to a finished command's output, left to right as sh does."""
        if op in ("2>&", ">&"):
            if target == "1" and op == "2>&":
                return Out(res.stdout + res.stderr, b"", res.code)
            if target == "2" and op == ">&":
                return Out(b"", res.stderr + res.stdout, res.code)
            return res
        if op in (">", ">>", "1>", "1>>"):
            data, res = res.stdout, Out(b"", res.stderr, res.code)
        elif op in ("2>", "2>>"):
            data, res = res.stderr, Out(res.stdout, b"", res.code)
        else:
            return res
        if target != "/dev/null":
            append = op.endswith(">>")
            prev = self.w.fs.read(target) if append and self.w.fs.exists(target) else b""
            self.w.fs.write(target, prev + data)
        return res

    def sleep(self, a: list[str], i: bytes) -> Out:
        """toybox sleep: seconds (fractions allowed) with an optional s/m/h/d suffix, summed."""
        total = 0.0
        for arg in a:
            m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)", arg)
            if m is None:
                return fail(f"sleep: invalid time interval '{arg}'\n", 1)
            total += float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
        if not a:
            return fail("sleep: Need 1 argument (see \"sleep --help\")\n", 1)
        if self.hold(total):
            return Exit(b"", b"", 130)    # the client hung up: sh gets SIGHUP and the line ends
        return Out()

    def hold(self, seconds: float) -> bool:
        """Let `seconds` of wall time pass (at most MAX_SLEEP_S); True if the client hung up first."""
        return self.w.wait_unlocked(self.cancel, min(max(0.0, seconds), MAX_SLEEP_S))

    def exec_(self, a: list[str], i: bytes) -> Out:
        """`exec CMD ARGS`: the command replaces the shell, so nothing after it on the line runs."""
        if not a:
            return Out()
        fn = self.cmds.get(a[0].rsplit("/", 1)[-1])
        if fn is None:
            return Exit(b"", f"/system/bin/sh: exec: {a[0]}: inaccessible or not found\n".encode(), 127)
        res = fn(a[1:], i)
        return Exit(res.stdout, res.stderr, res.code)

    def exit(self, a: list[str], i: bytes) -> Out:
        return Exit(b"", b"", int(a[0]) if a else self.last)

    # --- simple tools -----------------------------------------------------------------------

    def echo(self, a: list[str], i: bytes) -> Out:
        nl = "\n"
        if a and a[0] == "-n":
            a, nl = a[1:], ""
        return ok(" ".join(a) + nl)

    def getprop(self, a: list[str], i: bytes) -> Out:
        props = self.w.props()
        if not a:
            return ok("".join(f"[{k}]: [{v}]\n" for k, v in sorted(props.items())))
        return ok(props.get(a[0], a[1] if len(a) > 1 else "") + "\n")

    def date(self, a: list[str], i: bytes) -> Out:
        if a and a[0] == "+%s":
            return ok(f"{int(self.w.state.clock.now())}\n")
        return ok(time.strftime("%a %b %d %H:%M:%S GMT %Y\n", self.w.state.clock.gmtime()))

    def uptime(self, a: list[str], i: bytes) -> Out:
        up = int(self.w.state.clock.elapsed())
        return ok(f" {time.strftime('%H:%M:%S', self.w.state.clock.gmtime())} up 0 days, {up // 3600}:{up % 3600 // 60:02d},"
                  f"  0 users,  load average: 0.50, 0.40, 0.30\n")

    def id(self, a: list[str], i: bytes) -> Out:
        return ok("uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),1011(adb),"
                  "1015(sdcard_rw),1028(sdcard_r),3001(net_bt_admin),3002(net_bt),3003(inet) "
                  "context=u:r:shell:s0\n")

    def which(self, a: list[str], i: bytes) -> Out:
        found = [f"/system/bin/{n}" for n in a if n in self.cmds]
        return ok("".join(f + "\n" for f in found), 0 if len(found) == len(a) else 1)

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
            return fail("usage: grep [-civoqE] [-A NUM] [-B NUM] PATTERN [FILE...]\n", 2)
        data = i
        for f in files:
            if not self.w.fs.exists(f):
                return fail(f"grep: {f}: No such file or directory\n", 2)
            data += self.w.fs.read(f)
        try:
            rx = [re.compile(p if ("E" in flags) else _bre(p), re.I if "i" in flags else 0) for p in pats]
        except re.error:
            return fail("grep: bad regex\n", 2)
        lines = data.decode(errors="replace").splitlines()
        hit_idx = [n for n, ln in enumerate(lines) if any(r.search(ln) for r in rx) != ("v" in flags)]
        code = 0 if hit_idx else 1
        if "q" in flags:
            return ok("", code)
        if "c" in flags:
            return ok(f"{len(hit_idx)}\n", code)
        if not (after or before):
            return ok("".join(lines[n] + "\n" for n in hit_idx), code)
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
        return ok("".join(x + "\n" for x in out), code)

    def head(self, a: list[str], i: bytes) -> Out:
        n = int(a[a.index("-n") + 1]) if "-n" in a else 10
        return Out(b"".join(i.splitlines(keepends=True)[:n]))

    def tail(self, a: list[str], i: bytes) -> Out:
        n = int(a[a.index("-n") + 1]) if "-n" in a else 10
        return Out(b"".join(i.splitlines(keepends=True)[-n:]))

    def wc(self, a: list[str], i: bytes) -> Out:
        return ok(f"{len(i.splitlines())}\n")

    # --- files ------------------------------------------------------------------------------

    def toybox(self, a: list[str], i: bytes) -> Out:
        if not a:
            return ok("")
        fn = self.cmds.get(a[0])
        if fn is None:
            return fail(f"toybox: Unknown command {a[0]}\n", 1)
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
