"""Which service an adb OPEN names, and how it is served: shell (v1, v2, exec), sync, tcp,
reverse, framebuffer.

`reverse:` answers as adbd's handle_forward_request does on a device (one OKAY per change, the
list as a length-prefixed string, FAIL with a reason); the reverse listeners are kept and
listed, but nothing on this phone ever connects to them. `framebuffer:` sends the version 2
header and the screen as raw RGBA, as framebuffer_service.cpp does.
"""

from __future__ import annotations

import asyncio
import re
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from virtual_phone.adbd import Handler, Stream
from virtual_phone.fs import VirtualFS
from virtual_phone.hierarchy import SCREEN_H, SCREEN_W
from virtual_phone.sync_service import serve_sync
from virtual_phone.u2server import RunBlocking, U2Server, parse_launch

# shell protocol v2 packet ids (AOSP shell_protocol.h)
ID_STDIN, ID_STDOUT, ID_STDERR, ID_EXIT, ID_CLOSE_STDIN = 0, 1, 2, 3, 4
_V2 = struct.Struct("<BI")

FAULT_COMMAND = "vphone-fault"
# adbd names a TCP transport host-<fd> in `adb reverse --list`.
REVERSE_SERIAL = "host-19"
_SOCKET_SPEC = re.compile(r"(tcp:\d+|localabstract:.+|localreserved:.+|localfilesystem:.+|dev:.+|jdwp:\d+)")
_CHAIN = re.compile(r"\s*(;|&&|\|\||\|)\s*")


class ShellResultLike(Protocol):
    stdout: bytes
    stderr: bytes
    exit_code: int


@dataclass(frozen=True)
class Ran:
    """A finished command line. `merged` is what a v1 shell (one pipe for both) shows."""

    stdout: bytes
    stderr: bytes
    code: int
    merged: bytes


def _ran(result: ShellResultLike) -> Ran:
    merged = getattr(result, "output", None)   # the world's interleaved output; no field of ShellResultLike
    if merged is None:
        # Without the world's interleaving, stderr goes first: adbutils' shell2() appends
        # `; echo X4EXIT:$?` and reads the exit code from the very end of the output.
        merged = result.stderr + result.stdout
    return Ran(result.stdout, result.stderr, result.exit_code, merged)


class WorldLike(Protocol):
    fs: VirtualFS
    def framebuffer_rgba(self) -> bytes: ...
    def shell(self, command: str, cancel: threading.Event | None = None,
              emit: Callable[[bytes], None] | None = None) -> ShellResultLike: ...


class ShellSink:
    """Output side of one shell stream; v1 merges stderr into the byte stream, v2 frames it."""

    def __init__(self, stream: Stream, v2: bool) -> None:
        self.stream = stream
        self.v2 = v2

    async def _send(self, ident: int, data: bytes) -> None:
        if self.v2:
            await self.stream.write(_V2.pack(ident, len(data)) + data)
        elif data:
            await self.stream.write(data)

    async def out(self, data: bytes) -> None:
        if data:
            await self._send(ID_STDOUT, data)

    async def err(self, data: bytes) -> None:
        if data:
            await self._send(ID_STDERR, data)

    async def result(self, ran: Ran) -> None:
        """Everything a finished command produced, in as few WRTE packets as possible."""
        stdout, stderr, code = ran.stdout, ran.stderr, ran.code
        if self.v2:
            buf = b""
            if stdout:
                buf += _V2.pack(ID_STDOUT, len(stdout)) + stdout
            if stderr:
                buf += _V2.pack(ID_STDERR, len(stderr)) + stderr
            buf += _V2.pack(ID_EXIT, 1) + bytes([code & 0xFF])
            await self.stream.write(buf)
        else:
            await self.out(ran.merged)


@dataclass
class Services:
    world: Callable[[], WorldLike]
    u2: U2Server
    run_blocking: RunBlocking
    fault_command: Callable[[list[str]], tuple[str, str, int]]
    # The device latency profile's delay for one shell command line (virtual_phone/latency.py).
    shell_latency: Callable[[], float] = lambda: 0.0
    reverses: dict[str, str] = field(default_factory=dict)   # `adb reverse` remote -> local

    def route(self, name: str) -> Handler | None:
        """The handler for a service name, or None to refuse the OPEN (sent back as CLSE)."""
        if name.startswith("shell"):
            head, sep, command = name.partition(":")
            if not sep:
                return None
            options = head.split(",")[1:]
            return self._shell(command, v2="v2" in options, options=options)
        if name.startswith("exec:"):
            return self._shell(name[len("exec:"):], v2=False, options=["raw"])
        if name == "sync:":
            return self._sync
        if name.startswith("reverse:"):
            return self._reverse(name[len("reverse:"):])
        if name == "framebuffer:":
            return self._framebuffer
        if name.startswith("tcp:"):
            port = name[4:].split(":", 1)[0]
            if port.isdigit() and self.u2.accepts(int(port)):
                return self.u2.serve_http
            return None
        return None

    def _reverse(self, request: str) -> Handler:
        async def reverse(stream: Stream) -> None:
            await stream.write(self._reverse_answer(request))
        return reverse

    def _reverse_answer(self, request: str) -> bytes:
        rev = self.reverses
        if request == "list-forward":
            listing = "".join(f"{REVERSE_SERIAL} {remote} {local}\n" for remote, local in rev.items())
            return _protocol_string(listing)
        if request == "killforward-all":
            rev.clear()
            return b"OKAY"
        if request.startswith("killforward:"):
            remote = request[len("killforward:"):]
            if rev.pop(remote, None) is None:
                return b"FAIL" + _protocol_string(f"listener '{remote}' not found")
            return b"OKAY"
        if request.startswith("forward:"):
            spec = request[len("forward:"):]
            norebind = spec.startswith("norebind:")
            spec = spec.removeprefix("norebind:")
            remote, sep, local = spec.partition(";")
            if not sep or not _SOCKET_SPEC.fullmatch(remote) or not _SOCKET_SPEC.fullmatch(local):
                return b"FAIL" + _protocol_string(f"malformed forward spec '{spec}'")
            if norebind and remote in rev:
                return b"FAIL" + _protocol_string("cannot rebind existing socket")
            rev[remote] = local
            return b"OKAY"
        return b"FAIL" + _protocol_string(f"unknown reverse request '{request}'")

    async def _framebuffer(self, stream: Stream) -> None:
        world = self.world()
        pixels = await self.run_blocking(world.framebuffer_rgba)
        width, height = SCREEN_W, SCREEN_H
        # version 2: bpp, colorSpace (1 = sRGB), size, width, height, then offset/length of
        # red, blue, green and alpha, in that order (struct fbinfo).
        header = struct.pack("<14I", 2, 32, 1, len(pixels), width, height, 0, 8, 16, 8, 8, 8, 24, 8)
        await stream.write(header + pixels)

    async def _sync(self, stream: Stream) -> None:
        await serve_sync(stream, self.world().fs)

    def _shell(self, command: str, v2: bool, options: list[str]) -> Handler:
        launch = parse_launch(command)
        if launch is not None:
            failure = self.u2.check_launch(launch)

            async def app_process(stream: Stream) -> None:
                sink = ShellSink(stream, v2)
                if failure is not None:
                    await sink.result(Ran(b"", failure.encode(), 1, failure.encode()))
                    return
                code = await self.u2.run(stream, sink)
                if v2 and not stream.peer_closed.is_set():
                    await sink.result(Ran(b"", b"", code, b""))
            return app_process

        async def shell(stream: Stream) -> None:
            sink = ShellSink(stream, v2)
            if not command.strip():
                await self._interactive(stream, sink, pty="raw" not in options)
                return
            delay = self.shell_latency()
            if delay > 0:
                await asyncio.sleep(delay)
            hangup = threading.Event()
            watcher = asyncio.ensure_future(_set_on_close(stream, hangup))
            loop = asyncio.get_running_loop()

            def emit(data: bytes) -> None:   # from the world's thread: written before it goes on
                try:
                    asyncio.run_coroutine_threadsafe(sink.out(data), loop).result(30)
                except Exception:  # noqa: BLE001 - a stream that cannot take output has hung up
                    hangup.set()
            try:
                ran = await self.run_line(command, hangup, emit)
            finally:
                watcher.cancel()
            if not stream.peer_closed.is_set():
                await sink.result(ran)
        return shell

    async def run_line(self, command: str, hangup: threading.Event | None = None,
                       emit: Callable[[bytes], None] | None = None) -> Ran:
        stripped = command.lstrip()
        if stripped.startswith(FAULT_COMMAND) and stripped[len(FAULT_COMMAND):][:1] in ("", " ", ";", "&", "|"):
            return await self._fault_line(stripped)
        if hangup is None:
            return _ran(await self.run_blocking(self.world().shell, command))
        return _ran(await self.run_blocking(self.world().shell, command, hangup, emit))

    async def _fault_line(self, line: str) -> Ran:
        """`vphone-fault ...` is the transport's own command; what follows a `;` goes to the world."""
        m = _CHAIN.search(line)
        head, rest, op = (line[:m.start()], line[m.end():], m.group(1)) if m else (line, "", "")
        out, err, code = self.fault_command(head.split()[1:])
        if rest and not ((op == "&&" and code != 0) or (op == "||" and code == 0)):
            # The world's shell runs the remainder on its own, so carry our exit status into it.
            more = _ran(await self.run_blocking(self.world().shell, rest.replace("$?", str(code))))
            return Ran(out.encode() + more.stdout, err.encode() + more.stderr, more.code,
                       err.encode() + out.encode() + more.merged)
        return Ran(out.encode(), err.encode(), code, err.encode() + out.encode())

    async def _interactive(self, stream: Stream, sink: ShellSink, pty: bool) -> None:
        """`adb shell` without a command: sh reading lines from stdin (no job control).

        With a pty (the adb CLI on a terminal) typed input is echoed and a prompt shown; raw
        (`echo ls | adb shell`) runs lines until stdin closes, as sh does.
        """
        hangup = threading.Event()     # a `sleep` typed here ends when the client goes away
        watcher = asyncio.ensure_future(_set_on_close(stream, hangup))
        try:
            await self._interactive_lines(stream, sink, pty, hangup)
        finally:
            watcher.cancel()

    async def _interactive_lines(self, stream: Stream, sink: ShellSink, pty: bool,
                                 hangup: threading.Event) -> None:
        prompt = b"vphone:/ $ " if pty else b""
        nl = b"\r\n" if pty else b"\n"
        await sink.out(prompt)
        pending, packets = bytearray(), bytearray()
        code = 0
        while True:
            data = await stream.read_some()
            eof = not data
            if sink.v2:
                packets += data
                data, closed = _take_v2_stdin(packets)
                eof = eof or closed
            if pty:
                data = data.replace(b"\r\n", b"\r")  # a terminal sends CR for Enter
                await sink.out(data.replace(b"\r", b"\r\n"))
                data = data.replace(b"\r", b"\n")
            pending += data
            if eof and pending and not pending.endswith(b"\n"):
                pending += b"\n"
            while b"\n" in pending:
                line, _, rest = bytes(pending).partition(b"\n")
                pending = bytearray(rest)
                words = line.decode(errors="replace").split()
                if words[:1] in (["exit"], ["logout"]):
                    code = int(words[1]) if len(words) > 1 and words[1].isdigit() else code
                    eof = True
                    break
                if words:
                    ran = await self.run_line(line.decode(errors="replace").strip(), hangup)
                    code = ran.code
                    if sink.v2 and not pty:
                        await sink.out(ran.stdout)
                        await sink.err(ran.stderr)
                    else:
                        await sink.out(ran.merged.replace(b"\n", nl))
                await sink.out(prompt)
            if eof:
                break
        if sink.v2 and not stream.peer_closed.is_set():
            await sink.result(Ran(b"", b"", code, b""))


def _protocol_string(text: str) -> bytes:
    data = text.encode()
    return f"{len(data):04x}".encode() + data


async def _set_on_close(stream: Stream, hangup: threading.Event) -> None:
    """A shell command's stream closed by the client (adbutils' timeout, Ctrl-C): its sleep ends."""
    await stream.peer_closed.wait()
    hangup.set()


def _take_v2_stdin(buf: bytearray) -> tuple[bytes, bool]:
    """Consume complete v2 packets from `buf`: (stdin bytes, whether stdin was closed)."""
    out = bytearray()
    closed = False
    while len(buf) >= 5:
        ident, length = _V2.unpack(buf[:5])
        if len(buf) < 5 + length:
            break
        body = bytes(buf[5:5 + length])
        del buf[:5 + length]
        if ident == ID_STDIN:
            out += body
        elif ident == ID_CLOSE_STDIN:
            closed = True
    return bytes(out), closed
