"""The uiautomator2 on-device server contract (the u2.jar started through app_process).

What the client (uiautomator2 core.py) relies on:
- `tcp:9008` is refused until the server runs, so its ping fails and it launches the server;
- the launch is a shell stream that stays open while the server lives: the client reads a
  closed stream as "server quit unexpectedly", and closes it itself to stop the server;
- the server answers HTTP/1.1 `GET /ping` with `pong` and `POST /jsonrpc/0` with JSON-RPC 2.0;
  an error's message decides the client's exception (UiObjectNotFoundException, ...).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import NotRequired, Protocol, TypedDict, TypeVar, TypeVarTuple

from virtual_phone.adbd import Stream
from virtual_phone.hierarchy import Callback
from virtual_phone.json_value import Json

log = logging.getLogger(__name__)

# md5 of the u2.jar that uiautomator2 3.7.1 ships (its assets/u2.jar); the client pushes the
# jar whenever `toybox md5sum` on the device disagrees.
EXPECTED_JAR_MD5 = "d4f2cb5299dfd894a40fdde067b56bc9"
DEFAULT_PORT = 9008
MAIN_CLASS = "com.wetest.uia2.Main"

_LAUNCH = re.compile(r"\bapp_process\b.*\b" + re.escape(MAIN_CLASS) + r"\b")

JSONRPC_PATH = "/jsonrpc/0"

R = TypeVar("R")
Ts = TypeVarTuple("Ts")


class ShellOut(Protocol):
    async def out(self, data: bytes) -> None: ...
    async def err(self, data: bytes) -> None: ...


class WorldLike(Protocol):
    u2_running: bool
    def rpc(self, method: str, params: Json) -> object: ...


class RunBlocking(Protocol):
    """Awaits fn(*args) run off the event loop (a world call may block: sleep, waitForExists)."""
    def __call__(self, fn: Callable[[*Ts], R], /, *args: *Ts) -> Awaitable[R]: ...


class ErrorObject(TypedDict):
    code: int
    message: str
    data: NotRequired[str]


class Response(TypedDict):
    """A JSON-RPC 2.0 response: `result` (what the world's rpc returned) or `error`."""
    jsonrpc: str
    id: Json
    result: NotRequired[object]
    error: NotRequired[ErrorObject]


@dataclass(frozen=True)
class Launch:
    classpath: str
    port: int


def parse_launch(command: str) -> Launch | None:
    """The app_process command line uiautomator2 sends, or None for any other command."""
    if not _LAUNCH.search(command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    classpath, port = "", DEFAULT_PORT
    for i, w in enumerate(words):
        if w.startswith("CLASSPATH="):
            classpath = w.split("=", 1)[1]
        elif w == "-p" and i + 1 < len(words) and words[i + 1].isdigit():
            port = int(words[i + 1])
    return Launch(classpath, port)


@dataclass
class U2Server:
    """State of the one uiautomator server a device can run."""

    world: Callable[[], WorldLike]
    read_file: Callable[[str], bytes]
    run_blocking: RunBlocking
    rpc_latency: Callable[[], float] = lambda: 0.0
    # The device latency profile's delay for a JSON-RPC method (virtual_phone/latency.py).
    method_latency: Callable[[str], float] = lambda method: 0.0
    after_rpc: Callback = lambda: None
    port: int | None = None
    launches: int = 0
    # Off only to measure what it saves (bench/vphone_rpc.py).
    continue_nudge: bool = True
    _stop: asyncio.Event | None = None
    _http: set[Stream] = field(default_factory=set)
    _jar_md5: dict[int, str] = field(default_factory=dict)

    @property
    def running(self) -> bool:
        return self.port is not None

    def accepts(self, port: int) -> bool:
        return self.port == port

    def _sync_world(self) -> None:
        try:
            self.world().u2_running = self.running
        except AttributeError:
            pass

    def _jar_ok(self, path: str) -> bool:
        try:
            data = self.read_file(path)
        except (FileNotFoundError, IsADirectoryError):
            return False
        # The jar is 3.7 MB: hash it once per content, not per launch.
        key = hash(data)
        if key not in self._jar_md5:
            self._jar_md5[key] = hashlib.md5(data).hexdigest()
        return self._jar_md5[key] == EXPECTED_JAR_MD5

    def check_launch(self, launch: Launch) -> str | None:
        """Why this launch fails at once (app_process output), or None if the server starts.

        Called synchronously when the stream opens, so a ping that follows the launch
        never races the server's start.
        """
        if not launch.classpath or not self._jar_ok(launch.classpath):
            return (f"Error: Could not find class '{MAIN_CLASS}' in CLASSPATH "
                    f"'{launch.classpath}'\n")
        if self.running:
            return ("java.lang.IllegalStateException: UiAutomationService "
                    "android.accessibilityservice.IAccessibilityServiceClient$Stub$Proxy@5deffd5"
                    "already registered!\n")
        self.port = launch.port
        self.launches += 1
        self._stop = asyncio.Event()
        self._sync_world()
        return None

    async def run(self, stream: Stream, sink: ShellOut) -> int:
        """Serve the launch stream until the client closes it or the server is killed."""
        stop = self._stop
        assert stop is not None
        try:
            await sink.out(b"[server] INFO: [UiAutomator2Server] Starting Server\n")
            peer_gone = asyncio.ensure_future(stream.peer_closed.wait())
            killed = asyncio.ensure_future(stop.wait())
            try:
                await asyncio.wait({peer_gone, killed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                peer_gone.cancel()
                killed.cancel()
            return 137 if stop.is_set() else 0
        finally:
            if self._stop is stop:
                self._shutdown()

    def kill(self) -> bool:
        """The server process dies: its launch stream ends and tcp:9008 is refused again."""
        if not self.running:
            return False
        if self._stop is not None:
            self._stop.set()
        self._shutdown()
        return True

    def _shutdown(self) -> None:
        self.port = None
        self._stop = None
        for s in list(self._http):
            s.close()
        self._http.clear()
        self._sync_world()

    # --- HTTP ---------------------------------------------------------------------------

    async def serve_http(self, stream: Stream) -> None:
        self._http.add(stream)
        try:
            head = await stream.read_until(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, *_ = lines[0].split(" ") + ["", ""]
            headers = {}
            for line in lines[1:]:
                k, sep, v = line.partition(":")
                if sep:
                    headers[k.strip().lower()] = v.strip()
            length = int(headers.get("content-length", "0") or 0)
            if self.continue_nudge and length and stream.buffered < length:
                # http.client sends headers and body in two writes; Nagle holds the body back
                # until the adb server's delayed ACK (40 ms). Interim data going back carries
                # that ACK at once, and http.client skips a 100 response as RFC 9110 requires.
                await stream.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = await stream.read_exactly(length) if length else b""
            status, ctype, payload = await self._respond(method, path, body)
            reason = {200: "OK", 404: "Not Found", 405: "Method Not Allowed"}.get(status, "Error")
            head_out = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\n"
                        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n")
            await stream.write(head_out.encode("latin-1") + payload)
            if method == "POST" and path == JSONRPC_PATH:
                await stream.drain_acks()
                self.after_rpc()
        finally:
            self._http.discard(stream)

    async def _respond(self, method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        if path == "/ping":
            return 200, "text/plain", b"pong"
        if path != JSONRPC_PATH:
            return 404, "text/plain", b"Not Found"
        if method != "POST":
            return 405, "text/plain", b"Method Not Allowed"
        latency = self.rpc_latency()
        if latency > 0:
            await asyncio.sleep(latency)
        reply = await self._jsonrpc(body)
        return 200, "application/json; charset=UTF-8", json.dumps(reply, ensure_ascii=False).encode()

    async def _jsonrpc(self, body: bytes) -> Response:
        try:
            req = json.loads(body)
            method, params, rid = req["method"], req.get("params"), req.get("id")
        except (ValueError, KeyError, TypeError):
            return {"jsonrpc": "2.0", "id": None,
                    "error": {"code": -32700, "message": "Parse error"}}
        delay = self.method_latency(str(method))
        if delay > 0:
            await asyncio.sleep(delay)
        world = self.world()
        try:
            result = await self.run_blocking(world.rpc, method, params)
            return {"jsonrpc": "2.0", "id": rid, "result": result}
        except Exception as exc:  # noqa: BLE001 - every failure must reach the client as JSON-RPC
            return {"jsonrpc": "2.0", "id": rid, "error": _error_object(exc, method)}


def _error_object(exc: Exception, method: str) -> ErrorObject:
    code = getattr(exc, "code", None)
    message = getattr(exc, "message", None)
    if code is None or message is None:
        # A bug in the world, not an Android behaviour: keep it visible in the phone's log.
        log.exception("JSON-RPC %s failed inside the virtual phone", method)
        code, message = -32001, f"java.lang.RuntimeException: {type(exc).__name__}: {exc}"
    trace = f"{message}\n\tat com.wetest.uia2.stub.AutomatorServiceImpl.{method}(AutomatorServiceImpl.java)"
    return {"code": int(code), "message": str(message), "data": trace}
