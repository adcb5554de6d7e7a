"""The server-kind registry: one module per kind of server a build can name (`server:`).

Each module defines `KIND` (the name builds use), `MANAGED` (agent-host starts and stops it),
`LOCAL_MODEL` (it serves files on this machine), `KEY_ENV` (the environment variables its
server reads its API key from; keys never go on a command line) and
`plan(build, *, port, api_key, seed) -> LaunchSpec`. A new kind is a new module added here
and to `config.builds.ServerKind` (a test checks the two agree).
"""

from __future__ import annotations

from types import ModuleType

from agent_host.config.builds import Build
from agent_host.errors import UserError
from agent_host.serving.kinds import llama_cpp, openai, policy, vllm

KINDS: dict[str, ModuleType] = {m.KIND: m for m in (vllm, llama_cpp, policy, openai)}


def kind(build: Build) -> ModuleType:
    try:
        return KINDS[build.server]
    except KeyError:
        raise UserError(f"build {build.id}: unknown server kind {build.server!r} "
                        f"(known: {', '.join(KINDS)})") from None

