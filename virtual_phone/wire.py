"""ADB transport packets (AOSP system/core/adb/protocol.txt): 24-byte header + payload."""

from __future__ import annotations

import struct
from dataclasses import dataclass

A_CNXN = 0x4E584E43
A_OPEN = 0x4E45504F
A_OKAY = 0x59414B4F
A_WRTE = 0x45545257
A_CLSE = 0x45534C43
A_AUTH = 0x48545541
A_STLS = 0x534C5453

# Version 0x01000001 lets both sides skip the payload checksum.
VERSION = 0x01000001
VERSION_NO_CHECKSUM = 0x01000001
MAX_PAYLOAD = 256 * 1024

HEADER = struct.Struct("<6I")
NAMES = {A_CNXN: "CNXN", A_OPEN: "OPEN", A_OKAY: "OKAY", A_WRTE: "WRTE", A_CLSE: "CLSE",
         A_AUTH: "AUTH", A_STLS: "STLS"}


@dataclass(frozen=True)
class Packet:
    command: int
    arg0: int
    arg1: int
    payload: bytes = b""

    @property
    def name(self) -> str:
        return NAMES.get(self.command, hex(self.command))


class ProtocolError(Exception):
    pass


def encode(command: int, arg0: int, arg1: int, payload: bytes = b"", checksum: bool = False) -> bytes:
    crc = sum(payload) & 0xFFFFFFFF if checksum else 0
    return HEADER.pack(command, arg0, arg1, len(payload), crc, command ^ 0xFFFFFFFF) + payload


def decode_header(raw: bytes) -> tuple[int, int, int, int]:
    """(command, arg0, arg1, payload length); raises ProtocolError on a corrupt header."""
    command, arg0, arg1, length, _crc, magic = HEADER.unpack(raw)
    if magic != command ^ 0xFFFFFFFF:
        raise ProtocolError(f"bad magic in header {raw.hex()}")
    if length > MAX_PAYLOAD * 4:
        raise ProtocolError(f"payload of {length} bytes is too large")
    return command, arg0, arg1, length
