"""The shell's tokenizer against mksh's splitting, one row per rule, and quoted operators through adb."""

from __future__ import annotations

import pytest

from virtual_phone.shell_lex import STATUS, LexError, Op, split


def _show(toks: list[str]) -> list[str]:
    # Operators shown as <op> so a row tells an operator from a word made of the same characters.
    return [f"<{t}>" if isinstance(t, Op) else t for t in toks]


CASES = [
    # quoting
    ("echo a b", ["echo", "a", "b"]),
    ("echo 'a b'  c", ["echo", "a b", "c"]),
    ('echo "a b"', ["echo", "a b"]),
    ("echo 'it'\"'\"'s'", ["echo", "it's"]),
    ('echo "x\\"y"', ["echo", 'x"y']),
    ('echo "a\\nb"', ["echo", "a\\nb"]),          # in double quotes \ escapes only $ ` " \ newline
    ("echo 'a\\nb'", ["echo", "a\\nb"]),           # nothing is special in single quotes
    ("echo a\\ b", ["echo", "a b"]),
    ("echo \\;", ["echo", ";"]),
    ("echo ''", ["echo", ""]),
    ("echo a''b", ["echo", "ab"]),
    # quoted operators are words
    ("input text ';'", ["input", "text", ";"]),
    ("input text '&'", ["input", "text", "&"]),
    ('echo x "&&" y', ["echo", "x", "&&", "y"]),
    ("echo x '|' y", ["echo", "x", "|", "y"]),
    ("echo '>' f", ["echo", ">", "f"]),
    # lists and pipes
    ("a;b", ["a", "<;>", "b"]),
    ("a ; b", ["a", "<;>", "b"]),
    ("a&&b||c", ["a", "<&&>", "b", "<||>", "c"]),
    ("a & b", ["a", "<&>", "b"]),
    ("a|b | c", ["a", "<|>", "b", "<|>", "c"]),
    # redirections
    ("echo x >f", ["echo", "x", "<>>", "f"]),
    ("echo x >> f", ["echo", "x", "<>>>", "f"]),
    ("cat <f", ["cat", "<<>", "f"]),
    ("cat f 2>/dev/null", ["cat", "f", "<2>>", "/dev/null"]),
    ("cat f 2>&1", ["cat", "f", "<2>&>", "1"]),
    ("echo x >&2", ["echo", "x", "<>&>", "2"]),
    ("echo 2 >f", ["echo", "2", "<>>", "f"]),       # a digit apart from > is a word
    ("echo a2>f", ["echo", "a2", "<>>", "f"]),      # only a lone digit names a descriptor
    # substitutions are kept literally; $? is marked for the shell
    ("echo $(id -u) x", ["echo", "$(id -u)", "x"]),
    ("echo $(echo ';'; echo b)", ["echo", "$(echo ';'; echo b)"]),
    ("echo `id`", ["echo", "`id`"]),
    ("echo $?", ["echo", STATUS]),
    ('echo "$?"', ["echo", STATUS]),
    ("echo '$?'", ["echo", "$?"]),
    ("echo $HOME", ["echo", "$HOME"]),
    # comments only at a word's start
    ("echo a # b", ["echo", "a"]),
    ("echo a#b", ["echo", "a#b"]),
    ("", []),
]


@pytest.mark.parametrize("line,want", CASES)
def test_split(line: str, want: list[str]) -> None:
    assert _show(split(line)) == want


@pytest.mark.parametrize("line", ["echo 'a", 'echo "a', "echo $(a", "echo `a"])
def test_unterminated_quotes_are_errors(line: str) -> None:
    with pytest.raises(LexError):
        split(line)


def test_quoted_operators_through_adb(virtual_phone, u2_device) -> None:
    d = u2_device
    dev = d.adb_device
    assert dev.shell("echo x '&' y") == "x & y"
    assert dev.shell("echo a \\; b; echo c") == "a ; b\nc"
    assert dev.shell("echo 'a  b' | grep b") == "a  b"
    assert dev.shell("echo 'it''s' \"$?\" '$?'") == "its 0 $?"
    assert dev.shell("cat /nope 2>&1 | grep -c 'No such'") == "1"
    d.app_start("com.google.android.apps.messaging")
    d(description="Start chat").click()
    field = d(resourceId="com.google.android.apps.messaging:id/recipient_text_view")
    field.click()
    dev.shell("input text ';&|'")
    assert field.get_text() == ";&|"


def test_lines_typed_into_adb_shell_keep_their_quoting(virtual_phone, adb_server_port) -> None:
    import subprocess

    from virtual_phone import adb_server

    out = subprocess.run([adb_server.find_adb(), "-P", str(adb_server_port), "-s", virtual_phone.serial, "shell"],
                         input="echo 'a  b' ';'\nexit\n", capture_output=True, text=True, timeout=20)
    assert out.stdout == "a  b ;\n", out
