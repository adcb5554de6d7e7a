"""`server: policy`: a scripted policy (`agent-host policy serve`), started by agent-host."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agent_host.config.builds import SERVER_KINDS, Build
from agent_host.errors import UserError
from agent_host.serving.endpoint import Endpoint
from agent_host.serving.spec import HOST, LaunchSpec, key_env
from agent_host.serving.ready import Readiness

KIND = "policy"
MANAGED = SERVER_KINDS[KIND].managed
LOCAL_MODEL = SERVER_KINDS[KIND].local_model
KEY_ENV = ("AGENT_HOST_POLICY_API_KEY",)


def plan(build: Build, *, port: int | None, api_key: str, seed: int) -> LaunchSpec:
    if not build.script:
        raise UserError(f"build {build.id}: `script` is required for server policy")
    argv = [sys.executable, "-m", "agent_host", "policy", "serve", "--script",
            str(Path(build.script).expanduser()), "--port", str(port), "--host", HOST,
            "--model", build.id] + list(build.args)
    env = {**os.environ, **build.env, "PYTHONUNBUFFERED": "1", **key_env(KEY_ENV, api_key)}
    return LaunchSpec(
        argv=argv, env=env, env_set=dict(build.env),
        endpoint=Endpoint(f"http://{HOST}:{port}/v1", api_key, build.id, build.id, None),
        readiness=Readiness(health=False, models=True, warmup=False, adopt_model=True))
