"""The server-kind registry: one module per kind of server a build can name (`server:`).

Each module defines `KIND` (the name builds use), `MANAGED` (agent-host starts and stops it),
`LOCAL_MODEL` (it serves files on this machine), `KEY_ENV` (the environment variables its
server reads its API key from; keys never go on a command line) and
`plan(build, *, port, api_key, seed) -> LaunchSpec`. A new kind is a new module added here
and to `config.builds.ServerKind` (a test checks the two agree).
"""

from __future__ import annotations

from typing import Protocol

from agent_host.config.builds import Build
from agent_host.errors import UserError
from agent_host.serving.kinds import llama_cpp, openai, policy, vllm
from agent_host.serving.spec import LaunchSpec


class ServerKind(Protocol):
    """What every kind's module defines (the module itself is the value: mypy checks each
    against this)."""
    @property
    def KIND(self) -> str: ...               # the name builds use (`server:`)
    @property
    def MANAGED(self) -> bool: ...           # agent-host starts and stops it
    @property
    def LOCAL_MODEL(self) -> bool: ...       # it serves files on this machine
    @property
    def KEY_ENV(self) -> tuple[str, ...]: ...   # where its server reads its API key

    def plan(self, build: Build, *, port: int | None, api_key: str, seed: int) -> LaunchSpec: ...


_MODULES: tuple[ServerKind, ...] = (vllm, llama_cpp, policy, openai)
KINDS: dict[str, ServerKind] = {m.KIND: m for m in _MODULES}


def kind(build: Build) -> ServerKind:
    try:
        return KINDS[build.server]
    except KeyError:
        raise UserError(f"build {build.id}: unknown server kind {build.server!r} "
                        f"(known: {', '.join(KINDS)})") from None

