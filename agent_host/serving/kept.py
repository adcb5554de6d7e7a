"""Servers kept up across the steps of one command: each build's server started on its first
use and stopped when the command ends. The demo's fidelity probe, episodes and replay each
started their own (four starts of two builds, about 2 min each on 2 AVX2 cores).

    with KeptServers(run_dir / "servers") as kept:
        with kept.served(build, log_dir=..., startup_timeout=...) as server:   # started
            ...
        with kept.served(build, log_dir=..., startup_timeout=...) as server:   # the same one
            ...
    # every server stopped

`served` has the signature of the `served` hooks of runs/replay.py, serving/fidelity.py and
RunOptions.served (runs/execute.py). A kept server's log is `log_dir/<build>.server.log` of the
KeptServers, whatever the step asks: the log file stays open in the server for its whole life,
so it cannot follow a step's own folder. A server that died in between is started again; one
that failed to start is tried again by the next step (and fails it in the same words).
With `keep=False` (the machine cannot hold every build's server: runs/order.servers_kept) each
use starts and stops its own, as before.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from agent_host.config.builds import Build
    from agent_host.serving.server import ManagedServer


class KeptServers:
    def __init__(self, log_dir: Path, *, keep: bool = True) -> None:
        self.log_dir = Path(log_dir)
        self.keep = keep
        self.servers: dict[tuple[str, int], ManagedServer] = {}   # (build id, seed) -> its server
        self.starts: list[str] = []                      # build ids, one per start (for tests and notes)

    @contextlib.contextmanager
    def served(self, build: Build, *, log_dir: Path, startup_timeout: float | None = None,
               seed: int = 0) -> Iterator[ManagedServer]:
        from agent_host.serving.server import start

        timeout = startup_timeout or build.startup_timeout_s
        if not self.keep:
            self.starts.append(build.id)
            with start(build, log_dir=log_dir, seed=seed, startup_timeout=timeout) as once:
                yield once
            return
        key = (build.id, seed)
        server = self.servers.get(key)
        if server is None or not server.alive():
            if server is not None:
                server.stop()
            self.servers.pop(key, None)
            self.starts.append(build.id)
            server = start(build, log_dir=self.log_dir, seed=seed, startup_timeout=timeout)
            self.servers[key] = server
        yield server

    def close(self) -> None:
        """Stop every kept server (each SIGTERM, then SIGKILL after its grace period)."""
        while self.servers:
            _, server = self.servers.popitem()
            try:
                server.stop()
            except Exception:   # the others must still stop
                pass

    def __enter__(self) -> KeptServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
