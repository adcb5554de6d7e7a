"""Fixtures: scripted policies behind a real HTTP server.

- `policy_server`: `factory(script)` -> a started `PolicyServer` (in this process, real HTTP on
  a free port); `script` is a list of items, a mapping with `actions`, a PolicyScript (or any
  policy with `answer`, e.g. a SuitePolicy), or a path to a YAML file. Every server is stopped after the test. `server.requests` holds each chat
  request body it received, `server.endpoint()` the Endpoint to give run_episode.
- `virtual_profile`: the `virtual` phone profile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def policy_server() -> Iterator[Callable[..., Any]]:
    from agent_host.policy.script import PolicyScript
    from agent_host.policy.server import PolicyServer

    servers: list[PolicyServer] = []

    def make(script: Any, **kwargs: Any) -> PolicyServer:
        if isinstance(script, (str, Path)):
            script = PolicyScript.load(script)
        elif not hasattr(script, "answer"):  # a PolicyScript or SuitePolicy is served as is
            script = PolicyScript.from_data(script, source="<test>")
        server = PolicyServer(script, **kwargs).start()
        servers.append(server)
        return server

    yield make
    for s in servers:
        s.stop()


@pytest.fixture
def virtual_profile() -> Any:
    from agent_host.config.phones import load_phone_profile

    return load_phone_profile("virtual")


def write_suite_builds(tmp: Path, flaws: dict[str, float], what: str = "the run test") -> Path:
    """A host profile of two scripted builds over the shipped suite's solutions: `oracle` plays
    each solution, `flawed` plays them with `flaws` (docs/policies.md). Returns its path."""
    import json

    root = Path(__file__).resolve().parents[1]
    (tmp / "oracle.yaml").write_text(f"suite: [{root / 'tasks'}]\n")
    (tmp / "flawed.yaml").write_text(f"suite: [{root / 'tasks'}]\nflaws: {json.dumps(flaws)}\n")
    hosts = tmp / "scripted.yaml"
    hosts.write_text(f"""\
id: scripted
description: two scripted builds for {what}
hardware_class: x86-avx2
builds:
  - {{id: oracle, weight_path: scripted, server: policy, script: {tmp / 'oracle.yaml'}}}
  - {{id: flawed, weight_path: scripted, server: policy, script: {tmp / 'flawed.yaml'}}}
""")
    return hosts
