"""The virtual phone's world as the transport sees it: the UI with its shell, RPC and screenshots.

This is where the parts are put together: the installed packages come from the app registry
(or the caller), and the shell and RPC server sit on top of the UI they drive.
"""

from __future__ import annotations

import threading

from .apps.registry import installed
from .core import Package, ShellResult
from .fs import VirtualFS
from .rpc import dispatch
from .screenshot import render
from .shell import Shell
from .ui import Ui


class World(Ui):
    def __init__(self, fs: VirtualFS, packages: list[Package] | None = None, *, model: str = "VirtualPhone",
                 seed: int = 0) -> None:
        super().__init__(fs, installed() if packages is None else packages, model=model, seed=seed)
        self._shell = Shell(self)

    def shell(self, command: str, cancel: threading.Event | None = None) -> ShellResult:
        """Run one command line; `cancel` set (the client closed the stream) ends a `sleep` early."""
        with self.lock:
            self.invalidate()
            self._shell.cancel = cancel if cancel is not None else threading.Event()
            try:
                return self._shell.run(command)
            finally:
                self.invalidate()

    def rpc(self, method: str, params: object) -> object:
        return dispatch(self, method, params)

    def screenshot_png(self) -> bytes:
        with self.lock:
            return render(self, "PNG")

    def screenshot_jpeg(self, quality: int = 80, scale: float = 1.0) -> bytes:
        with self.lock:
            return render(self, "JPEG", quality=quality, scale=scale)
