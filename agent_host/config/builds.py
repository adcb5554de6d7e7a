"""Builds and host profiles: one way to serve a model, and the machines that run them.

A host profile is a YAML file in device_profiles/hosts/ listing its builds. The serving
layer turns a Build into a running OpenAI-compatible endpoint.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Sampling(Strict):
    temperature: float = Field(0.0, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int = Field(256, ge=1, le=32768)


ServerKind = Literal["vllm", "llama.cpp", "policy", "openai"]


class Build(Strict):
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
    group_size: int | None = None
    kernel: str | None = None
    verified: bool = Field(False, description="measured on real hardware of this class")
    runnable: bool = True
    notes: str = ""
    # server: openai
    base_url: str | None = None
    api_key_env: str | None = Field(None, description="environment variable holding the key")
    # server: policy
    script: str | None = Field(None, description="policy script YAML (server: policy)")
    startup_timeout_s: float = Field(600, gt=0)


class HostProfile(Strict):
    id: str
    description: str
    hardware_class: str
    builds: list[Build]
