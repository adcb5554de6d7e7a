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


def _arg_count(name: str, paths: list[str]) -> Out | None:
    """toybox's answer to too few operands (lib/args.c's help_exit, then cp_main's own check)."""
    if not paths:
        return Out(b"", f'{name}: Need 1 argument (see "{name} --help")\n'.encode(), 1)
    if len(paths) < 2:
        return Out(b"", f"{name}: Needs 2 arguments\n".encode(), 1)
    return None


class FileCommands(Commands):
    def mv(self, a: list[str], i: bytes) -> Out:
        """toybox mv (toys/posix/cp.c): rename(2) each SRC to DEST, or into DEST when it is a directory.

        A failed rename is `mv: bad 'SRC': <strerror>` (perror_msg("bad '%s'", src)), exit 1, and
        the other sources are still moved; several sources need DEST to be a directory.
        """
        paths = [x for x in a if not x.startswith("-")]
        bad = _arg_count("mv", paths)
        if bad is not None:
            return bad
        fs = self.w.fs
        *srcs, dst = paths
        dst_st = fs.stat(dst)
        into = dst_st is not None and dst_st.is_dir
        if not into and len(srcs) > 1:
            return Out(b"", f"mv: '{dst}' not directory\n".encode(), 1)
        err, code = "", 0
        for src in srcs:
            target = posixpath.join(dst, posixpath.basename(src.rstrip("/"))) if into else dst
            try:
                fs.move(src, target)
            except OSError as e:
                err += f"mv: bad '{src}': {e.strerror}\n"
                code = 1
        return Out(b"", err.encode(), code)

    def cp(self, a: list[str], i: bytes) -> Out:
        paths = [x for x in a if not x.startswith("-")]
        recursive = any(x.startswith("-") and ("r" in x or "R" in x or "a" in x) for x in a)
        bad = _arg_count("cp", paths)
        if bad is not None:
            return bad
        fs = self.w.fs
        *srcs, dst = paths
        dst_st = fs.stat(dst)
        err, code = "", 0
        for src in srcs:
            st = fs.stat(src)
            if st is None:
                err += f"cp: bad '{src}': No such file or directory\n"   # cp.c, as for mv
                code = 1
                continue
            target = posixpath.join(dst, posixpath.basename(src.rstrip("/"))) if dst_st and dst_st.is_dir else dst
            if st.is_dir and not recursive:
                err += f"cp: {src}: Is a directory\n"
                code = 1
                continue
            if fs.stat(posixpath.dirname(target) or "/") is None:
                err += f"cp: {target}: No such file or directory\n"
                code = 1
                continue
            try:
                self._copy(src, target)
            except OSError:
                err += f"cp: {target}: Operation not permitted\n"
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
