"""A virtual phone: world + adbd + uiautomator server + faults, attached to a real adb server.

    with VirtualPhone() as phone:          # binds 127.0.0.1:<free port>, `adb connect`s it
        d = uiautomator2.connect(phone.serial)

The phone runs its own asyncio loop in a daemon thread; several phones run side by side.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import socket
import threading
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Protocol, TypeVar, TypeVarTuple

from virtual_phone import adb_server
from virtual_phone.adbd import Adbd
from virtual_phone.faults import FaultSpec, FaultState, parse_spec
from virtual_phone.fs import VirtualFS
from virtual_phone.latency import Latency, rpc_kind
from virtual_phone.latency import make as make_latency
from virtual_phone.services import Services
from virtual_phone.u2server import U2Server
from virtual_phone.world import World

if TYPE_CHECKING:
    import adbutils

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
# adb servers probe 5555-5585 for emulators when they start; a phone there would show up
# twice (as emulator-5554 too), so ephemeral ports in that range are skipped.
_EMULATOR_PORTS = range(5554, 5586)
U2_JAR = "/data/local/tmp/u2.jar"

R = TypeVar("R")
Ts = TypeVarTuple("Ts")


class WorldFactory(Protocol):
    """Builds the world a phone boots (tests pass one that seeds it); `_default_world` by default."""
    def __call__(self, fs: VirtualFS, *, model: str, seed: int) -> World: ...


class VirtualPhoneError(RuntimeError):
    pass


def _default_world(fs: VirtualFS, *, model: str, seed: int) -> World:
    return World(fs, model=model, seed=seed)


def free_port() -> int:
    """A free TCP port on 127.0.0.1 outside the range adb servers probe for emulators."""
    return _free_port()


def _free_port() -> int:
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        if port not in _EMULATOR_PORTS:
            return port
    raise VirtualPhoneError("no free port outside the adb emulator range")


class VirtualPhone:
    def __init__(self, port: int = 0, faults: str | FaultSpec | None = None, *,
                 adb_port: int | None = None, model: str = "VirtualPhone", seed: int = 0,
                 world_factory: WorldFactory | None = None, latency: str | Latency | None = None,
                 sim: bool = True, calendar_account: bool = True, contact_sync: bool = False) -> None:
        # without a SIM or a calendar account, or with an account that syncs contacts: what
        # such a phone shows (to test that runs skip the tasks that need them otherwise)
        self.sim, self.calendar_account, self.contact_sync = sim, calendar_account, contact_sync
        self.requested_port = port
        self.port = 0
        self.adb_port = adb_port
        self.model = model
        self.seed = seed
        self._world_factory = world_factory or _default_world
        self._initial_faults = parse_spec(faults) if isinstance(faults, str) else faults
        self.faults = FaultState()
        # Real-phone answer times, only when asked for (virtual_phone/latency.py).
        self.latency = latency if isinstance(latency, Latency) else make_latency(latency, seed)
        self._world = self._new_world(VirtualFS(), seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=16,
                                                               thread_name_prefix="vphone-world")
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self.u2 = U2Server(world=lambda: self._world, read_file=lambda p: self._world.fs.read(p),
                           run_blocking=self._run_blocking,
                           rpc_latency=lambda: self.faults.latency_s, after_rpc=self._after_rpc,
                           method_latency=lambda method: self.latency.delay_s(rpc_kind(method)))
        self.services = Services(world=lambda: self._world, u2=self.u2,
                                 run_blocking=self._run_blocking, fault_command=self._fault_command,
                                 shell_latency=lambda: self.latency.delay_s("shell"))
        self.adbd = Adbd(self.services.route, self._banner, self._on_request)
        self.connected = False
        self._stopped = False

    # --- world ---------------------------------------------------------------------------

    def _new_world(self, fs: VirtualFS, seed: int) -> World:
        world = self._world_factory(fs, model=self.model, seed=seed)
        world.sim = self.sim
        if not self.calendar_account:
            world.state.calendar.calendars = []
            world.state.accounts = []
        if self.contact_sync:
            world.state.turn_on_contact_sync()
        return world

    @property
    def world(self) -> World:
        return self._world

    @property
    def fs(self) -> VirtualFS:
        return self._world.fs

    def reset(self, seed: int | None = None, keep_u2: bool = True) -> None:
        """A freshly booted world (new fs and UI state) behind the same transport.

        With keep_u2 the pushed u2.jar and the running uiautomator server survive, which makes
        a reset far cheaper than a new phone for a client that was connected before.
        """
        fs = VirtualFS()
        if keep_u2:
            try:
                st = self.fs.stat(U2_JAR)
                fs.write(U2_JAR, self.fs.read(U2_JAR), mode=st.mode if st else 0o100644)
            except FileNotFoundError:
                pass
        else:
            self._call(self.u2.kill)
        world = self._new_world(fs, self.seed if seed is None else seed)
        world.u2_running = self.u2.running
        world.serialno = self._world.serialno
        self._world = world
        self._call(self._cancel_timers)
        self.faults = FaultState()  # knobs off, counters and the fired log start over

    # --- lifecycle -----------------------------------------------------------------------

    @property
    def serial(self) -> str:
        if not self.port:
            raise VirtualPhoneError("phone not started")
        return f"{HOST}:{self.port}"

    @property
    def running(self) -> bool:
        return self._loop is not None

    def start(self, attach: bool = True, timeout: float = 20.0) -> VirtualPhone:
        if self._loop is not None:
            return self
        if self._stopped:
            raise VirtualPhoneError("a stopped VirtualPhone cannot start again; make a new one")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="vphone-loop",
                                        daemon=True)
        self._thread.start()
        port = self.requested_port or _free_port()
        self.port = self._call_async(self.adbd.start(HOST, port), timeout)
        self._world.serialno = f"VPHONE{self.port:08d}"  # one per phone, as on real devices
        if self._initial_faults is not None:
            self.set_faults(self._initial_faults)
        if attach:
            self.attach(timeout)
        return self

    def attach(self, timeout: float = 20.0) -> None:
        """`adb connect` this phone and wait until the adb server lists it as `device`."""
        import adbutils

        self.adb_port = adb_server.ensure_server(self.adb_port)
        client = adbutils.AdbClient(host=HOST, port=self.adb_port)
        deadline = time.monotonic() + timeout
        state = "?"
        while time.monotonic() < deadline:
            try:
                state = self.adb_state(client)
                if state == "device":
                    self.connected = True
                    return
                if state in ("absent", "offline"):
                    # An offline entry is a transport the server gave up on: start over.
                    if state == "offline":
                        client.disconnect(self.serial)
                    client.connect(self.serial, timeout=5)
            except adbutils.AdbError as exc:
                state = str(exc)
            time.sleep(0.1)
        raise VirtualPhoneError(f"{self.serial} did not come online in the adb server on port "
                         f"{self.adb_port} (last state: {state})")

    def adb_state(self, client: adbutils.AdbClient | None = None) -> str:
        """This phone's state in the adb server's device list ("absent" when not listed)."""
        import adbutils

        client = client or adbutils.AdbClient(host=HOST, port=self.adb_port or adb_server.server_port())
        for info in client.list():
            if info.serial == self.serial:
                return info.state
        return "absent"

    def detach(self) -> None:
        if not self.connected or not self.port:
            return
        import adbutils

        try:
            adbutils.AdbClient(host=HOST, port=self.adb_port).disconnect(self.serial)
        except (adbutils.AdbError, OSError) as exc:
            log.debug("adb disconnect %s: %s", self.serial, exc)
        self.connected = False

    def stop(self) -> None:
        if self._loop is None:
            return
        self._stopped = True
        self.detach()
        try:
            self._call_async(self._shutdown(), 5.0)
        except (concurrent.futures.TimeoutError, RuntimeError) as exc:
            log.debug("stopping %s: %s", self.port, exc)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5.0)
        self._loop.close()
        self._loop = None
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def _shutdown(self) -> None:
        self.u2.kill()
        self._cancel_timers()
        await self.adbd.close()
        # Service tasks die with their connections; wait so none is destroyed while pending.
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    def __enter__(self) -> VirtualPhone:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- faults --------------------------------------------------------------------------

    def set_faults(self, spec: str | FaultSpec | None, clear: bool = False) -> None:
        """Set knobs now (counts and times start now); `clear` first turns every knob off."""
        if clear:
            self.faults.clear()
            self._call(self._cancel_timers)
        if spec is None:
            return
        parsed = parse_spec(spec) if isinstance(spec, str) else spec
        for action, delay in self.faults.update(parsed):
            self._call(self._schedule, action, delay)

    def kill_u2(self) -> bool:
        """The uiautomator server process dies now; True if it was running."""
        return bool(self._call(self.u2.kill))

    def drop_transport(self) -> None:
        """The adb link breaks now (the adb server sees the socket reset)."""
        self._call(self._drop)

    def show_dialog(self) -> None:
        self._world.show_system_dialog("Battery low", "Battery low. 10% remaining.")

    def _cancel_timers(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def _schedule(self, action: str, delay: float) -> None:
        assert self._loop is not None
        old = self._timers.pop(action, None)
        if old is not None:
            old.cancel()
        self._timers[action] = self._loop.call_later(delay, self._timer, action)

    def _timer(self, action: str) -> None:
        self._timers.pop(action, None)
        if self.faults.timer_fired(action):
            self._act(action)

    def _act(self, action: str) -> None:
        """Runs on the loop thread."""
        log.info("fault %s on %s", action, self.serial)
        if action == "drop":
            self._drop()
        elif action == "kill_u2":
            self.u2.kill()
        elif action == "dialog":
            assert self._loop is not None
            self._loop.run_in_executor(self._executor, self.show_dialog)

    def _drop(self) -> None:
        if self.faults.refuse_s:
            self.adbd.refuse_for(self.faults.refuse_s)
        self.adbd.drop_all()

    def _on_request(self) -> bool:
        if self.faults.note_request():
            if self.faults.refuse_s:
                self.adbd.refuse_for(self.faults.refuse_s)
            return True
        return False

    def _after_rpc(self) -> None:
        for action in self.faults.note_rpc():
            self._act(action)

    def _fault_command(self, args: list[str]) -> tuple[str, str, int]:
        """`vphone-fault ARGS` on the phone's shell (runs on the loop thread)."""
        usage = ("usage: vphone-fault show | clear | set SPEC | drop | kill-u2 | dialog | "
                 "latency MS\n")
        verb = args[0] if args else "show"
        try:
            if verb == "show":
                return self.faults.show(), "", 0
            if verb == "clear":
                self.faults.clear()
                self._cancel_timers()
                return "faults cleared\n", "", 0
            if verb == "set" and len(args) == 2:
                for action, delay in self.faults.update(parse_spec(args[1])):
                    self._schedule(action, delay)
                return f"faults: {self.faults.spec.describe()}\n", "", 0
            if verb == "latency" and len(args) == 2:
                self.faults.update(parse_spec(f"rpc_latency_ms={args[1]}"))
                return f"faults: {self.faults.spec.describe()}\n", "", 0
            if verb in ("drop", "kill-u2", "dialog") and len(args) == 1:
                action = verb.replace("-", "_")
                self.faults.fired.append(action)
                if action == "drop":
                    # After the reply has left: a client should see its command succeed first.
                    assert self._loop is not None
                    self._loop.call_later(0.2, self._drop)
                    return "dropping transport\n", "", 0
                if action == "kill_u2":
                    return ("killed uiautomator server\n" if self.u2.kill()
                            else "uiautomator server not running\n"), "", 0
                self._act(action)
                return "dialog shown\n", "", 0
        except ValueError as exc:
            return "", f"vphone-fault: {exc}\n", 2
        return "", usage, 2

    # --- plumbing ------------------------------------------------------------------------

    def _banner(self) -> bytes:
        props = {}
        try:
            props = self._world.props()
        except AttributeError:
            pass
        name = props.get("ro.product.name", "vphone")
        model = props.get("ro.product.model", self.model)
        device = props.get("ro.product.device", "vphone")
        # Only what is implemented: advertising stat_v2 makes `adb push` send STA2.
        features = "shell_v2,cmd,fixed_push_mkdir"
        return (f"device::ro.product.name={name};ro.product.model={model};"
                f"ro.product.device={device};features={features}").encode()

    async def _run_blocking(self, fn: Callable[[*Ts], R], *args: *Ts) -> R:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args))

    def _call(self, fn: Callable[[*Ts], R], *args: *Ts) -> R:
        """Run a sync function on the loop thread (or directly before start/after stop)."""
        loop = self._loop
        if loop is None or not loop.is_running():
            return fn(*args)
        if threading.current_thread() is self._thread:
            return fn(*args)
        fut: concurrent.futures.Future[R] = concurrent.futures.Future()

        def run() -> None:
            try:
                fut.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                fut.set_exception(exc)
        loop.call_soon_threadsafe(run)
        return fut.result(10.0)

    def _call_async(self, coro: Coroutine[object, object, R], timeout: float) -> R:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)
