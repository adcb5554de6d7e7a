"""`server: llama.cpp`: `llama-server` (or llama-cpp-python's server), started by agent-host."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys

from agent_host.config.builds import SERVER_KINDS, Build
from agent_host.errors import UserError
from agent_host.serving.endpoint import Endpoint
from agent_host.serving.spec import HOST, LaunchSpec, resolve_chat_template, resolve_model, key_env
from agent_host.serving.ready import Readiness

KIND = "llama.cpp"
MANAGED = SERVER_KINDS[KIND].managed
LOCAL_MODEL = SERVER_KINDS[KIND].local_model
KEY_ENV = ("LLAMA_API_KEY", "API_KEY")   # llama-server; llama_cpp.server's settings


def argv(build: Build, model: str, port: int, seed: int) -> list[str]:
    """llama.cpp is not installed on the development machines (llama-cpp-python is a ~10 min
    source build on 2 cores); `llama-server` is used when on PATH, else llama_cpp.server."""
    server = shutil.which("llama-server")
    if server:
        out = [server, "-m", model, "--host", HOST, "--port", str(port),
               "--alias", build.id, "--seed", str(seed), "--jinja"]
        if build.chat_template:
            out += ["--chat-template-file", resolve_chat_template(build.chat_template)]
    elif importlib.util.find_spec("llama_cpp") is not None:
        out = [sys.executable, "-m", "llama_cpp.server", "--model", model, "--host", HOST,
               "--port", str(port), "--model_alias", build.id, "--chat_format", "chatml-function-calling"]
    else:
        raise UserError(f"build {build.id}: llama.cpp is not installed: put `llama-server` on PATH "
                        "or `pip install 'llama-cpp-python[server]'`; or run it yourself and "
                        "use a `server: openai` build pointing at it")
    return out + list(build.args)


def plan(build: Build, *, port: int | None, api_key: str, seed: int) -> LaunchSpec:
    model = resolve_model(build)
    env = {**os.environ, **build.env, **key_env(KEY_ENV, api_key)}
    return LaunchSpec(
        argv=argv(build, model, port, seed), env=env, env_set=dict(build.env),
        endpoint=Endpoint(f"http://{HOST}:{port}/v1", api_key, build.id, build.id, None),
        readiness=Readiness(health=False, models=True, warmup=True))
