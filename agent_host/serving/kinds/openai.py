"""`server: openai`: an endpoint someone else runs; agent-host only checks it is ready."""

from __future__ import annotations

import os

from agent_host.config.builds import SERVER_KINDS, Build
from agent_host.errors import UserError
from agent_host.serving.endpoint import Endpoint
from agent_host.serving.spec import LaunchSpec
from agent_host.serving.ready import Readiness

KIND = "openai"
MANAGED = SERVER_KINDS[KIND].managed
LOCAL_MODEL = SERVER_KINDS[KIND].local_model
KEY_ENV: tuple[str, ...] = ()   # the key is the user's, read from the build's api_key_env


def plan(build: Build, *, port: int | None, api_key: str, seed: int) -> LaunchSpec:
    if not build.base_url:
        raise UserError(f"build {build.id}: `base_url` is required for server openai")
    url = build.base_url.rstrip("/")
    if not url.endswith("/v1"):
        url += "/v1"
    key = ""
    if build.api_key_env:
        key = os.environ.get(build.api_key_env, "")
        if not key:
            raise UserError(f"build {build.id}: environment variable {build.api_key_env} "
                            "(api_key_env) is not set")
    return LaunchSpec(
        argv=None, env={}, env_set={},
        endpoint=Endpoint(url, key, build.model or build.id, build.id, None),
        readiness=Readiness(health=False, models=True, warmup=True))
