"""Fixtures: virtual phones behind a real adb server that belongs to this test session.

- `adb_server_port` (session): the session's own adb server, on a free port chosen when this
  module loads (never 5037, so a developer's adb server is never touched); the port is in
  ANDROID_ADB_SERVER_PORT for the whole session (subprocesses inherit it). Killed at the end.
- `virtual_phone`: a connected VirtualPhone with a freshly booted world. One phone serves the
  session and is reset per test (new fs and UI state, faults off), which keeps the pushed
  u2.jar and the running uiautomator server: a test costs milliseconds, not a connect.
- `u2_device`: `uiautomator2.connect(virtual_phone.serial)`.
- `virtual_phone_factory`: `factory(**VirtualPhone kwargs)` -> a new started phone of the
  test's own (from-scratch state, faults at start); all are stopped after the test.
- `real_latency_phone`: a phone of the test's own answering with the `real-phone` latency
  profile's timings (virtual_phone/latency.py), seed 0.
"""

from __future__ import annotations

import calendar
import os
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from virtual_phone import adb_server
from virtual_phone.phone import VirtualPhone

# A test run may swap the world class in (e.g. a debugging stand-in); None = the real World.
WORLD_FACTORY: Callable[..., Any] | None = None

_AVOID = {adb_server.DEFAULT_PORT, adb_server.DEFAULT_PORT + 1} | set(range(5554, 5586))


def _pick_port() -> int:
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _AVOID:
            return port
    raise RuntimeError("no free port for the test adb server")


# Chosen at import so that nothing in the session, fixture or not, can reach port 5037.
SESSION_ADB_PORT = _pick_port()
os.environ["ANDROID_ADB_SERVER_PORT"] = str(SESSION_ADB_PORT)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Also when no fixture started it: adbutils starts a server by itself on first use, and a
    # daemon left holding the session's output pipe makes CI wait until its time limit.
    adb_server.kill_server(SESSION_ADB_PORT)


@pytest.fixture(scope="session")
def adb_server_port() -> Iterator[int]:
    os.environ["ANDROID_ADB_SERVER_PORT"] = str(SESSION_ADB_PORT)
    adb_server.ensure_server(SESSION_ADB_PORT)
    try:
        yield SESSION_ADB_PORT
    finally:
        adb_server.kill_server(SESSION_ADB_PORT)


@pytest.fixture(scope="session")
def _shared_phone(adb_server_port: int) -> Iterator[list[VirtualPhone]]:
    # A holder, so a test that stops the phone only costs the next test a new one.
    holder: list[VirtualPhone] = []
    try:
        yield holder
    finally:
        for phone in holder:
            phone.stop()


@pytest.fixture
def virtual_phone(_shared_phone: list[VirtualPhone], adb_server_port: int) -> Iterator[VirtualPhone]:
    if not _shared_phone or not _shared_phone[-1].running:
        _shared_phone.append(VirtualPhone(adb_port=adb_server_port, world_factory=WORLD_FACTORY).start())
    phone = _shared_phone[-1]
    phone.reset()
    if phone.adb_state() != "device":  # a previous test dropped the transport
        phone.attach()
    yield phone
    if phone.running:
        phone.set_faults(None, clear=True)


@pytest.fixture
def u2_device(virtual_phone: VirtualPhone) -> Any:
    import uiautomator2

    return uiautomator2.connect(virtual_phone.serial)


@pytest.fixture
def virtual_phone_factory(adb_server_port: int) -> Iterator[Callable[..., VirtualPhone]]:
    phones: list[VirtualPhone] = []

    def make(**kwargs: Any) -> VirtualPhone:
        kwargs.setdefault("adb_port", adb_server_port)
        kwargs.setdefault("world_factory", WORLD_FACTORY)
        phone = VirtualPhone(**kwargs)
        phones.append(phone)
        return phone.start()

    yield make
    for phone in phones:
        phone.stop()


@pytest.fixture
def real_latency_phone(virtual_phone_factory: Callable[..., VirtualPhone]) -> VirtualPhone:
    return virtual_phone_factory(latency="real-phone", seed=0)


def set_clock_today(phone: VirtualPhone, hour: int, minute: int, second: int = 0) -> None:
    """The virtual phone's wall clock to hour:minute:second UTC today (its next reset undoes it)."""
    now = time.gmtime()
    phone.world.state.clock.set(calendar.timegm((now.tm_year, now.tm_mon, now.tm_mday, hour, minute, second)))
