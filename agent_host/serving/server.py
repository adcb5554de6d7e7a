"""Managed servers: a Build made into a running, ready OpenAI-compatible endpoint.

    with start(build, log_dir=run_dir / "servers") as server:
        client = OpenAI(base_url=server.endpoint.base_url, api_key=server.endpoint.api_key)
        ...
    # stopped: SIGTERM to its process group, SIGKILL after a grace period

`start` returns only once the server is ready (see ready.py) and raises UserError, with the
last lines of the server log, if it exits early or misses the startup timeout. The server
runs in its own process group on 127.0.0.1, on a free port, with a random API key. See
procs.py for how nothing is left running after Ctrl-C or a SIGKILL of the controller.
"""

from __future__ import annotations

import atexit
import os
import datetime as dt
import secrets
import shlex
import socket
import subprocess
import threading
import time
import weakref
from collections import deque
from pathlib import Path

from agent_host.config.builds import Build
from agent_host.config.records import NotOwnFile, open_own, open_regular
from agent_host.config.secrets import redact_argv, redact_env
from agent_host.errors import UserError
from agent_host.serving import procs
from agent_host.serving.endpoint import Endpoint
from agent_host.serving.launch import plan
from agent_host.serving.spec import HOST, LaunchSpec
from agent_host.serving.ready import NotReady, Readiness, wait_ready

STOP_GRACE_S = 15.0
_live: "weakref.WeakSet[ManagedServer]" = weakref.WeakSet()


def new_api_key() -> str:
    """A random bearer token. The prefix matters: a urlsafe token starts with '-' one time in
    32, and the server's argparse then reads `--api-key -xyz` as a missing value."""
    return "ah-" + secrets.token_urlsafe(24)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]   # (host, port) of an AF_INET socket
        return port


def port_free(port: int) -> bool:
    """True if a server could listen on `port` (servers set SO_REUSEADDR: TIME_WAIT is fine)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
        return True


def tail(path: Path, n: int) -> list[str]:
    try:
        with open_regular(path) as f:   # a FIFO is not waited on
            return [ln.decode("utf-8", "replace").rstrip("\n") for ln in deque(f, maxlen=n)]
    except OSError:
        return []


class ManagedServer:
    """One build's server. Use as a context manager, or call `stop()` yourself."""

    def __init__(self, build: Build, *, log_dir: Path, seed: int, startup_timeout: float,
                 port: int | None):
        self.build = build
        self.seed = seed
        self.startup_timeout = startup_timeout
        self.log_dir = Path(log_dir)
        self.log_path = self.log_dir / f"{build.id}.server.log"
        self.api_key = new_api_key()
        self._fixed_port = port
        self.port: int | None = port
        self.proc: subprocess.Popen[bytes] | None = None
        self.spec: LaunchSpec | None = None
        self._endpoint: Endpoint | None = None
        self._pidrec: procs.PidRecord | None = None
        self._lock = threading.RLock()
        self.timings: dict[str, float] = {}   # seconds: start_to_ready, health, models, warmup, stop

    # ----------------------------------------------------------------- public
    @property
    def endpoint(self) -> Endpoint:
        if self._endpoint is None:
            raise UserError(f"build {self.build.id}: the server is not running")
        return self._endpoint

    @property
    def managed(self) -> bool:
        """False for `openai` builds: someone else runs that server."""
        return self.spec is not None and self.spec.argv is not None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        if not self.managed:
            return self._endpoint is not None
        return self.proc is not None and self.proc.poll() is None

    def last_log_lines(self, n: int = 40) -> list[str]:
        return tail(self.log_path, n)

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """SIGTERM the process group, SIGKILL after `grace` s. Idempotent."""
        with self._lock:
            self._endpoint = None
            if self.proc is None:
                return
            t0 = time.monotonic()
            killed = procs.stop_group(self.proc.pid, grace=grace, proc=self.proc)
            self.timings["stop"] = time.monotonic() - t0
            self._note(f"stopped after {self.timings['stop']:.1f} s"
                       + (" (SIGKILL after the grace period)" if killed else ""))
            if self._pidrec:
                procs.remove_pidfile(self._pidrec)
                self._pidrec = None
            self.proc = None
            _live.discard(self)

    def restart(self) -> Endpoint:
        """Stop and start again (same API key; same port when it is still free)."""
        with self._lock:
            self.stop()
            self._start()
            return self.endpoint

    def __enter__(self) -> ManagedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.alive() else "stopped"
        return f"<ManagedServer {self.build.id} {self.build.server} {state} pid={self.pid} port={self.port}>"

    # ---------------------------------------------------------------- private
    def _note(self, text: str) -> None:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            with open(open_own(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a", encoding="utf-8") as f:
                f.write(f"[agent-host {stamp}] {text}\n")
        except (OSError, NotOwnFile):  # a full or read-only run directory, a FIFO: a note is not worth a failed stop
            pass

    def _start(self, attempts: int = 2) -> None:
        for attempt in range(attempts):
            if self._fixed_port is not None:
                self.port = self._fixed_port
            elif self.port is None or not port_free(self.port):
                self.port = free_port()
            self.spec = plan(self.build, port=self.port, api_key=self.api_key, seed=self.seed)
            if self.spec.argv is None:
                try:
                    self._wait(self.spec, time.monotonic())
                except NotReady as exc:
                    raise UserError(f"build {self.build.id}: {self.spec.endpoint.base_url} "
                                    f"not ready: {exc}") from None
                return
            try:
                self._spawn_and_wait(self.spec)
                return
            except NotReady as exc:
                lines = self.last_log_lines(200)
                clash = any("address already in use" in ln.lower() for ln in lines[-40:])
                if clash and self._fixed_port is None and attempt + 1 < attempts:
                    self.port = None  # raced for the port: take another one
                    continue
                shown = "\n".join(f"  | {ln}" for ln in lines[-30:])
                raise UserError(
                    f"build {self.build.id}: server not ready: {exc}\n"
                    f"  last lines of {self.log_path}:\n{shown}") from None

    def _spawn_and_wait(self, spec: LaunchSpec) -> None:
        assert spec.argv is not None, "_start waits on a server it does not start (argv None) without spawning"
        masked = [a if a != self.api_key else "***" for a in spec.argv]
        self._note(f"starting build {self.build.id} ({self.build.server}) on port {self.port}")
        self._note("argv: " + shlex.join(redact_argv(masked)))
        if spec.env_set:  # the server log is a run's file: the build's env: by name only
            shown = {**spec.env_set, **redact_env(self.build.env)}
            self._note("env: " + " ".join(f"{k}={v}" for k, v in sorted(shown.items())))
        t0 = time.monotonic()
        self.proc = procs.spawn(spec.argv, env=spec.env, log_path=self.log_path)
        self._pidrec = procs.write_pidfile(self.proc, build_id=self.build.id, port=self.port,
                                           argv=masked)
        _live.add(self)
        try:
            self._wait(spec, t0)
        except BaseException:  # NotReady, KeyboardInterrupt, ...: leave nothing behind
            code = self.proc.poll()
            if code is not None:
                self._note(f"server exited with code {code}")
            self.stop(grace=5)
            raise

    def _wait(self, spec: LaunchSpec, t0: float) -> None:
        how = Readiness(health=spec.readiness.health, models=spec.readiness.models,
                        warmup=spec.readiness.warmup, adopt_model=spec.readiness.adopt_model)
        proc = self.proc
        ep = wait_ready(spec.endpoint, how, deadline=t0 + self.startup_timeout,
                        still_running=(lambda: proc.poll() is None) if proc else (lambda: True))
        self.timings.update(how.timings)
        self.timings["start_to_ready"] = time.monotonic() - t0
        self._endpoint = ep
        if proc:
            self._note(f"ready after {self.timings['start_to_ready']:.1f} s: "
                       + ", ".join(f"{k} {v:.1f} s" for k, v in how.timings.items()))


def start(build: Build, *, log_dir: Path, seed: int = 0, startup_timeout: float | None = None,
          port: int | None = None) -> ManagedServer:
    """Start `build`'s server and return it once ready (for `openai` builds: only check it).

    Raises UserError (with the server log's last lines) if it exits early or is not ready
    within `startup_timeout` seconds (default: the build's `startup_timeout_s`).
    """
    procs.reap_orphans()
    server = ManagedServer(build, log_dir=log_dir, seed=seed,
                           startup_timeout=startup_timeout or build.startup_timeout_s, port=port)
    server._start()
    return server


@atexit.register
def _stop_all() -> None:
    for server in list(_live):
        try:
            server.stop(grace=5)
        except Exception:
            pass
