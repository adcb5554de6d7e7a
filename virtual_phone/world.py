"""The virtual phone's world as the transport sees it: the UI with its shell, RPC and screenshots.

This is where the parts are put together: the installed packages come from the app registry
(or the caller), and the shell and RPC server sit on top of the UI they drive.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .apps.registry import installed
from .core import Package, ShellResult
from .fs import VirtualFS
from .json_value import Json
from .rpc import Result, dispatch
from .screenshot import render
from .shell import Shell
from .ui import Ui


class World(Ui):
    def __init__(self, fs: VirtualFS, packages: list[Package] | None = None, *, model: str = "VirtualPhone",
                 seed: int = 0) -> None:
        super().__init__(fs, installed() if packages is None else packages, model=model, seed=seed)

    def shell(self, command: str, cancel: threading.Event | None = None,
              emit: Callable[[bytes], None] | None = None) -> ShellResult:
        """Run one command line; `cancel` set (the client closed the stream) ends a `sleep` early,
        `emit` sends output before the line ends (a following `logcat`)."""
        with self.lock:
            self.invalidate()
            # One sh per command line, as adbd starts one per `adb shell`: a line that sleeps
            # lets others run meanwhile, so no two may share $?, the hang-up flag or the output.
            sh = Shell(self)
            sh.cancel = cancel if cancel is not None else threading.Event()
            sh.emit = emit
            try:
                return sh.run(command)
            finally:
                self.invalidate()

    def rpc(self, method: str, params: Json) -> Result:
        return dispatch(self, method, params)

    def screenshot_png(self) -> bytes:
        with self.lock:
            return render(self, "PNG")

    def screenshot_jpeg(self, quality: int = 80, scale: float = 1.0) -> bytes:
        with self.lock:
            return render(self, "JPEG", quality=quality, scale=scale)

    def framebuffer_rgba(self) -> bytes:
        with self.lock:
            return render(self, "RGBA")
