"""The real adb server the virtual phone attaches to: find its binary, start it, stop it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

DEFAULT_PORT = 5037


class AdbServerError(RuntimeError):
    pass


def server_port() -> int:
    """The port adbutils and the adb CLI use: ANDROID_ADB_SERVER_PORT, else 5037.

    A value that is set but not a port is an error, not 5037: a typo must never reach
    someone's default adb server."""
    raw = os.environ.get("ANDROID_ADB_SERVER_PORT", "").strip()
    if not raw:
        return DEFAULT_PORT
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise AdbServerError(f"ANDROID_ADB_SERVER_PORT={raw!r} is not a TCP port (1-65535)")
    return int(raw)


def find_adb() -> str:
    """`adb` on PATH, else the binary the adbutils wheel ships (no system install needed)."""
    explicit = os.environ.get("ADBUTILS_ADB_PATH")
    if explicit and os.access(explicit, os.X_OK):
        return explicit
    on_path = shutil.which("adb")
    if on_path:
        return on_path
    import adbutils  # the wheel's own copy; imported late so finding `adb` on PATH stays cheap

    bundled = Path(adbutils.__file__).parent / "binaries" / "adb"
    if bundled.is_file():
        if not os.access(bundled, os.X_OK):
            bundled.chmod(bundled.stat().st_mode | 0o111)
        return str(bundled)
    raise AdbServerError("no adb binary: install Android platform-tools or the adbutils wheel")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # mDNS discovery would open sockets beyond loopback and probe the LAN for phones.
    env.setdefault("ADB_MDNS", "0")
    env.setdefault("ADB_MDNS_AUTO_CONNECT", "")
    return env


def listener(port: int, timeout: float = 3.0) -> str:
    """Who holds 127.0.0.1:port: "adb" (answers `host:version`), "none" (nothing listens), or
    "other" (something that is not an adb server: it answered otherwise, closed, or kept silent).
    Telling "other" apart matters: `adb start-server` on a held port waits out its whole timeout."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"000chost:version")
            return "adb" if s.recv(4) == b"OKAY" else "other"
    except ConnectionRefusedError:
        return "none"
    except OSError:
        return "other"


def is_running(port: int) -> bool:
    """True if an adb server answers `host:version` on 127.0.0.1:port."""
    return listener(port, timeout=1.0) == "adb"


def ensure_server(port: int | None = None, timeout: float = 20.0) -> int:
    """Start an adb server on `port` unless one runs there; returns the port."""
    port = server_port() if port is None else port
    held = listener(port)
    if held == "adb":
        return port
    if held == "other":
        raise AdbServerError(f"port {port} is held by a program that is not an adb server "
                             f"(set ANDROID_ADB_SERVER_PORT to another port)")
    # The daemon inherits our file descriptors; holding a caller's output pipe open would make
    # CI wait for it until its time limit, so it gets none of them.
    subprocess.run(
        [find_adb(), "-P", str(port), "start-server"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=_env(), timeout=timeout, check=False, start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_running(port):
            return port
        time.sleep(0.1)
    raise AdbServerError(f"adb server did not start on 127.0.0.1:{port}")


def kill_server(port: int, timeout: float = 10.0) -> None:
    """Stop the adb server on `port` (no-op if none runs)."""
    if not is_running(port):
        return
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as s:
            s.sendall(b"0009host:kill")
            s.recv(4)
    except OSError:
        pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and is_running(port):
        time.sleep(0.1)


def adb_command(port: int, *args: str) -> list[str]:
    """argv for the adb CLI talking to the server on `port`."""
    return [find_adb(), "-P", str(port), *args]
