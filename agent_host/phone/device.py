"""One Android phone, real or virtual, through adbutils and uiautomator2.

Everything the agent and the judge do to a phone goes through `Phone`:
- UI: `dump()`, `screenshot_png()`, `tap`, `long_press`, `swipe`, `type_text`, `press`, `home`;
- apps: `launch`, `force_stop`, `foreground`;
- state: `shell(cmd)` and `shell_batch(cmds)`, which runs any number of commands in ONE
  `adb shell` call (one round trip per judged step);
- `settle(max_s)`: the still screen after an action in one dump (uiautomator waits for idle
  on the device side), returned so the caller reuses it as the next observation and as the
  screen the judge's UI checks read (no extra dump per step).

Model text never reaches a shell: `type_text` focuses the element with a tap and hands the
text to uiautomator2's `setText` JSON-RPC call. Transport and uiautomator2 failures surface as
`PhoneError`, so the caller can tell a broken phone from a wrong model.
"""

from __future__ import annotations

import functools
import io
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar, copy_context
from dataclasses import dataclass
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    # adbutils and uiautomator2 ship no type information: mypy reads these as Any, but they
    # name what is passed (and say what `self.adb` and `self.u2` are).
    import adbutils
    import uiautomator2
    from PIL import Image

T = TypeVar("T")


class PhoneError(Exception):
    """The phone (adb transport, adb server, uiautomator2 server) failed us."""


class PhoneUnresponsive(PhoneError):
    """A call to the phone did not return within its total deadline (a frozen phone, a
    stalled transport): abandoned, and nothing more should be asked of this connection."""


# Total seconds one UI call (dump, tap, screenshot, ...) may take: uiautomator waits for idle
# at most 10 s before a dump, so 30 s is a phone that is not answering. A shell call gets its
# own timeout plus this margin; connecting gets its `timeout`.
CALL_LIMIT_S = 30.0
SHELL_MARGIN_S = 10.0


@dataclass(frozen=True)
class ShellResult:
    command: str
    output: str            # stdout and stderr, merged, exactly as printed (no stripping)
    exit_code: int

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def text(self) -> str:
        """The output without its trailing newline(s)."""
        return self.output.rstrip("\r\n")


_BESIDE: ContextVar[bool] = ContextVar("beside_the_step", default=False)
_TALLY: ContextVar[RoundTripTally | None] = ContextVar("round_trip_tally", default=None)


class RoundTripTally:
    """Device round trips of one step: `critical` ones the step waited on in series,
    `background` ones that ran beside it (its screenshot, its judge)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.critical = 0
        self.background = 0
        self.wait_s = 0.0      # seconds the step waited on the phone in series

    def note(self, beside: bool) -> None:
        with self._lock:
            if beside:
                self.background += 1
            else:
                self.critical += 1

    def waited(self, seconds: float) -> None:
        with self._lock:
            self.wait_s += seconds


def _waited(seconds: float) -> None:
    """The step making this call waited `seconds` on the phone (nothing beside the step)."""
    tally = _TALLY.get()
    if tally is not None and not _BESIDE.get():
        tally.waited(seconds)


@contextmanager
def counting_into(tally: RoundTripTally) -> Iterator[RoundTripTally]:
    """Device calls made in this block, and in work it hands to `submit_beside`, count into `tally`."""
    token = _TALLY.set(tally)
    try:
        yield tally
    finally:
        _TALLY.reset(token)


def submit_beside(pool: Executor, fn: Callable[[], T]) -> Future[T]:
    """`pool.submit(fn)`, with fn's device calls counted as background round trips of the
    step that submitted it."""
    ctx = copy_context()

    def beside() -> T:
        _BESIDE.set(True)
        return fn()
    return pool.submit(ctx.run, beside)


def watch_round_trips(adb_device: adbutils.AdbDevice) -> None:
    """Count every adb stream `adb_device` opens on the device (each shell call and each
    uiautomator2 JSON-RPC request is one; uiautomator2 opens its HTTP streams through the
    same AdbDevice) into the tally of the step making the call."""
    opener = adb_device.open_transport

    def open_transport(command: str | None = None, *args: object, **kwargs: object) -> adbutils.AdbConnection:
        tally = _TALLY.get()
        if command is None and tally is not None:   # with a command it is the adb server's own
            tally.note(_BESIDE.get())
        return opener(command, *args, **kwargs)
    adb_device.open_transport = open_transport


KEYS = ("back", "home", "enter", "recent", "delete", "menu", "search", "power",
        "volume_up", "volume_down", "volume_mute")

_DEFAULT_SHELL_TIMEOUT = 30.0


def _is_transport_error(exc: BaseException) -> bool:
    import adbutils
    import requests  # uiautomator2's HTTP client
    import uiautomator2.exceptions as u2e
    if isinstance(exc, u2e.UiObjectNotFoundError):
        return False
    return isinstance(exc, (adbutils.AdbError, u2e.BaseException, requests.RequestException,
                            OSError, EOFError))


def split_serial(spec: str) -> tuple[tuple[str, int] | None, str]:
    """`HOST:PORT/SERIAL` -> ((HOST, PORT), SERIAL); a plain serial -> (None, serial)."""
    if "/" not in spec:
        return None, spec
    server, _, serial = spec.partition("/")
    host, _, port = server.rpartition(":")
    if not host or not port.isdigit() or not serial:
        raise PhoneError(f"{spec}: a remote phone is HOST:PORT/SERIAL, e.g. 10.0.0.7:5037/R58M12ABC")
    return (host, int(port)), serial


def remember_server_version(client: adbutils.AdbClient) -> None:
    """adbutils asks the adb server its version before opening every device stream (to pick the
    transport request), on a connection of its own that it closes with a 10 ms sleep: half of a
    virtual phone's shell round trip, a sixth of a real phone's. The version of the server on a
    port does not change under a client, so `client` asks once."""
    client.server_version = functools.cache(client.server_version)


def close_streams_at_once(device: adbutils.AdbDevice) -> None:
    """adbutils' AdbConnection.close() shuts the write side, sleeps 10 ms "to make sure the
    shutdown is processed", then closes: 10 ms on every shell call, as much again as the call
    itself on the virtual phone. The streams `device` opens close without the sleep (the
    shutdown is still sent first). adbutils is pinned (pyproject.toml); should its connection
    keep the socket under another name, the sleep stays and nothing else changes."""
    opener = device.open_transport

    def open_transport(*args: object, **kwargs: object) -> adbutils.AdbConnection:
        conn = opener(*args, **kwargs)
        if _PRIVATE_SOCKET in vars(conn):
            conn.close = functools.partial(_close_at_once, conn)
        return conn
    device.open_transport = open_transport


_PRIVATE_SOCKET = "_AdbConnection__conn"    # adbutils 2.12's AdbConnection.__conn


def _close_at_once(conn: adbutils.AdbConnection) -> None:
    sock = vars(conn).get(_PRIVATE_SOCKET)
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    sock.close()
    vars(conn)[_PRIVATE_SOCKET] = None


def adb_device(spec: str, timeout: float) -> adbutils.AdbDevice:
    """The adbutils device for `spec` through its adb server, an `IP:port` serial connected
    first (`adb connect`) when that server does not list it yet."""
    import adbutils
    server, serial = split_serial(spec)
    client = adbutils.AdbClient(host=server[0], port=server[1]) if server else adbutils.AdbClient()
    remember_server_version(client)
    if ":" in serial and serial not in {d.serial for d in client.device_list()}:
        client.connect(serial, timeout=timeout)
    device = client.device(serial)
    close_streams_at_once(device)
    return device


def device_identity(spec: str, *, timeout: float = 5.0) -> str | None:
    """What the phone calls itself (`ro.serialno`), read over adb alone (no uiautomator2), so
    that one device reached under two names (`127.0.0.1:P` and `localhost:P`, or through two
    adb servers) is known as one; None when it cannot be read within `timeout` (offline, not
    there), and the name given is all there is."""
    from agent_host import watchdog

    def read() -> str | None:
        out = adb_device(spec, timeout).shell("getprop ro.serialno", timeout=timeout)
        return str(out).strip() or None
    try:
        return watchdog.call(read, timeout + 1.0, f"{spec}: identity")
    except Exception:   # any failure to read leaves the lock keyed by the name given
        return None


class Phone:
    """A connected phone. UI calls (uiautomator2) run one at a time, shell calls one at a time,
    but a shell call may run beside a UI call (each is its own adb stream), so the judge's
    shell batch need not wait for a screenshot in flight."""

    def __init__(self, serial: str, adb_device: adbutils.AdbDevice, u2_device: uiautomator2.Device):
        self.serial = serial
        self.adb = adb_device
        self.u2 = u2_device
        self._lock = threading.RLock()
        self._shell_lock = threading.RLock()
        self._size: tuple[int, int] | None = None
        watch_round_trips(adb_device)

    # -- connection -------------------------------------------------------------

    @classmethod
    def connect(cls, serial: str, *, timeout: float = 30.0) -> Phone:
        """Attach to `serial` (connecting an `IP:port` serial first) and start uiautomator2.

        `HOST:PORT/SERIAL` names a phone on another machine's adb server (started there with
        `adb -a start-server` or reached through an SSH tunnel); everything then goes through
        that server, uiautomator2's streams included.
        """
        from agent_host import watchdog
        try:
            return watchdog.call(lambda: cls._connect(serial, timeout), timeout, f"{serial}: connect")
        except watchdog.Overdue as exc:
            raise PhoneUnresponsive(f"{serial}: cannot connect: {exc}") from None

    @classmethod
    def _connect(cls, serial: str, timeout: float) -> Phone:
        import uiautomator2 as u2
        try:
            dev = adb_device(serial, timeout)
            dev.get_state()
            ud = u2.connect(dev)
            ud.settings["wait_timeout"] = 2.0
            ud.settings["operation_delay"] = (0, 0)
        except Exception as exc:
            if not (_is_transport_error(exc) or isinstance(exc, RuntimeError)):
                raise
            raise PhoneError(f"{serial}: cannot connect: {type(exc).__name__}: {exc}") from exc
        return cls(serial, dev, ud)

    def _call(self, what: str, fn: Callable[[], T], lock: threading.RLock | None = None,
              limit: float = CALL_LIMIT_S) -> T:
        from agent_host import watchdog
        t0 = time.monotonic()

        def locked() -> T:
            with lock or self._lock:
                return fn()
        try:
            return watchdog.call(locked, limit, what)
        except watchdog.Overdue as exc:
            raise PhoneUnresponsive(f"{self.serial}: {exc} (the phone is not answering)") from None
        except PhoneError:
            raise
        except Exception as exc:
            if _is_transport_error(exc):
                raise PhoneError(f"{self.serial}: {what}: {type(exc).__name__}: {exc}") from exc
            raise
        finally:
            _waited(watchdog.elapsed(t0))

    # -- UI ----------------------------------------------------------------------

    def dump(self) -> str:
        """The window hierarchy XML, as uiautomator2 dumps it."""
        return str(self._call("dump", lambda: self.u2.dump_hierarchy()))

    def screenshot(self) -> Image.Image:
        """The screen as a PIL image (uiautomator2's capture; decoding only, no encoding)."""
        def shot() -> Image.Image:
            img: Image.Image = self.u2.screenshot()
            img.load()
            return img
        return self._call("screenshot", shot)

    def screenshot_png(self) -> bytes:
        return png_bytes(self.screenshot())

    def tap(self, x: int, y: int) -> None:
        self._call("tap", lambda: self.u2.click(int(x), int(y)))

    def long_press(self, x: int, y: int, duration: float = 0.8) -> None:
        self._call("long_press", lambda: self.u2.long_click(int(x), int(y), duration))

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration: float = 0.2) -> None:
        self._call("swipe", lambda: self.u2.swipe(int(x1), int(y1), int(x2), int(y2), duration))

    def type_text(self, x: int, y: int, text: str, submit: bool = False) -> bool:
        """Focus the field at (x, y) with a tap, then set its text through uiautomator2.

        The text travels as a JSON-RPC argument (`setText`), never through a shell. Returns
        False when nothing took focus (the caller reports it to the model as an action error).
        """
        import uiautomator2.exceptions as u2e

        def do() -> bool:
            self.u2.click(int(x), int(y))
            field = self.u2(focused=True)
            try:
                field.set_text(text, timeout=2.0)
            except u2e.UiObjectNotFoundError:
                return False
            if submit:
                self.u2.press("enter")
            return True
        return self._call("type_text", do)

    def press(self, key: str) -> None:
        if key not in KEYS:
            raise ValueError(f"unknown key {key!r}")
        self._call(f"press {key}", lambda: self.u2.press(key))

    def home(self) -> None:
        self.press("home")

    def window_size(self) -> tuple[int, int]:
        if self._size is None:
            w, h = self._call("window_size", lambda: self.u2.window_size())
            self._size = (int(w), int(h))
        return self._size

    # -- apps --------------------------------------------------------------------

    def launch(self, package: str) -> None:
        _check_package(package)
        self._call(f"launch {package}", lambda: self.adb.app_start(package))

    def force_stop(self, package: str) -> None:
        _check_package(package)
        self._call(f"force_stop {package}", lambda: self.adb.app_stop(package))

    def foreground(self) -> str:
        """The package of the resumed activity ('' when the phone cannot say)."""
        def fg() -> str:
            info = self.adb.app_current()
            return info.package if info else ""
        return self._call("foreground", fg)

    # -- shell -------------------------------------------------------------------

    def shell(self, cmd: str, *, timeout: float = _DEFAULT_SHELL_TIMEOUT) -> ShellResult:
        return self.shell_batch([cmd], timeout=timeout)[0]

    def shell_batch(self, cmds: Sequence[str], *, timeout: float = _DEFAULT_SHELL_TIMEOUT) -> list[ShellResult]:
        """Run every command in ONE `adb shell` call; one ShellResult per command, in order.

        stderr is merged into each command's output (as `adb shell` v1 does). Output is framed
        by delimiters carrying a per-call nonce, so a command printing something delimiter-like,
        or nothing, or no trailing newline, cannot confuse the framing (see build_batch).
        """
        cmds = list(cmds)
        if not cmds:
            return []
        try:
            script, nonce = build_batch(cmds)
        except ValueError as exc:
            raise PhoneError(f"{self.serial}: shell batch: {exc}") from None
        raw = self._call("shell", lambda: self.adb.shell(script, timeout=timeout, encoding=None, rstrip=False),
                         lock=self._shell_lock, limit=timeout + SHELL_MARGIN_S)
        try:
            return parse_batch(cmds, raw, nonce)
        except ValueError as exc:
            raise PhoneError(f"{self.serial}: shell batch: {exc}") from None

    # -- waiting -----------------------------------------------------------------

    def settle(self, max_s: float = 3.0, *, interval: float = 0.1, min_s: float = 0.0,
               since: float | None = None, confirm: bool = False,
               key: Callable[[str], object] | None = None) -> str:
        """The screen once it is still: wait until `min_s` after `since` (the monotonic time
        the input was sent; default now): a real phone starts an activity transition some
        100 ms after the input, so a dump at once could be the old screen. Then dump. One dump is enough because uiautomator waits for the UI to go idle before it
        dumps (UiDevice.getWindowRoots() calls waitForIdle(): 500 ms without accessibility
        events, at most 10 s), and the virtual phone changes its screen as the input arrives.

        `confirm`: for a phone whose dumps do not wait for idle, dump until two consecutive
        dumps agree, compared by `key` (default the raw XML; pass the rendered observation so
        a ticking clock does not force another dump), at most `max_s` seconds."""
        deadline = time.monotonic() + max_s
        pause = min_s - (time.monotonic() - since) if since is not None else min_s
        if pause > 0:
            time.sleep(pause)
            _waited(pause)
        prev = self.dump()
        if not confirm:
            return prev
        key = key or (lambda x: x)
        prev_key = key(prev)
        while time.monotonic() < deadline:
            time.sleep(interval)
            cur = self.dump()
            cur_key = key(cur)
            if cur_key == prev_key:
                return cur
            prev, prev_key = cur, cur_key
        return prev

    # -- identity ----------------------------------------------------------------

    def fingerprint(self) -> dict[str, str | int | None]:
        """What identifies this phone in a run manifest."""
        props = ["ro.product.manufacturer", "ro.product.model", "ro.product.device",
                 "ro.build.version.release", "ro.build.version.sdk", "ro.build.fingerprint"]
        res = self.shell_batch([f"getprop {p}" for p in props] + ["wm size", "wm density"])
        out: dict[str, str | int | None] = {"serial": self.serial}
        for p, r in zip(props, res):
            out[p.split(".")[-1] if p != "ro.build.fingerprint" else "build_fingerprint"] = r.text.strip()
        m = re.search(r"(\d+)x(\d+)", res[len(props)].output)
        out["screen"] = f"{m.group(1)}x{m.group(2)}" if m else ""
        m = re.search(r"(\d+)", res[len(props) + 1].output)
        out["density"] = int(m.group(1)) if m else None
        return out

    def __repr__(self) -> str:
        return f"Phone({self.serial!r})"


def png_bytes(img: Image.Image) -> bytes:
    """A PIL image as PNG (fast compression: screenshots are written every step)."""
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


_PACKAGE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)+$")


def _check_package(package: str) -> None:
    if not _PACKAGE.match(package):
        raise ValueError(f"not a package name: {package!r}")


# -- batch framing (pure; unit-tested) ----------------------------------------------


def build_batch(cmds: Sequence[str], nonce: str | None = None) -> tuple[str, str]:
    """The one shell script that runs `cmds`, and the nonce its delimiters carry.

    For command i it runs `echo @@AH<nonce>B<i>@@; CMD; echo @@AH<nonce>E<i>:$?@@`. The output
    of CMD is everything between the begin line and the end marker, which need not start a
    line (a command whose output has no trailing newline). Only `;`, `echo` and `$?` are used,
    so the script runs on any Android sh (mksh, toybox) and on the virtual phone's sh. A
    command must not `exit` (it would end the batch; the missing markers raise PhoneError).
    """
    nonce = nonce or secrets.token_hex(6)
    parts = []
    for i, cmd in enumerate(cmds):
        body = cmd.strip().rstrip(";").strip()
        if not body or "\n" in body:
            raise ValueError(f"batch command {i}: one non-empty line, got {cmd!r}")
        parts.append(f"echo @@AH{nonce}B{i}@@; {body}; echo @@AH{nonce}E{i}:$?@@")
    return "; ".join(parts), nonce


def parse_batch(cmds: Sequence[str], raw: bytes | str, nonce: str) -> list[ShellResult]:
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    text = text.replace("\r\n", "\n")  # a pty shell turns \n into \r\n
    results = []
    pos = 0
    for i, cmd in enumerate(cmds):
        begin = f"@@AH{nonce}B{i}@@\n"
        b = text.find(begin, pos)
        if b < 0:
            raise ValueError(f"command {i} ({cmd!r}) did not run (output: {text[-200:]!r})")
        start = b + len(begin)
        m = re.compile(rf"@@AH{nonce}E{i}:(\d+)@@\n?").search(text, start)
        if not m:
            raise ValueError(f"command {i} ({cmd!r}) did not finish (output: {text[-200:]!r})")
        results.append(ShellResult(command=cmd, output=text[start:m.start()], exit_code=int(m.group(1))))
        pos = m.end()
    return results
