"""`manifest.json`: what a run needs to be reproduced, resumed and reported, as one model.

Written only through `write_manifest` (runs/store.py calls it); read only through
`load_manifest` / `manifest_from` (a resume, the report, replay, the CLI). `runs/manifest.py`
fills it in from the run's builds, tasks and machine.

Schema versions:
  1  no `schema_version` key: every manifest written before this model. Still loads.
  2  the same keys, with `schema_version: 2`; the types below are checked on reading.

Types are strict: JSON `"2"` is not the integer 2 and `"soon"` not a timeout. A resume that
took them used to plan with a string or send every request with a bad timeout (each attempt
an `error`, exit 0); now the manifest is refused in one line naming the field.

Keys this model does not name are kept (`extra="allow"`), not refused and not dropped: a
manifest written by an older or newer agent-host (or a hand-added key) still loads, the
report lists them under "other", and a resume's rewrite of the manifest keeps them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent_host.config.loading import format_loc
from agent_host.config.records import read_regular, write_json_atomic
from agent_host.errors import UserError

SCHEMA_VERSION = 2
MANIFEST = "manifest.json"

Seconds = Annotated[float, Field(gt=0)]


class _Part(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")


class GitRevision(_Part):
    """The agent-host checkout that ran the run."""
    revision: str | None = Field(None, description="`git rev-parse HEAD`; null outside a checkout")
    dirty: bool | None = Field(None, description="tracked files modified; null when git could not say")


class ManifestTask(_Part):
    """One task instance of the run, as planned (config/tasks.py `TaskInstance`)."""
    key: str = Field(description="the instance key a resume finds the task by (task id, `@variant` unless base)")
    id: str = Field(description="the instance id in episode ids")
    task_id: str | None = Field(None, description="the task file's id; the statistical unit")
    variant: str = Field(description="the variant this instance plays (`base`, `verify`, ...)")
    source: str = Field("", description="the task file's path, as the run loaded it")
    infeasible: bool = Field(False, description="the task cannot be done; the right answer is task_infeasible")
    app: str | None = Field(None, description="the app the task opens, for the report's breakdown")
    tags: list[str] = Field(default_factory=list, description="the task's tags (its kinds in the report)")


class BlindReplaySource(_Part):
    """What a blind-replay run replays: whose recorded calls, from which run."""
    source_run: str = Field(description="the run directory whose episodes were recorded")
    build: str = Field(description="the build whose successful episodes' calls are replayed")
    missing: list[str] = Field(default_factory=list,
                               description="instances with no successful episode to replay (not planned)")


class RunManifest(_Part):
    """The run manifest. Everything has a default so that a report can read a run whose
    manifest is partial; a resume also needs the fields in `RESUME_NEEDS`."""

    schema_version: int = Field(1, ge=1, description="the manifest's format; missing means 1 (before this model)")
    run_id: str | None = Field(None, description="the run's id; the run directory's name when missing")
    created_at: str | None = Field(None, description="when the run started (UTC, ISO 8601)")
    command: list[str] = Field(default_factory=list, description="the command line, secrets redacted")
    agent_host_version: str | None = Field(None, description="agent_host.__version__")
    versions: dict[str, str | None] = Field(default_factory=dict,
                                            description="installed versions of the packages that matter; null: absent")
    python: str | None = Field(None, description="the Python version")
    platform: str | None = Field(None, description="platform.platform()")
    git: GitRevision = Field(default_factory=GitRevision, description="the agent-host revision")
    # A build as config/builds.py `Build.model_dump`, env values redacted to their names. Kept
    # as mappings: a report shows an older version's builds whatever fields they had; a resume
    # validates each as a `Build`.
    builds: list[dict[str, Any]] = Field(default_factory=list, description="the builds compared, in order")
    tasks: list[ManifestTask] = Field(default_factory=list, description="the task instances planned")
    task_files: dict[str, str] = Field(default_factory=dict,
                                       description="task file path -> sha256; a resume refuses a changed file")
    repeats: int | None = Field(None, description="repeats per build and task instance")
    seed: int | None = Field(None, description="the run's seed: episode seeds and the play order derive from it")
    vary: list[str] = Field(default_factory=lambda: ["none"],
                            description="the variation conditions played (`run --vary`, config/variation.py); "
                                        "older runs: none")
    sampling: dict[str, dict[str, Any]] = Field(default_factory=dict, description="build id -> its sampling")
    phones: list[dict[str, Any]] = Field(default_factory=list,
                                         description="each phone's identity (serial, fingerprint, screen, serialno)")
    host: dict[str, Any] = Field(default_factory=dict, description="the serving machine's facts (config/machine.py)")
    checkpoints: dict[str, dict[str, Any]] = Field(default_factory=dict,
                                                   description="build id -> what it serves (serving/checkpoint.py)")
    phone_profile: str = Field("virtual", description="the phone profile (config/phones.py)")
    max_attempts: int = Field(3, ge=1, description="attempts per episode before it is left as an error")
    episodes_planned: int | None = Field(None, ge=0, description="the episodes the plan holds (a sequential run: so far)")
    request_timeout: Seconds | None = Field(None, description="--request-timeout, seconds; a resume keeps it")
    episode_timeout: Seconds | None = Field(None, description="--episode-timeout, seconds; a resume keeps it")
    phone_wait: Seconds | None = Field(None, description="--phone-wait, seconds; a resume keeps it")
    phone_requirements: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="serial -> what the phone has of the requirements (runs/requirements.py)")
    skipped: list[dict[str, Any]] = Field(default_factory=list,
                                          description="task instances no phone could serve; in no rate")
    not_scheduled: dict[str, list[str]] = Field(default_factory=dict,
                                                description="serial -> instance keys it lacked the requirements of")
    baseline: str | None = Field(None, description="the build the others are compared with")
    blind_replay: BlindReplaySource | None = Field(
        None, description="a blind-replay baseline's run (runs/blind_replay.py): what it replays")
    reference_build: str | None = Field(None, description="the baseline's key in older manifests")
    host_profile: str | None = Field(None, description="--host-profile; a resume reads build env: values from it")
    # config/taught.py TaughtSplit as written: validated where it is read (report/breakdown.py)
    taught: dict[str, Any] | None = Field(
        None, description="`run --taught SPLIT.json`: the split of a taught model's instances (config/taught.py)")
    sequential: dict[str, Any] | None = Field(
        None, description="--until-decided: the rule's settings and its rounds (report/sequential.py `configure`)")
    order: list[str] | None = Field(None, description="--interleave: episode ids in play order (runs/order.py)")
    order_together: bool | None = Field(None, description="--interleave: the builds' servers up together")
    order_mode: str | None = Field(None, description="why the play order is what it is")
    shared_machine: list[str] = Field(default_factory=list,
                                      description="local builds whose servers were up together; speeds marked")
    resumed_at: list[str] = Field(default_factory=list, description="when each resume started (UTC, ISO 8601)")
    demo: bool = Field(False, description="made by `agent-host demo`")
    servers: dict[str, Any] | None = Field(None, description="demo: which servers were kept up together, and why")
    failures: list[str] = Field(default_factory=list, description="demo: what failed; the report's headline says it first")
    reference_note: str | None = Field(None, description="demo: why the reference is the reference")
    fidelity: dict[str, Any] | None = Field(None, description="demo: the candidates' answers against the reference's")

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, v: int) -> int:
        if v > SCHEMA_VERSION:
            raise ValueError(f"version {v} was written by a newer agent-host (this one reads up to "
                             f"{SCHEMA_VERSION}); upgrade to resume it")
        return v

    def build_ids(self) -> list[str]:
        return [b["id"] for b in self.builds if isinstance(b.get("id"), str)]

    def set_fields(self) -> dict[str, object]:
        """The manifest as written: the fields given, extras included."""
        return self.model_dump(mode="json", exclude_unset=True)


# What a resume cannot do without (a report can).
RESUME_NEEDS = ("builds", "tasks", "task_files", "repeats", "seed", "phones")


class ManifestError(UserError):
    """A manifest that cannot be read or does not fit the model: one line, path and field."""


def read_manifest_json(path: Path) -> object:
    """manifest.json's JSON, the one place it is opened (ManifestError when unreadable;
    FileNotFoundError when absent)."""
    try:
        return json.loads(read_regular(path).decode("utf-8"))   # a FIFO is refused, not waited on
    except FileNotFoundError:
        raise   # not a run directory: the caller says so in its own words
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: not a readable run manifest ({exc})") from None
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read ({exc.strerror or exc})") from None


def manifest_from(data: object, where: Path | str) -> RunManifest:
    """The model from a manifest's JSON; ManifestError naming `where` and the first bad field."""
    if not isinstance(data, dict):
        raise ManifestError(f"{where}: not a run manifest (not a JSON object)")
    try:
        return RunManifest.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ManifestError(f"{where}: {format_loc(tuple(err['loc']))}: {err['msg']}{more}") from None


def load_manifest(path: Path) -> RunManifest:
    return manifest_from(read_manifest_json(path), path)


@dataclass(frozen=True)
class Resumable:
    """What a resume needs of a manifest that the model leaves optional, known to be there."""
    repeats: int
    seed: int
    serials: list[str]


def check_resumable(manifest: RunManifest, where: Path | str) -> Resumable:
    missing = [f for f in RESUME_NEEDS if f not in manifest.model_fields_set or getattr(manifest, f) is None]
    if missing:
        raise ManifestError(f"{where}: missing field {', '.join(missing)}; not a run manifest")
    serials = [p.get("serial") for p in manifest.phones]
    bad = next((i for i, s in enumerate(serials) if not isinstance(s, str) or not s), None)
    if bad is not None:
        raise ManifestError(f"{where}: phones.{bad}.serial: a phone's serial is missing")
    assert manifest.repeats is not None and manifest.seed is not None   # checked just above
    return Resumable(repeats=manifest.repeats, seed=manifest.seed, serials=[str(s) for s in serials])


def manifest_json(manifest: RunManifest) -> dict[str, object]:
    """What `write_manifest` writes: the fields given, at the current schema version (an older
    manifest a resume rewrites becomes version 2: the keys are the same, only now checked)."""
    return {"schema_version": SCHEMA_VERSION, **{k: v for k, v in manifest.set_fields().items()
                                                  if k != "schema_version"}}


def write_manifest(path: Path, manifest: RunManifest) -> None:
    """The one writer of manifest.json (atomically: a reader sees the old file or the new)."""
    write_json_atomic(path, manifest_json(manifest))


def manifest_for_report(data: object, where: Path | str) -> tuple[RunManifest, list[str]]:
    """The model for a report, which reads what it can: a top-level field that does not fit is
    left out with a warning naming it (a resume refuses the same manifest; a report of the
    episodes recorded is still worth having)."""
    if not isinstance(data, dict):
        return RunManifest(), [f"{where}: not a JSON object; provenance unknown"]
    fields, warnings = dict(data), list[str]()
    for _ in range(len(fields) + 1):
        try:
            return RunManifest.model_validate(fields), warnings
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                key = err["loc"][0] if err["loc"] else None
                if key in fields:
                    warnings.append(f"{where}: {format_loc(tuple(err['loc']))}: {err['msg']}; left out")
                    del fields[key]
    return RunManifest(), warnings + [f"{where}: does not fit the run manifest; provenance unknown"]
