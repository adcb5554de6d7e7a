"""Start or resume a run: the one function the CLI calls."""

from __future__ import annotations

import datetime as dt
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from agent_host.errors import UserError, check_dir_usable
from agent_host.runs.execute import BuildProgress, ProgressHook, RunOptions, execute
from agent_host.runs.manifest import build_manifest
from agent_host.runs.plan import plan
from agent_host.runs.store import RunStore

DEFAULT_RUNS_DIR = Path("reports/runs")


@dataclass
class RunResult:
    run_dir: Path
    progress: dict[str, BuildProgress]
    planned: int


def new_run_id() -> str:
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def _fingerprints(serials: Sequence[str]) -> list[dict]:
    from agent_host.phone.device import Phone
    out = []
    for s in serials:
        try:
            out.append(Phone.connect(s).fingerprint())
        except Exception as exc:
            raise UserError(f"phone {s}: cannot connect ({exc})") from None
    return out


def start_run(*, builds: Sequence[Any], tasks: Sequence[Any], repeats: int, seed: int,
              phones: Sequence[str], profile: Any, out: Path | None = None,
              max_attempts: int = 3, startup_timeout: float | None = None,
              hook: ProgressHook | None = None, extra_manifest: dict | None = None) -> RunResult:
    if repeats < 1:
        raise UserError("--repeats must be at least 1")
    if not phones:
        raise UserError("no phones given (--phones SERIAL,...); `agent-host devices` lists them")
    if not tasks:
        raise UserError("no tasks selected")
    for what, ids in (("--builds", [b.id for b in builds]), ("--phones", list(phones))):
        dup = next((i for n, i in enumerate(ids) if i in ids[:n]), None)
        if dup is not None:
            raise UserError(f"{what}: {dup!r} is given twice")
    run_id = out.name if out else new_run_id()
    run_dir = out or DEFAULT_RUNS_DIR / run_id
    check_dir_usable(run_dir, "--out")
    store = RunStore(run_dir)
    try:
        planned = plan([b.id for b in builds], tasks, repeats, seed)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    manifest = build_manifest(run_id=run_id, builds=builds, tasks=tasks, repeats=repeats, seed=seed,
                              phones=_fingerprints(phones), command=sys.argv,
                              extra={"phone_profile": profile.id, "max_attempts": max_attempts,
                                     "episodes_planned": len(planned), **(extra_manifest or {})})
    try:
        store.create(manifest)
    except FileExistsError as exc:
        raise UserError(str(exc)) from None
    opts = RunOptions(profile=profile, max_attempts=max_attempts, startup_timeout=startup_timeout, run_id=run_id)
    progress = execute(builds, planned, store, phones, opts, hook)
    return RunResult(run_dir, progress, len(planned))


def resume_run(run_dir: Path, *, phones: Sequence[str] | None = None, max_attempts: int | None = None,
               startup_timeout: float | None = None, hook: ProgressHook | None = None) -> RunResult:
    from agent_host.config.builds import Build
    from agent_host.config.phones import load_phone_profile
    from agent_host.config.tasks import load_tasks

    from pydantic import ValidationError

    store = RunStore(run_dir)
    try:
        manifest = store.read_manifest()
    except (FileNotFoundError, ValueError) as exc:
        raise UserError(str(exc)) from None
    where = store.dir / "manifest.json"
    try:
        builds = [Build.model_validate(b) for b in manifest["builds"]]
        variants = sorted({t["variant"] for t in manifest["tasks"]})
        sources = [t["source"] for t in manifest["tasks"] if t["source"]]
        keys = [t["key"] for t in manifest["tasks"]]
        int(manifest["repeats"]), int(manifest["seed"]), dict(manifest["task_files"])
        serials = list(phones) if phones else [p.get("serial") for p in manifest["phones"]]
    except KeyError as exc:
        raise UserError(f"{where}: missing field {exc}; not a run manifest") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(x) for x in first.get("loc", ()))
        raise UserError(f"{where}: builds: {field}: {first.get('msg')}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"{where}: not a valid run manifest ({exc})") from None
    by_key = {t.key: t for t in load_tasks(sources, variants=tuple(variants))}
    missing = [k for k in keys if k not in by_key]
    if missing:
        raise UserError(f"{run_dir}/manifest.json: tasks no longer found: {', '.join(missing)}")
    tasks = [by_key[k] for k in keys]
    changed = [str(t.source) for t in tasks if manifest["task_files"].get(str(t.source)) not in (None, t.sha256)]
    if changed:
        raise UserError(f"task files changed since the run started: {', '.join(sorted(set(changed)))}")
    profile = load_phone_profile(manifest.get("phone_profile", "virtual"))
    planned = plan([b.id for b in builds], tasks, manifest["repeats"], manifest["seed"])
    attempts = max_attempts or manifest.get("max_attempts", 3)
    store.open_existing()
    store.update_manifest(resumed_at=[*manifest.get("resumed_at", []),
                                      dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")])
    opts = RunOptions(profile=profile, max_attempts=attempts, startup_timeout=startup_timeout,
                      run_id=manifest.get("run_id", run_dir.name))
    progress = execute(builds, planned, store, serials, opts, hook)
    return RunResult(run_dir, progress, len(planned))
