"""What every group of shell commands shares: results, and the phone's packages and pids."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from .ui import Ui


@dataclass
class Out:
    stdout: bytes = b""
    stderr: bytes = b""
    code: int = 0


def ok(text: str = "", code: int = 0) -> Out:
    return Out(text.encode(), b"", code)


def fail(text: str, code: int = 1) -> Out:
    return Out(b"", text.encode(), code)


class Exit(Out):
    """`exit N`: stops the rest of the command line."""


class Commands:
    """Base of the command groups that make up the shell (they share the world)."""

    w: Ui
    # The shell's command table (Shell fills it): commands that run others (`find -exec`) look here.
    cmds: dict[str, Callable[[list[str], bytes], Out]]
    # Sends output at once, before the command ends (a following logcat); None: only at the end.
    emit: Callable[[bytes], None] | None = None
    # Commands other mixins define that this one calls (Shell has them all).
    am: Callable[[list[str], bytes], Out]
    pm: Callable[[list[str], bytes], Out]

    def hold(self, seconds: float) -> bool:
        """Let wall time pass as a command on a phone would; True if the client hung up (Shell)."""
        return False

    def _packages(self) -> list[str]:
        return sorted(self.w.packages)

    def _pid(self, pkg: str) -> int:
        return 1000 + int(hashlib.md5(pkg.encode()).hexdigest()[:4], 16) % 20000
