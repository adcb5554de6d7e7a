"""Types the virtual phone's parts share: screens and apps, what an app may ask of the phone, results.

Everything here is defined once and imported downwards only: apps and the UI build on these
types, the shell and the RPC server answer with them, and nothing here imports a part.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from .fs import VirtualFS
from .hierarchy import Callback, Node
from .state import DeviceState


class Screen:
    """One activity on a back stack; `build` is called for every observation."""

    pkg: str = ""
    activity: str = ""  # fully qualified class name
    call_screen = False  # an in-call screen: it finishes when the call ends

    def __init__(self) -> None:
        self.dialog: Dialog | None = None

    @property
    def title(self) -> str:
        return ""

    def build(self, w: AppHost) -> Node:
        raise NotImplementedError

    def on_back(self, w: AppHost) -> bool:
        """Handle back inside the screen (True) instead of finishing it."""
        return False


@dataclass
class Dialog:
    """An AlertDialog-like window; `build` returns its root with absolute bounds."""

    build: Callable[[AppHost], Node]
    pkg: str
    cancelable: bool = True
    on_cancel: Callback | None = None


@dataclass
class Intent:
    """An `am start` intent as the shell parsed it (-a, -d, -t, -n and the typed extras)."""

    action: str = ""
    data: str = ""
    mime: str = ""
    extras: dict[str, str] = field(default_factory=dict)


# Starts the activity for an intent the app declares; False when the intent does not match
# (e.g. its MIME type), so resolution goes on as Android's would.
IntentHandler = Callable[["AppHost", Intent], bool]


@dataclass(kw_only=True)
class Package:
    """An installed package; `clear` is what `pm clear` wipes besides the app's tasks."""

    pkg: str
    clear: Callable[[DeviceState], None] | None = None


@dataclass(kw_only=True)
class App(Package):
    """An app with a launcher icon (workspace, or the hotseat row above the search bar)."""

    label: str
    activity: str  # launcher activity, fully qualified
    root: Callable[[], Screen]
    intents: dict[str, IntentHandler] = field(default_factory=dict)
    hotseat: bool = False


class AppHost(Protocol):
    """What a screen may ask of the phone it runs on."""

    state: DeviceState
    apps: dict[str, App]
    fs: VirtualFS  # Files and Markor show (and change) the file system itself
    model: str  # the device name storage roots are labelled with
    suggestions: tuple[int, int]  # Settings' suggestion cards: (count, seed)

    def launch(self, pkg: str, fresh: bool = False) -> bool: ...
    def open(self, screen: Screen) -> None: ...
    def finish(self) -> None: ...
    def back(self) -> None: ...
    def home(self) -> None: ...
    def show_dialog(self, dialog: Dialog) -> None: ...
    def close_dialog(self) -> None: ...
    def open_shade(self) -> None: ...
    def close_shade(self) -> None: ...
    def show_internet_dialog(self) -> None: ...
    def close_internet_dialog(self) -> None: ...
    def date_text(self) -> str: ...
    def props(self) -> dict[str, str]: ...
    def invalidate(self) -> None: ...
    def end_call(self) -> None: ...
    def start(self, intent: Intent) -> bool: ...


@dataclass
class ShellResult:
    stdout: bytes
    stderr: bytes = b""
    exit_code: int = 0
    # stdout and stderr interleaved in the order the commands wrote them (shell v1 merges them).
    output: bytes | None = None


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
