"""Builds and host profiles: one way to serve a model, and the machines that run them.

A host profile is a YAML file in device_profiles/hosts/ listing its builds (see
docs/builds.md). The serving layer turns a Build into a running OpenAI-compatible endpoint;
`agent_host.config.hosts` loads the profiles and finds builds by id.

A build's `model` is a local path, a model agent-host makes itself (`smollm2-135m`,
`tiny-random`), or a *name* the user maps to a local path (`resolve_model_name`):
  1. the environment variable `AGENT_HOST_MODEL_<NAME>` (NAME upper-cased, every character
     outside A-Z0-9 replaced by `_`: `spark-x2.5-1.7b-gptq-int4` ->
     `AGENT_HOST_MODEL_SPARK_X2_5_1_7B_GPTQ_INT4`), else
  2. `models.yaml` in the config directory (`$AGENT_HOST_CONFIG`, else
     `$XDG_CONFIG_HOME/agent-host`, else `~/.config/agent-host`): a mapping `name: path`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

from pydantic import Field, field_validator

from agent_host.config.observation import CoordinateFrame, ObservationMode, ObservationSpec
from agent_host.config.strict import Closed
from agent_host.errors import ConfigError


class Sampling(Closed):
    temperature: float = Field(0.0, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int = Field(256, ge=1, le=32768)


@dataclass(frozen=True)
class ServerTraits:
    """What a kind of server is, asked by every caller instead of comparing kind names."""
    managed: bool          # agent-host starts and stops it (else: someone else's endpoint)
    local_model: bool      # it serves model files on this machine
    scripted: bool         # its replies come from a script, not a model (speed means nothing)
    prompt_logprobs: bool  # it can score a given reply (vLLM's prompt_logprobs)
    python_module: str | None = None   # what must import for it to start
    dtype_flag: str | None = None      # the argument that sets its activation dtype (CPU rule)
    # Its grammar for tool_choice="required" lets free text come first, and a small model
    # rambles there to max_tokens (llama-server 11434): the call is asked as one JSON object
    # (response_format json_schema over the tools) and read from the reply's content.
    calls_as_json: bool = False
    # the arguments that turn its prefix cache off (speed benchmarks measure uncached prefill);
    # () where the cache is off per request (llama-server: speed.measure sends cache_prompt false)
    no_prefix_cache_args: tuple[str, ...] = ()


# The one table of server kinds: `server:` accepts these names, serving/kinds has one module
# each (a test checks the two agree), and a new kind is a row here plus its module.
SERVER_KINDS: dict[str, ServerTraits] = {
    "vllm": ServerTraits(managed=True, local_model=True, scripted=False, prompt_logprobs=True,
                         python_module="vllm", dtype_flag="--dtype",
                         no_prefix_cache_args=("--no-enable-prefix-caching",)),
    "llama.cpp": ServerTraits(managed=True, local_model=True, scripted=False, prompt_logprobs=False,
                              calls_as_json=True),
    "policy": ServerTraits(managed=True, local_model=False, scripted=True, prompt_logprobs=False),
    "openai": ServerTraits(managed=False, local_model=False, scripted=False, prompt_logprobs=False),
}
if TYPE_CHECKING:   # the checker cannot read a Literal built from the table; pydantic checks the name
    ServerKind: TypeAlias = str
else:
    ServerKind = Literal[tuple(SERVER_KINDS)]   # derived from the table
Role = Literal["candidate", "reference", "bar", "default", "example"]
Priority = Literal["speed", "fidelity"]


class Checkpoint(Closed):
    """How the weights on disk were made (facts that decide which kernels can run them)."""
    format: str = Field(description="safetensors, gptq, gguf, exported-graph, ...")
    bits: int | None = Field(None, ge=1, le=32, description="weight bits of the quantized layers")
    symmetric: bool | None = None
    lm_head_quantized: bool | None = None
    tied_embeddings: bool | None = Field(None, description="embedding shared with lm_head")
    calibration: str | None = Field(None, description="e.g. w8a16 for an exported NPU graph")


class Measured(Closed):
    """A speed measured on real hardware (the numbers of the weight-path study)."""
    decode_tok_s: float | None = Field(None, gt=0, description="single-stream decode tokens/s")
    machine: str | None = None
    threads: int | None = Field(None, ge=1)
    model: str | None = Field(None, description="the model measured")
    relative_to: str | None = Field(None, description="a build id this speed is relative to")
    slowdown: float | None = Field(None, gt=0, description="times slower than relative_to")
    note: str = ""

    def summary(self) -> str:
        if self.decode_tok_s is not None:
            return f"{self.decode_tok_s:.1f}"
        if self.relative_to and self.slowdown:
            return f"{self.slowdown:g}x slower than {self.relative_to}"
        return ""


def check_http_url(v: str) -> str:
    """`v` if it is an http(s) URL with a host, else ValueError saying why: the one check of a
    base URL (a build's `base_url:`, `agent-host episode --base-url`), made before anything runs."""
    import httpx
    try:
        url = httpx.URL(v)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ValueError(f"{v!r} is not a URL ({exc})") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(f"{v!r} is not an http:// or https:// URL with a host")
    return v


class Build(Closed):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    weight_path: str = Field(description="e.g. bf16, w4a8-amx, w4a16-tinygemm, w4a16-wna16, q4_k_m")
    server: ServerKind
    model: str | None = Field(None, description="local path, a name mapped to one, or the remote model name")
    args: list[str] = Field(default_factory=list, description="extra server arguments")
    env: dict[str, str] = Field(default_factory=dict)
    tool_call_parser: str | None = None
    chat_template: str | None = None
    sampling: Sampling = Field(default_factory=Sampling)
    bits_per_weight: float | None = Field(None, gt=0, le=32)
    group_size: int | None = Field(None, ge=1)
    activations: str | None = Field(None, description="activation dtype in the matmuls: bf16, fp16, int8, fp32")
    kernel: str | None = None
    checkpoint: Checkpoint | None = None
    role: Role = Field("candidate", description="reference (fidelity baseline), bar (what to beat), ...")
    measured: Measured | None = None
    requires_cpu_flags: list[str] = Field(default_factory=list,
                                          description="/proc/cpuinfo flags the kernel needs, e.g. amx_tile")
    requires_vllm_ops: list[str] = Field(
        default_factory=list,
        description="ops of vLLM's CPU kernel library the kernel calls, e.g. cpu_gemm_wna16: refused "
                    "where the library vLLM loads for this CPU does not register them")
    requires_packages: list[str] = Field(default_factory=list,
                                         description="Python distributions the server needs, e.g. vllm-omni")
    # what the build is shown of the screen (docs/builds.md, "Vision builds"; config/observation.py)
    observation: ObservationMode = Field("text", description="text, screenshot, screenshot+text or som")
    coordinates: CoordinateFrame | None = Field(
        None, description="the frame of tap_xy/long_press_xy/swipe_xy: pixels (of the image shown; the "
                          "phone's for a text build) or normalized (0-1000); default: pixels for image "
                          "observations, none (no coordinate tools) for text")
    max_pixels: int | None = Field(None, ge=64, description="shrink the screenshot to at most this many pixels")
    long_side: int | None = Field(None, ge=8, description="shrink the screenshot's long side to this")
    history_images: int = Field(1, ge=0, le=32, description="screenshots kept in a prompt, the newest")
    verified: bool = Field(False, description="measured on real hardware of this class")
    runnable: bool = True
    notes: str = ""
    # server: openai
    base_url: str | None = None
    api_key_env: str | None = Field(None, description="environment variable holding the key")
    # server: policy
    script: str | None = Field(None, description="policy script YAML (server: policy)")
    startup_timeout_s: float = Field(600, gt=0)
    request_timeout_s: float | None = Field(None, gt=0, le=86400,
                                            description="seconds one model request may take (run default 120)")
    episode_timeout_s: float | None = Field(None, gt=0, le=7 * 86400,
                                            description="wall-clock seconds one episode may take (run default 1200)")

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: dict[str, str]) -> dict[str, str]:
        for k in v:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                raise ValueError(f"{k!r} is not an environment variable name")
        return v

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        return v if v is None else check_http_url(v)

    def observation_spec(self) -> ObservationSpec:
        return ObservationSpec(mode=self.observation, coordinates=self.coordinates, max_pixels=self.max_pixels,
                               long_side=self.long_side, history_images=self.history_images)

    @property
    def traits(self) -> ServerTraits:
        return SERVER_KINDS[self.server]

    def missing_packages(self) -> list[str]:
        """The `requires_packages` not installed in this Python environment."""
        from importlib import metadata

        out = []
        for dist in self.requires_packages:
            try:
                metadata.distribution(dist)
            except metadata.PackageNotFoundError:
                out.append(dist)
        return out


class Recommendation(Closed):
    build: str
    why: str


class HostProfile(Closed):
    id: str
    description: str
    hardware_class: str
    detect: str = Field("", description="how `agent-host probe` recognises this class")
    embedded: list[str] = Field(default_factory=list,
                                description="built-in builds to list too: embedded-default, tiny-random")
    recommend: dict[Priority, Recommendation] = Field(default_factory=dict)
    notes: str = ""
    builds: list[Build]

    @field_validator("builds")
    @classmethod
    def _unique_ids(cls, v: list[Build]) -> list[Build]:
        seen: set[str] = set()
        for b in v:
            if b.id in seen:
                raise ValueError(f"build id {b.id!r} appears twice")
            seen.add(b.id)
        return v

    def build(self, build_id: str) -> Build | None:
        return next((b for b in self.builds if b.id == build_id), None)

    def reference(self) -> Build | None:
        return next((b for b in self.builds if b.role == "reference"), None)


# ------------------------------------------------------------------ model names -> paths

def config_dir() -> Path:
    """`$AGENT_HOST_CONFIG`, else `$XDG_CONFIG_HOME/agent-host`, else `~/.config/agent-host`."""
    env = os.environ.get("AGENT_HOST_CONFIG")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".config") / "agent-host"


def models_file() -> Path:
    return config_dir() / "models.yaml"


def model_env_var(name: str) -> str:
    """`spark-x2.5-1.7b` -> `AGENT_HOST_MODEL_SPARK_X2_5_1_7B`."""
    return "AGENT_HOST_MODEL_" + re.sub(r"[^A-Z0-9]", "_", name.upper())


def model_map() -> dict[str, str]:
    """The user's `models.yaml` (name -> path); {} when there is none."""
    from agent_host.config.loading import load_yaml, line_of

    path = models_file()
    if not path.is_file():
        return {}
    data, node = load_yaml(path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: (top level): expected a mapping of model name to local path")
    for k, v in data.items():
        if not isinstance(v, str) or not v.strip():
            raise ConfigError(f"{path}:{line_of(node, (k,))}: {k}: expected a local path (a string)")
    return {str(k): v for k, v in data.items()}


def resolve_model_name(name: str) -> tuple[str, str] | None:
    """(path, where it came from) for a mapped model name, or None when `name` is not mapped.

    The path is returned as written (with ~ expanded); whether it exists is for the caller
    to say.
    """
    var = model_env_var(name)
    if os.environ.get(var):
        return str(Path(os.environ[var]).expanduser()), f"${var}"
    mapped = model_map().get(name)
    if mapped:
        return str(Path(mapped).expanduser()), str(models_file())
    return None


def model_location(build: Build) -> tuple[str | None, str]:
    """Where a build's model would come from: (path or None, a short explanation)."""
    m = build.model
    if not m:
        return None, "no model"
    if not build.traits.managed:
        return None, f"remote model {m!r}"
    mapped = resolve_model_name(m)
    if mapped:
        path, source = mapped
        state = "" if Path(path).exists() else " (missing)"
        return path, f"{path}{state} via {source}"
    if m.startswith(("/", "./", "../", "~")):
        p = Path(m).expanduser()
        return str(p), str(p) + ("" if p.exists() else " (missing)")
    return None, f"unmapped: set {model_env_var(m)} or add `{m}: /path` to {models_file()}"
