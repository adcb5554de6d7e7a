"""What `pm install` needs to know of an APK: its package name and the input methods it declares,
read from the binary AndroidManifest.xml (AAPT's XML chunk format: a string pool, then
start-element chunks whose attributes point into it).

An input method is a <service> guarded by android.permission.BIND_INPUT_METHOD, which is how the
system's InputMethodManagerService finds them too (it also wants the android.view.InputMethod
intent filter; every IME declares both).
"""

from __future__ import annotations

import io
import struct
import zipfile
from dataclasses import dataclass, field

_STRING_POOL, _START_ELEMENT = 0x0001, 0x0102
_UTF8 = 1 << 8
BIND_IME = "android.permission.BIND_INPUT_METHOD"


class ApkError(ValueError):
    pass


@dataclass(frozen=True)
class ApkInfo:
    package: str
    input_methods: list[str] = field(default_factory=list)   # component names, short form (pkg/.Cls)


def _strings(buf: bytes, off: int) -> list[str]:
    _, hsize, _, count, _, flags, start, _ = struct.unpack_from("<HHIIIIII", buf, off)
    offsets = struct.unpack_from(f"<{count}I", buf, off + hsize)
    base = off + start
    out = []
    for o in offsets:
        p = base + o
        if flags & _UTF8:
            p += 2 if buf[p] & 0x80 else 1             # length in UTF-16 units, skipped
            n = buf[p]
            if n & 0x80:
                n, p = ((n & 0x7F) << 8) | buf[p + 1], p + 2
            else:
                p += 1
            out.append(buf[p:p + n].decode("utf-8", errors="replace"))
        else:
            n = struct.unpack_from("<H", buf, p)[0]
            if n & 0x8000:
                n, p = ((n & 0x7FFF) << 16) | struct.unpack_from("<H", buf, p + 2)[0], p + 4
            else:
                p += 2
            out.append(buf[p:p + 2 * n].decode("utf-16-le", errors="replace"))
    return out


def _elements(buf: bytes) -> list[tuple[str, dict[str, str]]]:
    """(element name, attributes by name) of every start tag, in document order."""
    if len(buf) < 8 or struct.unpack_from("<H", buf, 0)[0] != 0x0003:
        raise ApkError("AndroidManifest.xml is not a compiled XML file")
    strings: list[str] = []
    out = []
    off = struct.unpack_from("<H", buf, 2)[0]
    while off + 8 <= len(buf):
        ctype, hsize, size = struct.unpack_from("<HHI", buf, off)
        if size < 8:
            break
        if ctype == _STRING_POOL:
            strings = _strings(buf, off)
        elif ctype == _START_ELEMENT:
            ext = off + hsize
            _, name, astart, asize, count = struct.unpack_from("<iiHHH", buf, ext)
            attrs = {}
            for k in range(count):
                a = ext + astart + k * asize
                _, aname, raw, _, _, dtype, data = struct.unpack_from("<iiiHBBi", buf, a)
                value = strings[raw] if raw >= 0 else (strings[data] if dtype == 3 else str(data))
                attrs[strings[aname]] = value
            out.append((strings[name], attrs))
        off += size
    return out


def read(data: bytes) -> ApkInfo:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            manifest = z.read("AndroidManifest.xml")
    except (zipfile.BadZipFile, KeyError) as e:
        raise ApkError(f"not an APK: {e}") from e
    try:
        elements = _elements(manifest)
    except (struct.error, IndexError) as e:
        raise ApkError(f"unreadable AndroidManifest.xml: {e}") from e
    pkg = next((a.get("package", "") for n, a in elements if n == "manifest"), "")
    if not pkg:
        raise ApkError("AndroidManifest.xml names no package")
    imes = []
    for n, a in elements:
        if n == "service" and a.get("permission") == BIND_IME and a.get("name"):
            cls = a["name"]
            short = cls[len(pkg):] if cls.startswith(pkg + ".") else cls
            imes.append(f"{pkg}/{short}")
    return ApkInfo(pkg, imes)
