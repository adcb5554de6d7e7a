"""Words and operators of an `adb shell` command line, split as Android's mksh splits them.

What matters for a phone driven from a host: a quoted or escaped operator character is part of
a word (`input text ';'` types a semicolon, `echo x '&' y` prints `x & y`), `2>` and `2>&1`
are redirections only when the digit touches the `>`, and `#` starts a comment only at the
start of a word. Command substitution `$(...)` and backquotes are not run: they are kept
literally in the word (nothing on this phone's shell would produce their output).

`$?` outside single quotes becomes STATUS, which the shell replaces with the last exit code when
it runs that command (the code is not known when the line is split).
"""

from __future__ import annotations

STATUS = "\x00?"   # an expandable `$?`; NUL cannot occur in an adb service name


class Op(str):
    """An operator token: ; & && || | and the redirections > >> < 2> 2>> >& 2>&."""


class LexError(ValueError):
    pass


_SIMPLE = {";": ";", "&": "&", "|": "|", "<": "<"}


def _redirect(line: str, k: int, fd: str) -> tuple[str, int]:
    """The redirection operator starting at line[k] ('>' already seen at k)."""
    op = fd + ">"
    k += 1
    if k < len(line) and line[k] == ">":
        op += ">"
        k += 1
    elif k < len(line) and line[k] == "&":
        op += "&"
        k += 1
    return op, k


def split(line: str) -> list[str]:
    """Tokens of one command line: plain `str` words and `Op` operators."""
    out: list[str] = []
    word: list[str] = []
    in_word = False
    k, n = 0, len(line)

    def end_word() -> None:
        nonlocal in_word
        if in_word:
            out.append("".join(word))
            word.clear()
            in_word = False

    while k < n:
        c = line[k]
        if c in " \t\n":
            end_word()
            k += 1
        elif c == "#" and not in_word:
            break
        elif c == "\\":
            if k + 1 < n and line[k + 1] == "\n":
                k += 2
                continue
            word.append(line[k + 1] if k + 1 < n else "\\")
            in_word = True
            k += 2
        elif c == "'":
            close = line.find("'", k + 1)
            if close < 0:
                raise LexError("unmatched '")
            word.append(line[k + 1:close])
            in_word = True
            k = close + 1
        elif c == '"':
            k = _double(line, k + 1, word)
            in_word = True
        elif c == "$" and line.startswith("$(", k):
            close = _matching_paren(line, k + 1)
            word.append(line[k:close + 1])
            in_word = True
            k = close + 1
        elif c == "$" and line.startswith("$?", k):
            word.append(STATUS)
            in_word = True
            k += 2
        elif c == "`":
            close = line.find("`", k + 1)
            if close < 0:
                raise LexError("unmatched `")
            word.append(line[k:close + 1])
            in_word = True
            k = close + 1
        elif c == ">":
            fd = ""
            if in_word and len(word) == 1 and word[0].isdigit() and line[k - 1].isdigit():
                fd = word[0]
                word.clear()
                in_word = False
            end_word()
            op, k = _redirect(line, k, fd)
            out.append(Op(op))
        elif c in "&|":
            end_word()
            if k + 1 < n and line[k + 1] == c:
                out.append(Op(c + c))
                k += 2
            else:
                out.append(Op(c))
                k += 1
        elif c in _SIMPLE:
            end_word()
            out.append(Op(_SIMPLE[c]))
            k += 1
        else:
            word.append(c)
            in_word = True
            k += 1
    end_word()
    return out


def _double(line: str, k: int, word: list[str]) -> int:
    """Append a double-quoted span starting after its quote; return the index after the closing quote."""
    n = len(line)
    while k < n:
        c = line[k]
        if c == '"':
            return k + 1
        if c == "\\" and k + 1 < n and line[k + 1] in '$`"\\\n':
            if line[k + 1] != "\n":
                word.append(line[k + 1])
            k += 2
        elif c == "$" and line.startswith("$?", k):
            word.append(STATUS)
            k += 2
        elif c == "$" and line.startswith("$(", k):
            close = _matching_paren(line, k + 1)
            word.append(line[k:close + 1])
            k = close + 1
        else:
            word.append(c)
            k += 1
    raise LexError('unmatched "')


def _matching_paren(line: str, k: int) -> int:
    depth = 0
    quote = ""
    for j in range(k, len(line)):
        c = line[j]
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j
    raise LexError("unmatched (")


def is_op(tok: str, *ops: str) -> bool:
    return isinstance(tok, Op) and (not ops or tok in ops)
