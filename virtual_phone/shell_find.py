"""toybox `find` (toys/posix/find.c): what a judge lists and hashes files with.

The behaviour and messages used here read the same in find.c from toybox 0.8.4 to today's, so
they hold for whichever snapshot Android 14 ships (not checked on a phone).

Known: paths until the first word starting with `-`, `!` or `(` (none: `.`), then `-mindepth N`,
`-maxdepth N`, `-type f|d` (letters may be joined: `-type f,d`), `-name`/`-iname GLOB`, `-print`,
`-print0`, `-a`, and `-exec CMD ARGS... ;` / `-exec CMD ARGS... {} +`. They are ANDed left to
right, as toybox evaluates them (a failing test skips the rest of the line for that entry); with
no `-print`/`-exec` a matching entry is printed. `!`, `(`, `-o` and the other tests are refused
with a message that says so rather than answered wrongly.

Output as toybox's: a directory before its contents (no `-depth`), each path as given with the
names below it joined by one `/` (dirtree_path). toybox lists a directory in readdir order; this
phone lists it sorted, so the output is the same on every run. A missing path prints
`find: 'PATH': No such file or directory` (find.c quotes it: perror_msg("'%s'")), sets the exit
code to 1 and the other paths are still searched.

`-exec` runs the command through the shell's own command table, with each path as one argument
(no word splitting, so names with spaces survive). `... {} ;` runs once per entry and is a test
(true when the command exits 0); `... {} +` collects the paths and runs once after the search,
and its exit code is ORed into find's (toys.exitval |= flush_exec()).
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .fs import FileStat
from .shell_base import Commands, Out


class FindError(ValueError):
    """A command line find refuses before searching (toybox's error_exit: message, exit 1)."""


@dataclass
class _Exec:
    argv: list[str]        # the command's words; "{}" at `curly` is where the paths go
    curly: int             # index of "{}" in argv, -1 when there is none
    plus: bool             # `{} +`: collect the paths, run once at the end
    names: list[str] = field(default_factory=list)

    def command(self, paths: list[str]) -> list[str]:
        if self.curly < 0:
            return list(self.argv)
        return self.argv[:self.curly] + paths + self.argv[self.curly + 1:]


# One step of the expression: a test on (path as printed, stat, depth), a print with its
# terminator, or an -exec.
_Test = Callable[[str, FileStat, int], bool]
_Step = _Test | str | _Exec

_UNSUPPORTED_HINT = "not implemented on the virtual phone"


def _parse(words: list[str]) -> tuple[list[_Step], int | None]:
    """The steps, and the depth below which nothing is read (the smallest -maxdepth)."""
    steps: list[_Step] = []
    limit: int | None = None
    k = 0
    while k < len(words):
        w = words[k]
        if w == "-exec":
            ex, k = _parse_exec(words, k + 1)
            steps.append(ex)
            continue
        if w in ("-print", "-print0"):
            steps.append("\n" if w == "-print" else "\0")
        elif w == "-a":
            pass                            # and: what juxtaposition means anyway
        elif w in _TESTS:
            if k + 1 >= len(words):
                raise FindError(f"'{w}' needs 1 arg")
            k += 1
            steps.append(_TESTS[w](words[k]))
            if w == "-maxdepth":
                limit = int(words[k]) if limit is None else min(limit, int(words[k]))
        elif w.startswith("-") or w in ("!", "(", ")"):
            raise FindError(f"{w}: {_UNSUPPORTED_HINT}")
        else:
            raise FindError(f"bad arg '{w}'")   # find.c's own message for a stray word
        k += 1
    return steps, limit


def _depth_at_least(arg: str) -> _Test:
    n = int(arg)
    return lambda path, st, depth: depth >= n


def _depth_at_most(arg: str) -> _Test:
    n = int(arg)
    return lambda path, st, depth: depth <= n


def _type(arg: str) -> _Test:
    letters = arg.replace(",", "")
    for c in letters:
        if c not in "bcdlpfs":
            raise FindError(f"bad -type '{c}'")
    # The virtual fs holds only directories and regular files.
    return lambda path, st, depth: ("d" if st.is_dir else "f") in letters


def _name(glob: str, fold: bool = False) -> _Test:
    # fnmatch(3) with FNM_PATHNAME on the basename; Python's fnmatch knows no backslash escapes.
    if fold:
        return lambda path, st, depth: fnmatch.fnmatchcase(_basename(path).lower(), glob.lower())
    return lambda path, st, depth: fnmatch.fnmatchcase(_basename(path), glob)


_TESTS: dict[str, Callable[[str], _Test]] = {
    "-mindepth": _depth_at_least, "-maxdepth": _depth_at_most, "-type": _type,
    "-name": _name, "-iname": lambda glob: _name(glob, fold=True),
}


def _parse_exec(words: list[str], k: int) -> tuple[_Exec, int]:
    """`-exec` up to `;` or `{} +` (find.c: a `+` ends it only right after `{}`); returns the index after."""
    if k >= len(words) or words[k] == ";":
        raise FindError("'exec' needs 1 arg")
    argv: list[str] = []
    curly = -1
    while k < len(words):
        w = words[k]
        if w == ";":
            return _Exec(argv, curly, False), k + 1
        if w == "{}":
            curly = len(argv)
            if k + 1 < len(words) and words[k + 1] == "+":
                return _Exec(argv + [w], curly, True), k + 2
        argv.append(w)
        k += 1
    raise FindError("-exec without " + ("\\;" if curly != -1 else "{}"))


def _join(parent: str, name: str) -> str:
    return parent + name if parent.endswith("/") else f"{parent}/{name}"


def _basename(path: str) -> str:
    """basename(3) as bionic has it: trailing slashes do not count, `/` is `/`."""
    return posixpath.basename(path.rstrip("/")) or "/"


class FindCommands(Commands):
    def find(self, a: list[str], i: bytes) -> Out:
        n = 0
        while n < len(a) and not (a[n] and a[n][0] in "-!("):
            n += 1
        roots, words = a[:n] or ["."], a[n:]
        try:
            steps, limit = _parse(words)
        except FindError as e:
            return Out(b"", f"find: {e}\n".encode(), 1)
        out, err = bytearray(), bytearray()
        code = 0
        for root in roots:
            if self.w.fs.stat(root) is None:
                err += f"find: '{root}': No such file or directory\n".encode()
                code = 1
                continue
            for path, st, depth in self._walk(root, limit):
                self._visit(steps, path, st, depth, out, err)
        for ex in steps:
            if isinstance(ex, _Exec) and ex.plus and ex.names:
                code |= self._run_exec(ex.command(ex.names), out, err)
        return Out(bytes(out), bytes(err), code)

    def _walk(self, root: str, limit: int | None) -> Iterator[tuple[str, FileStat, int]]:
        """(path as printed, stat, depth) of root and everything below it, a directory before its contents.

        A directory is read after its own entry was handled, as dirtree does, so an `-exec rm -r`
        on it leaves nothing below it to visit.
        """
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            path, depth = stack.pop()
            st = self.w.fs.stat(path)
            if st is None:
                continue                    # removed meanwhile by an -exec
            yield path, st, depth
            if st.is_dir and (limit is None or depth < limit) and self.w.fs.exists(path):
                children = [_join(path, name) for name, _s in self.w.fs.listdir(path)]
                stack.extend((c, depth + 1) for c in reversed(children))

    def _visit(self, steps: list[_Step], path: str, st: FileStat, depth: int,
               out: bytearray, err: bytearray) -> None:
        """Run the steps for one entry left to right, stopping at the first false test."""
        acted = False
        for step in steps:
            if isinstance(step, _Exec):
                acted = True
                if step.plus:
                    step.names.append(path)
                elif self._run_exec(step.command([path]), out, err) != 0:
                    return                  # `-exec ... ;` is a test: false when the command failed
            elif isinstance(step, str):
                acted = True
                out += (path + step).encode()
            elif not step(path, st, depth):
                return
        if not acted:
            out += (path + "\n").encode()

    def _run_exec(self, argv: list[str], out: bytearray, err: bytearray) -> int:
        """One command run as find's child: its output is find's, its exit code comes back."""
        fn = self.cmds.get(argv[0].rsplit("/", 1)[-1])
        if fn is None:
            # xexec(): execvp failed in the child, which says so and exits 127 (126 + ENOENT).
            err += f"find: exec {argv[0]}: No such file or directory\n".encode()
            return 127
        res = fn(argv[1:], b"")
        out += res.stdout
        err += res.stderr
        return res.code
