"""Device side of the ADB transport: what a real adb server talks to after `adb connect`.

One asyncio task reads packets per connection; each OPENed service runs as its own task, so a
blocking world call (run in an executor by the service) never stalls other streams.
Service routing lives in services.py; this module only moves bytes.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from virtual_phone import wire

log = logging.getLogger(__name__)

Handler = Callable[["Stream"], Awaitable[None]]


class StreamClosed(ConnectionError):
    pass


class Stream:
    """One adb stream (a socket pair between adb server and device), as a byte pipe."""

    def __init__(self, conn: AdbdConnection, local_id: int, remote_id: int, service: str) -> None:
        self.conn = conn
        self.local_id = local_id
        self.remote_id = remote_id
        self.service = service
        self._buf = bytearray()
        self._readable = asyncio.Event()
        self._eof = False
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._write_lock = asyncio.Lock()
        self._closed = False
        self.peer_closed = asyncio.Event()

    # --- inbound (called by the connection) ---------------------------------------------

    def _feed(self, data: bytes) -> None:
        self._buf += data
        self._readable.set()

    def _feed_eof(self) -> None:
        self._eof = True
        self._closed = True
        self._readable.set()
        self._can_write.set()
        self.peer_closed.set()

    def _acked(self) -> None:
        self._can_write.set()

    # --- reading -------------------------------------------------------------------------

    @property
    def buffered(self) -> int:
        return len(self._buf)

    @property
    def at_eof(self) -> bool:
        return self._eof and not self._buf

    async def read_some(self) -> bytes:
        """Whatever has arrived (waiting for at least one byte); b"" once the peer closed."""
        while not self._buf and not self._eof:
            self._readable.clear()
            await self._readable.wait()
        data = bytes(self._buf)
        self._buf.clear()
        return data

    async def read_exactly(self, n: int) -> bytes:
        while len(self._buf) < n:
            if self._eof:
                raise asyncio.IncompleteReadError(bytes(self._buf), n)
            self._readable.clear()
            await self._readable.wait()
        data = bytes(self._buf[:n])
        del self._buf[:n]
        return data

    async def read_until(self, sep: bytes, limit: int = 1 << 20) -> bytes:
        while True:
            i = self._buf.find(sep)
            if i >= 0:
                data = bytes(self._buf[: i + len(sep)])
                del self._buf[: i + len(sep)]
                return data
            if self._eof or len(self._buf) > limit:
                raise asyncio.IncompleteReadError(bytes(self._buf), None)
            self._readable.clear()
            await self._readable.wait()

    # --- writing -------------------------------------------------------------------------

    async def write(self, data: bytes) -> None:
        """Send `data` as WRTE packets, each waiting for the peer's OKAY of the previous one."""
        async with self._write_lock:
            view = memoryview(data)
            while view:
                await self._can_write.wait()
                if self._closed:
                    raise StreamClosed(self.service)
                chunk = bytes(view[: self.conn.max_payload])
                view = view[len(chunk):]
                self._can_write.clear()
                self.conn.send(wire.A_WRTE, self.local_id, self.remote_id, chunk)
            await self.conn.drain()

    async def drain_acks(self) -> None:
        """Wait until the peer acknowledged everything written (so a CLSE cannot overtake it)."""
        if not self._closed:
            await self._can_write.wait()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._eof = True
        self._readable.set()
        self._can_write.set()
        self.conn.send(wire.A_CLSE, self.local_id, self.remote_id)
        self.conn.forget(self.local_id)


@dataclass(eq=False)
class AdbdConnection:
    """One transport: the adb server's TCP connection to this device."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    banner: Callable[[], bytes]
    route: Callable[[str], Handler | None]
    on_request: Callable[[], bool]
    max_payload: int = 4096
    checksum: bool = True
    streams: dict[int, Stream] = field(default_factory=dict)
    tasks: set[asyncio.Task] = field(default_factory=set)
    _next_id: int = 1
    online: bool = False

    def send(self, command: int, arg0: int, arg1: int, payload: bytes = b"") -> None:
        if self.writer.is_closing():
            return
        self.writer.write(wire.encode(command, arg0, arg1, payload, self.checksum))

    async def drain(self) -> None:
        try:
            await self.writer.drain()
        except ConnectionError as exc:
            raise StreamClosed(str(exc)) from exc

    def forget(self, local_id: int) -> None:
        self.streams.pop(local_id, None)

    def abort(self) -> None:
        """Drop the transport the way a lost link does: no CLSE, the socket just goes."""
        transport = self.writer.transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:  # RST rather than FIN, as when a phone vanishes
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            except OSError:
                pass
        transport.abort()

    async def run(self) -> None:
        try:
            while True:
                header = await self.reader.readexactly(wire.HEADER.size)
                command, arg0, arg1, length = wire.decode_header(header)
                payload = await self.reader.readexactly(length) if length else b""
                self._handle(wire.Packet(command, arg0, arg1, payload))
        except (asyncio.IncompleteReadError, ConnectionError, wire.ProtocolError) as exc:
            log.debug("adbd connection ended: %r", exc)
        finally:
            self._teardown()

    def _teardown(self) -> None:
        for stream in list(self.streams.values()):
            stream._feed_eof()
        self.streams.clear()
        for task in list(self.tasks):
            task.cancel()
        if not self.writer.is_closing():
            self.writer.close()

    def _handle(self, p: wire.Packet) -> None:
        if p.command == wire.A_CNXN:
            self._on_cnxn(p)
        elif p.command == wire.A_OPEN:
            self._on_open(p)
        elif p.command == wire.A_WRTE:
            stream = self.streams.get(p.arg1)
            if stream is None:
                # Late data for a stream we closed: the peer still expects the socket gone.
                self.send(wire.A_CLSE, 0, p.arg0)
                return
            stream._feed(p.payload)
            self.send(wire.A_OKAY, stream.local_id, stream.remote_id)
        elif p.command == wire.A_OKAY:
            stream = self.streams.get(p.arg1)
            if stream is not None:
                stream.remote_id = p.arg0
                stream._acked()
        elif p.command == wire.A_CLSE:
            stream = self.streams.pop(p.arg1, None)
            if stream is not None:
                stream._feed_eof()
        else:
            log.debug("adbd ignores %s", p.name)

    def _on_cnxn(self, p: wire.Packet) -> None:
        peer_version, peer_max = p.arg0, p.arg1
        self.checksum = peer_version < wire.VERSION_NO_CHECKSUM
        self.max_payload = max(1024, min(peer_max, wire.MAX_PAYLOAD))
        # A reconnecting server starts over: streams of the old session are dead.
        for stream in list(self.streams.values()):
            stream._feed_eof()
        self.streams.clear()
        version = min(peer_version, wire.VERSION) if peer_version else wire.VERSION
        self.send(wire.A_CNXN, version, wire.MAX_PAYLOAD, self.banner())
        self.online = True

    def _on_open(self, p: wire.Packet) -> None:
        remote_id = p.arg0
        name = p.payload.rstrip(b"\x00").decode("utf-8", errors="replace")
        if self.on_request():
            log.info("fault: dropping transport at request %r", name)
            self.abort()
            return
        handler = self.route(name)
        if handler is None:
            self.send(wire.A_CLSE, 0, remote_id)
            return
        local_id = self._next_id
        self._next_id += 1
        stream = Stream(self, local_id, remote_id, name)
        self.streams[local_id] = stream
        self.send(wire.A_OKAY, local_id, remote_id)
        task = asyncio.get_running_loop().create_task(self._serve(handler, stream))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _serve(self, handler: Handler, stream: Stream) -> None:
        try:
            await handler(stream)
            await stream.drain_acks()
        except (StreamClosed, asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("service %r failed", stream.service)
        finally:
            stream.close()


class Adbd:
    """Listener on 127.0.0.1: every accepted connection is one adb transport."""

    def __init__(self, route: Callable[[str], Handler | None], banner: Callable[[], bytes],
                 on_request: Callable[[], bool]) -> None:
        self._route = route
        self._banner = banner
        self._on_request = on_request
        self._server: asyncio.base_events.Server | None = None
        self.connections: set[AdbdConnection] = set()
        self._refuse_until = 0.0

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._accept, host, port, reuse_address=True)
        return self._server.sockets[0].getsockname()[1]

    def refuse_for(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        self._refuse_until = max(self._refuse_until, loop.time() + seconds)

    def drop_all(self) -> None:
        for conn in list(self.connections):
            conn.abort()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.writer.close()
        self.drop_all()
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if asyncio.get_running_loop().time() < self._refuse_until:
            writer.transport.abort()
            return
        sock = writer.transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = AdbdConnection(reader, writer, self._banner, self._route, self._on_request)
        self.connections.add(conn)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)
