"""Where agent-host keeps converted models and server pidfiles."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """`$AGENT_HOST_CACHE`, else `$XDG_CACHE_HOME/agent-host`, else `~/.cache/agent-host`."""
    env = os.environ.get("AGENT_HOST_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "agent-host"
