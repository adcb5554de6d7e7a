"""What a build serves, for the run manifest: its resolved model path, a content hash of the
checkpoint (config + weights), and the quantization facts file when agent-host made it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from agent_host.config.builds import Build
from agent_host.errors import UserError

if TYPE_CHECKING:
    from agent_host.serving.quantize import QuantFacts

HASHED = ("config.json", "*.safetensors", "*.gguf")


def content_hash(path: Path) -> str:
    """sha256 over config.json and the weight files (names and bytes, in name order)."""
    files = [path] if path.is_file() else sorted({f for pat in HASHED for f in path.glob(pat)})
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0")
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


class CheckpointFacts(TypedDict, total=False):
    path: str
    sha256: str
    quantization: QuantFacts | None   # None: not made by agent-host's quantizer
    note: str                         # why there is no hash


def checkpoint_facts(build: Build) -> CheckpointFacts:
    """{path, sha256, quantization} for a build agent-host serves from local files; {note}
    when there is nothing local (remote or scripted builds) or it is not made yet."""
    from agent_host.serving import models
    from agent_host.serving.kinds import kind
    from agent_host.serving.spec import resolve_model
    from agent_host.serving.quantize import quantization_facts

    if not kind(build).LOCAL_MODEL or not build.model:
        return {"note": f"server {build.server}: no local checkpoint"}
    if build.model in models.KNOWN:
        path = models.model_path(build.model)
        if not (path / models.MARKER).is_file():
            return {"path": str(path), "note": "not made yet (agent-host makes it when the server starts)"}
    else:
        try:
            path = Path(resolve_model(build))
        except UserError as exc:
            return {"note": str(exc)}
        if not path.exists():
            return {"path": str(path), "note": "a hub id, not a local path"}
    return {"path": str(path), "sha256": content_hash(path), "quantization": quantization_facts(path)}
