"""Fault knobs of the virtual phone: what a flaky real phone does to a client.

All knobs are off by default. They are set at start (`agent-host phone start --faults SPEC`,
`VirtualPhone(faults=SPEC)`) or while running, from any adb client, with the shell command
only the virtual phone knows:

    adb shell vphone-fault show                      current knobs and counters
    adb shell vphone-fault set drop_after=5,rpc_latency_ms=100
    adb shell vphone-fault clear                     every knob off
    adb shell vphone-fault drop | kill-u2 | dialog   do it now
    adb shell vphone-fault latency 100               same as set rpc_latency_ms=100

SPEC is comma-separated `knob=value`:
    drop_after=N       close the adb transport when request N+1 arrives (requests = streams
                       the adb server opens: each shell, sync, tcp:9008 connection)
    drop_at=T          close the adb transport T seconds after the knob is set (`30s`, `1.5`)
    drop_for=T         after a drop, refuse reconnection for T seconds (default 0: the adb
                       server may reconnect at once, as after a brief Wi-Fi loss)
    kill_u2_after=N    the uiautomator server dies right after answering JSON-RPC call N
    kill_u2_at=T       the uiautomator server dies T seconds after the knob is set
    rpc_latency_ms=MS  every JSON-RPC call answers MS later
    dialog_after=N     the "Battery low" system dialog pops up after JSON-RPC call N
    dialog_at=T        ... T seconds after the knob is set
Counted knobs ("after") count from when they are set and fire once.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field

COUNT_KNOBS = ("drop_after", "kill_u2_after", "dialog_after")
TIME_KNOBS = ("drop_at", "kill_u2_at", "dialog_at", "drop_for")
VALUE_KNOBS = ("rpc_latency_ms",)

ACTIONS = ("drop", "kill_u2", "dialog")


@dataclass
class FaultSpec:
    drop_after: int | None = None
    drop_at: float | None = None
    drop_for: float | None = None
    kill_u2_after: int | None = None
    kill_u2_at: float | None = None
    rpc_latency_ms: int | None = None
    dialog_after: int | None = None
    dialog_at: float | None = None

    def describe(self) -> str:
        parts = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                 for k, v in dataclasses.asdict(self).items() if v is not None]
        return ",".join(parts) or "none"


def _seconds(text: str) -> float:
    t = text.strip().lower()
    scale = 1.0
    if t.endswith("ms"):
        t, scale = t[:-2], 0.001
    elif t.endswith("s"):
        t = t[:-1]
    elif t.endswith("m"):
        t, scale = t[:-1], 60.0
    value = float(t) * scale
    if not 0 <= value < float("inf"):  # nan and inf too: a knob that never (or always) fires
        raise ValueError
    return value


def parse_spec(text: str | None) -> FaultSpec:
    """Parse `knob=value,...`; raises ValueError naming the bad part."""
    spec = FaultSpec()
    if not text or text.strip() in ("", "none", "off"):
        return spec
    known = COUNT_KNOBS + TIME_KNOBS + VALUE_KNOBS
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        key, eq, raw = part.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or key not in known:
            raise ValueError(f"unknown fault {part!r}; known: {', '.join(known)} (as knob=value)")
        try:
            if key in TIME_KNOBS:
                value: int | float = _seconds(raw)
            else:
                value = int(raw.strip().removesuffix("ms"))
                if value < 0:
                    raise ValueError
        except ValueError:
            raise ValueError(f"bad value in fault {part!r}") from None
        setattr(spec, key, value)
    return spec


@dataclass
class FaultState:
    """Knobs plus the counters they fire on; every method is safe to call from any thread."""

    spec: FaultSpec = field(default_factory=FaultSpec)
    requests: int = 0
    rpcs: int = 0
    fired: list[str] = field(default_factory=list)
    _req_base: int = 0
    _rpc_base: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def update(self, new: FaultSpec) -> list[tuple[str, float]]:
        """Merge the knobs that `new` sets; returns timed actions to schedule as (action, delay)."""
        timers: list[tuple[str, float]] = []
        with self._lock:
            for key, value in dataclasses.asdict(new).items():
                if value is None:
                    continue
                setattr(self.spec, key, value)
                if key == "drop_after":
                    self._req_base = self.requests
                elif key in ("kill_u2_after", "dialog_after"):
                    self._rpc_base[key] = self.rpcs
                elif key in ("drop_at", "kill_u2_at", "dialog_at"):
                    timers.append((key.removesuffix("_at"), float(value)))
        return timers

    def clear(self) -> None:
        with self._lock:
            self.spec = FaultSpec()

    @property
    def latency_s(self) -> float:
        return (self.spec.rpc_latency_ms or 0) / 1000.0

    @property
    def refuse_s(self) -> float:
        return self.spec.drop_for or 0.0

    def note_request(self) -> bool:
        """Count one adb request; True when the transport must drop instead of serving it."""
        with self._lock:
            self.requests += 1
            limit = self.spec.drop_after
            if limit is not None and self.requests - self._req_base > limit:
                self.spec.drop_after = None
                self.fired.append("drop")
                return True
            return False

    def note_rpc(self) -> list[str]:
        """Count one answered JSON-RPC call; returns the actions due now."""
        due: list[str] = []
        with self._lock:
            self.rpcs += 1
            for key, action in (("kill_u2_after", "kill_u2"), ("dialog_after", "dialog")):
                limit = getattr(self.spec, key)
                if limit is not None and self.rpcs - self._rpc_base.get(key, 0) >= limit:
                    setattr(self.spec, key, None)
                    self.fired.append(action)
                    due.append(action)
        return due

    def timer_fired(self, action: str) -> bool:
        """A scheduled action is due; False if its knob was cleared or replaced meanwhile."""
        with self._lock:
            key = f"{action}_at"
            if getattr(self.spec, key) is None:
                return False
            setattr(self.spec, key, None)
            self.fired.append(action)
            return True

    def show(self) -> str:
        with self._lock:
            return (f"faults: {self.spec.describe()}\n"
                    f"requests: {self.requests}\nrpcs: {self.rpcs}\n"
                    f"fired: {','.join(self.fired) or 'none'}\n")
