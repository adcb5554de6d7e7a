"""toybox `mv`, `cp` and `stat`: what file tasks set up and check with (Android 14 ships toybox 0.8.x).

`stat -c FORMAT` knows %n (name), %s (size), %Y (mtime, epoch s), %F (file type: "directory",
"regular file", "regular empty file" for size 0), %a (octal permissions), as toybox's
toys/other/stat.c prints them; a missing file is `stat: 'PATH': No such file or directory`.
"""

from __future__ import annotations

import posixpath
import stat as _stat
import time

from .shell_base import Commands, Out


def _ftype(mode: int, size: int) -> str:
    if _stat.S_ISDIR(mode):
        return "directory"
    return "regular empty file" if size == 0 else "regular file"


class FileCommands(Commands):
    def mv(self, a: list[str], i: bytes) -> Out:
        return self._transfer("mv", a)

    def cp(self, a: list[str], i: bytes) -> Out:
        return self._transfer("cp", a)

    def _transfer(self, name: str, a: list[str]) -> Out:
        paths = [x for x in a if not x.startswith("-")]
        recursive = any(x.startswith("-") and ("r" in x or "R" in x or "a" in x) for x in a)
        if len(paths) < 2:
            return Out(b"", f"{name}: needs 2 arguments\n".encode(), 1)
        fs = self.w.fs
        *srcs, dst = paths
        dst_st = fs.stat(dst)
        err, code = "", 0
        for src in srcs:
            st = fs.stat(src)
            if st is None:
                err += f"{name}: {src}: No such file or directory\n"
                code = 1
                continue
            target = posixpath.join(dst, posixpath.basename(src.rstrip("/"))) if dst_st and dst_st.is_dir else dst
            if name == "cp" and st.is_dir and not recursive:
                err += f"cp: {src}: Is a directory\n"
                code = 1
                continue
            if fs.stat(posixpath.dirname(target) or "/") is None:
                err += f"{name}: {target}: No such file or directory\n"
                code = 1
                continue
            try:
                if name == "mv":
                    fs.move(src, target)
                else:
                    self._copy(src, target)
            except (OSError, PermissionError):
                err += f"{name}: {target}: Operation not permitted\n"
                code = 1
        return Out(b"", err.encode(), code)

    def _copy(self, src: str, dst: str) -> None:
        fs = self.w.fs
        st = fs.stat(src)
        if st is None:
            return
        if not st.is_dir:
            fs.write(dst, fs.read(src), mode=st.mode)
            return
        fs.mkdir(dst)
        for child, _s in fs.listdir(src):
            self._copy(posixpath.join(src, child), posixpath.join(dst, child))

    def stat(self, a: list[str], i: bytes) -> Out:
        fmt = None
        paths: list[str] = []
        k = 0
        while k < len(a):
            if a[k] in ("-c", "--format") and k + 1 < len(a):
                fmt = a[k + 1]
                k += 2
                continue
            if not a[k].startswith("-"):
                paths.append(a[k])
            k += 1
        out, err, code = "", "", 0
        for p in paths:
            st = self.w.fs.stat(p)
            if st is None:
                err += f"stat: '{p}': No such file or directory\n"
                code = 1
                continue
            fields = {"n": p, "s": str(st.size), "Y": str(st.mtime), "F": _ftype(st.mode, st.size),
                      "a": f"{st.mode & 0o777:o}", "%": "%"}
            if fmt is not None:
                text = ""
                j = 0
                while j < len(fmt):
                    if fmt[j] == "%" and j + 1 < len(fmt):
                        text += fields.get(fmt[j + 1], "?")
                        j += 2
                    else:
                        text += fmt[j]
                        j += 1
                out += text + "\n"
            else:
                mt = time.strftime("%Y-%m-%d %H:%M:%S.000000000 +0000", time.gmtime(st.mtime))
                out += (f"  File: `{p}'\n  Size: {st.size}\t Blocks: {(st.size + 511) // 512}\t IO Blocks: 4096\t"
                        f"{_ftype(st.mode, st.size)}\nAccess: ({st.mode & 0o7777:04o})\tUid: ( 2000/   shell)\t"
                        f"Gid: ( 9997/everybody)\nModify: {mt}\n")
        return Out(out.encode(), err.encode(), code)
