"""`sync:` v1 service (AOSP file_sync_service): STAT, LIST, RECV, SEND, QUIT over one stream.

Requests are `ID + u32 length + path`; requests and replies may span WRTE packets freely, so
everything is read from the stream as bytes. v2 variants (STA2, LST2, ...) are not offered:
the banner does not advertise stat_v2/ls_v2/sendrecv_v2, so clients never send them.
"""

from __future__ import annotations

import struct

from virtual_phone.adbd import Stream
from virtual_phone.fs import FileStat, VirtualFS

MAX_CHUNK = 64 * 1024
_U32 = struct.Struct("<I")
_STAT = struct.Struct("<4sIII")
_DENT = struct.Struct("<4sIIII")


def _fail(message: str) -> bytes:
    data = message.encode()
    return b"FAIL" + _U32.pack(len(data)) + data


def _dent(name: str, st: FileStat) -> bytes:
    raw = name.encode()
    return _DENT.pack(b"DENT", st.mode, st.size, st.mtime, len(raw)) + raw


async def serve_sync(stream: Stream, fs: VirtualFS) -> None:
    while True:
        header = await stream.read_exactly(8)
        ident, length = header[:4], _U32.unpack(header[4:])[0]
        if ident == b"QUIT":
            return
        arg = (await stream.read_exactly(length)).decode("utf-8", errors="surrogateescape")
        if ident == b"STAT":
            st = fs.stat(arg)
            await stream.write(_STAT.pack(b"STAT", st.mode, st.size, st.mtime) if st
                               else _STAT.pack(b"STAT", 0, 0, 0))
        elif ident == b"LIST":
            await stream.write(_list(fs, arg))
        elif ident == b"RECV":
            await _recv(stream, fs, arg)
        elif ident == b"SEND":
            await _send(stream, fs, arg)
        else:
            await stream.write(_fail(f"unknown sync command {ident!r}"))
            return


def _list(fs: VirtualFS, path: str) -> bytes:
    out = bytearray()
    st = fs.stat(path)
    if st is not None and st.is_dir:
        # adbd lists what readdir(3) returns, "." and ".." included.
        out += _dent(".", st)
        parent = fs.stat(path.rstrip("/").rsplit("/", 1)[0] or "/") or st
        out += _dent("..", parent)
        for name, child in fs.listdir(path):
            out += _dent(name, child)
    # A missing or plain-file path lists as empty, as adbd's opendir failure does.
    out += _DENT.pack(b"DONE", 0, 0, 0, 0)
    return bytes(out)


async def _recv(stream: Stream, fs: VirtualFS, path: str) -> None:
    try:
        data = fs.read(path)
    except FileNotFoundError:
        await stream.write(_fail("open failed: No such file or directory"))
        return
    except IsADirectoryError:
        await stream.write(_fail("read failed: Is a directory"))
        return
    out = bytearray()
    for i in range(0, len(data), MAX_CHUNK):
        chunk = data[i:i + MAX_CHUNK]
        out += b"DATA" + _U32.pack(len(chunk)) + chunk
    out += b"DONE" + _U32.pack(0)
    await stream.write(bytes(out))


async def _send(stream: Stream, fs: VirtualFS, arg: str) -> None:
    path, _, mode_text = arg.rpartition(",")
    if not path:
        path, mode_text = arg, "33188"
    try:
        mode = int(mode_text)
    except ValueError:
        path, mode = arg, 0o100644
    body = bytearray()
    mtime = 0
    while True:
        header = await stream.read_exactly(8)
        ident, value = header[:4], _U32.unpack(header[4:])[0]
        if ident == b"DATA":
            body += await stream.read_exactly(value)
        elif ident == b"DONE":
            mtime = value
            break
        else:
            await stream.write(_fail(f"invalid data message {ident!r}"))
            return
    try:
        fs.write(path, bytes(body), mode=mode, mtime=mtime or None)
    except (IsADirectoryError, NotADirectoryError) as exc:
        await stream.write(_fail(f"couldn't create file: {exc.__class__.__name__}"))
        return
    await stream.write(b"OKAY" + _U32.pack(0))
