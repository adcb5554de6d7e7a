"""Start or resume a run: the one function the CLI calls."""

from __future__ import annotations

import datetime as dt
import secrets
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from agent_host.config.manifest import MANIFEST, RunManifest, check_resumable
from agent_host.errors import UserError, check_dir_usable
from agent_host.runs.execute import BuildProgress, ProgressHook, RunOptions, execute
from agent_host.runs.lock import RunLock
from agent_host.runs.manifest import build_manifest
from agent_host.runs.phone_lock import PhoneLocks
from agent_host.runs.plan import plan
from agent_host.runs.requirements import read_phones_facts, schedule
from agent_host.runs.store import RunStore

if TYPE_CHECKING:
    from agent_host.config.builds import Build
    from agent_host.config.phones import PhoneProfile
    from agent_host.config.tasks import TaskInstance
    from agent_host.runs.execute import Served
    from agent_host.runs.plan import PlannedEpisode
    from agent_host.runs.requirements import Schedule

DEFAULT_RUNS_DIR = Path("reports/runs")


@dataclass
class RunResult:
    run_dir: Path
    progress: dict[str, BuildProgress]
    planned: int
    skipped: list[str] = field(default_factory=list)   # what the plan left out for lack of a requirement
    stopped: bool = False      # a stop signal ended it early: what ran is recorded, resume for the rest


def new_run_id() -> str:
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


MAX_REPEATS = 10_000
MAX_PHONES = 64
MAX_EPISODES = 200_000     # a plan this size already takes weeks; more is a typo
MAX_ATTEMPTS = 20


# Any: each phone's identity facts for the manifest, JSON
def _fingerprints(serials: Sequence[str]) -> list[dict[str, Any]]:
    """Each phone's identity for the manifest; the same device under two serials is refused
    (two workers would drive one phone, and one episode's actions land in another's)."""
    from agent_host.phone.device import Phone
    out: list[dict[str, Any]] = []   # Phone.fingerprint's: getprop values, and the screen
    seen: dict[str, str] = {}
    for s in serials:
        try:
            phone = Phone.connect(s)
            fp = phone.fingerprint()
            ident = phone.shell("getprop ro.serialno").text.strip()
        except Exception as exc:
            raise UserError(f"phone {s}: cannot connect ({exc})") from None
        fp["serialno"] = ident
        # ro.serialno tells devices apart; the build fingerprint and screen only tell models apart
        key = ident or ""
        if key and key in seen:
            raise UserError(f"--phones: {seen[key]} and {s} are the same device (ro.serialno {ident}); "
                            f"give each phone once")
        if key:
            seen[key] = s
        out.append(fp)
    return out


def check_bounds(*, repeats: int, phones: Sequence[str], max_attempts: int) -> None:
    if not 1 <= repeats <= MAX_REPEATS:
        raise UserError(f"--repeats must be between 1 and {MAX_REPEATS} (got {repeats})")
    if len(phones) > MAX_PHONES:
        raise UserError(f"--phones: at most {MAX_PHONES} phones (got {len(phones)})")
    if not 1 <= max_attempts <= MAX_ATTEMPTS:
        raise UserError(f"--max-attempts must be between 1 and {MAX_ATTEMPTS} (got {max_attempts})")


def check_before_run(builds: Sequence[Build], tasks: Sequence[TaskInstance], profile: PhoneProfile) -> None:
    """Everything that can fail before a run directory exists fails here: policy scripts,
    the phone profile's app aliases for these tasks."""
    for b in builds:
        if b.traits.scripted:
            if not b.script:
                raise UserError(f"build {b.id}: `script` is required for server policy")
            from agent_host.policy.suite import load_policy
            try:
                load_policy(Path(b.script).expanduser())
            except UserError as exc:  # names file:line: field; say which build it is for
                raise UserError(f"build {b.id}: script {exc}") from None
    from agent_host.config.tasks import app_names
    known = set(profile.apps)
    for t in tasks:
        missing = sorted({n for n in app_names(t) if "." not in n} - known)
        if missing:
            raise UserError(f"{t.source}: task {t.id}: phone profile {profile.id!r} has no app alias "
                            f"{', '.join(missing)} (add it to the profile's apps)")


def start_run(*, builds: Sequence[Build], tasks: Sequence[TaskInstance], repeats: int, seed: int,
              phones: Sequence[str], profile: PhoneProfile, out: Path | None = None,
              max_attempts: int = 3, startup_timeout: float | None = None,
              hook: ProgressHook | None = None, extra_manifest: dict[str, object] | None = None,
              limits: Limits | None = None, wait_for_phone: float | None = None,
              stop: threading.Event | None = None, driver: Driver | None = None,
              served: Served | None = None,
              vary: Sequence[str] = ("none",)) -> RunResult:
    check_bounds(repeats=repeats, phones=phones, max_attempts=max_attempts)
    if not phones:
        raise UserError("no phones given (--phones SERIAL,...); `agent-host devices` lists them")
    if not tasks:
        raise UserError("no tasks selected")
    for what, ids in (("--builds", [b.id for b in builds]), ("--phones", list(phones))):
        dup = next((i for n, i in enumerate(ids) if i in ids[:n]), None)
        if dup is not None:
            raise UserError(f"{what}: {dup!r} is given twice")
    if len(builds) * len(tasks) * repeats * len(vary) > MAX_EPISODES:
        raise UserError(f"{len(builds)} build(s) x {len(tasks)} task instance(s) x {repeats} repeat(s) "
                        f"x {len(vary)} variation condition(s) is more than {MAX_EPISODES} episodes")
    check_before_run(builds, tasks, profile)
    run_id = out.name if out else new_run_id()
    run_dir = out or DEFAULT_RUNS_DIR / run_id
    check_dir_usable(run_dir, "--out")
    store = RunStore(run_dir)
    if (run_dir / MANIFEST).exists():
        raise UserError(f"{run_dir} already holds a run; use --resume {run_dir}")
    try:
        planned = plan([b.id for b in builds], tasks, repeats, seed, vary)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    # The phones first: a run refused because another process drives one writes nothing.
    with PhoneLocks(phones, wait=wait_for_phone):
        sched = _scheduled(planned, phones, profile, builds)
        planned = sched.planned
        manifest = build_manifest(run_id=run_id, builds=builds, tasks=tasks, repeats=repeats, seed=seed,
                                  phones=_fingerprints(phones), command=sys.argv,
                                  extra={"phone_profile": profile.id, "max_attempts": max_attempts,
                                         "episodes_planned": len(planned), "vary": list(vary), **(limits or {}),
                                         **sched.manifest(), **(extra_manifest or {})})
        existed = run_dir.exists()
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"--out {run_dir}: cannot create it ({exc.strerror or exc})") from None
        with RunLock(run_dir), store.discarded_if_nothing_ran(existed):
            try:
                store.create(manifest)
            except FileExistsError as exc:
                raise UserError(str(exc)) from None
            except OSError as exc:  # a full or read-only disk before the first episode
                raise UserError(f"{run_dir}: cannot write the run directory ({exc.strerror or exc})") from None
            opts = RunOptions(profile=profile, max_attempts=max_attempts, startup_timeout=startup_timeout,
                              run_id=run_id, stop=stop, serves=sched.serves, served=served,
                              **_limits(limits))
            # a sequential run (runs/sequential.py) plays its own rounds
            return _play(driver, builds, tasks, planned, sched, store, phones, opts, hook)


def _play(driver: Driver | None, builds: Sequence[Build], tasks: Sequence[TaskInstance],
          planned: list[PlannedEpisode], sched: Schedule, store: RunStore, phones: Sequence[str],
          opts: RunOptions, hook: ProgressHook | None) -> RunResult:
    """What start and resume share once the run directory is theirs: the episodes played,
    by the driver if there is one, else as planned."""
    if driver is not None:
        progress, n_planned = driver(builds, sched.tasks(tasks), store, phones, opts, hook)
    else:
        progress, n_planned = execute(builds, planned, store, phones, opts, hook), len(planned)
    return RunResult(store.dir, progress, n_planned, sched.lines(),
                     stopped=bool(opts.stop is not None and opts.stop.is_set()))


def _scheduled(planned: list[PlannedEpisode], phones: Sequence[str], profile: PhoneProfile,
               builds: Sequence[Build] = ()) -> Schedule:
    """The plan cut to what these phones can serve (runs/requirements.py): what the tasks
    require, and the apps they open, through the phone profile's packages; screenshots that
    show the screen, for the episodes of builds that see it."""
    from agent_host.config.tasks import needed_apps
    apps = dict(profile.apps) if profile is not None else None
    seeing = frozenset(b.id for b in builds if b.observation_spec().images)
    sched = schedule(planned, read_phones_facts(phones, apps=needed_apps([p.task for p in planned], apps),
                                                screenshots=bool(seeing)),
                     apps=apps, seeing=seeing)
    if planned and not sched.planned:
        raise UserError("no phone given can serve any selected task: " + "; ".join(sched.lines()[:5])
                        + " (agent-host phone check SERIAL says what each has)")
    return sched


# plays a run in its own way: (builds, tasks, store, phones, opts, hook) -> (progress, episodes planned)
Driver = Callable[..., tuple[dict[str, BuildProgress], int]]
# --request-timeout, --episode-timeout, --phone-wait: seconds, None where not given
Limits = dict[str, float | None]


def _limits(limits: Limits | None) -> dict[str, Any]:   # Any: RunOptions' keywords, by name
    keys = ("request_timeout", "episode_timeout", "phone_wait")
    return {k: v for k, v in (limits or {}).items() if k in keys and v is not None}


def with_env(build: Build, host_profile: str | None, where: Path) -> Build:
    """A build read back from a manifest has its `env:` names only (config/secrets.py: a
    token never goes into a run's files); the values come from the build as it is configured
    now (in the run's --host-profile, if it named one), which must name the same variables."""
    from agent_host.config.hosts import find_build
    from agent_host.config.secrets import is_redacted

    if not is_redacted(build.env):
        return build
    try:
        current = find_build(build.id, host_profile if isinstance(host_profile, str) else None,
                             check_machine=False)
    except UserError as exc:
        raise UserError(f"{where}: build {build.id}: the values of its env: ({', '.join(sorted(build.env))}) are not "
                        f"kept in a run, and no build of that id is configured here to take them from ({exc})") from None
    if set(current.env) != set(build.env):
        raise UserError(f"{where}: build {build.id}: its env: names changed since the run started "
                        f"({', '.join(sorted(build.env))} then, {', '.join(sorted(current.env)) or 'none'} now)")
    return build.model_copy(update={"env": dict(current.env)})


def resume_run(run_dir: Path, *, phones: Sequence[str] | None = None, max_attempts: int | None = None,
               startup_timeout: float | None = None, hook: ProgressHook | None = None,
               limits: Limits | None = None, wait_for_phone: float | None = None,
               stop: threading.Event | None = None, driver: Callable[[RunManifest], Driver | None] | None = None) -> RunResult:
    from agent_host.config.builds import Build
    from agent_host.config.phones import load_phone_profile
    from agent_host.config.tasks import load_tasks

    from pydantic import ValidationError

    store = RunStore(run_dir)
    if not store.dir.is_dir():
        raise UserError(f"{run_dir}: no such run directory")
    # Everything is checked read-only first; only then is the lock taken and the log cut.
    try:
        manifest = store.read_manifest()   # the model's types: a ManifestError names the field
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    store.records()  # the log must read (LogError names path:line) before anything is written
    where = store.dir / MANIFEST
    needs = check_resumable(manifest, where)
    try:
        builds = [with_env(Build.model_validate(b), manifest.host_profile, where) for b in manifest.builds]
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(x) for x in first.get("loc", ()))
        raise UserError(f"{where}: builds: {field}: {first.get('msg')}") from None
    variants = sorted({t.variant for t in manifest.tasks})
    sources = [t.source for t in manifest.tasks if t.source]
    keys = [t.key for t in manifest.tasks]
    serials = list(phones) if phones else needs.serials
    by_key = {t.key: t for t in load_tasks(sources, variants=tuple(variants))}
    missing = [k for k in keys if k not in by_key]
    if missing:
        raise UserError(f"{where}: tasks no longer found: {', '.join(missing)}")
    tasks = [by_key[k] for k in keys]
    changed = [str(t.source) for t in tasks
               if manifest.task_files.get(str(t.source)) not in (None, t.sha256)]
    if changed:
        raise UserError(f"task files changed since the run started: {', '.join(sorted(set(changed)))}")
    profile = load_phone_profile(manifest.phone_profile)
    attempts = max_attempts or manifest.max_attempts
    check_bounds(repeats=needs.repeats, phones=serials, max_attempts=attempts)
    check_before_run(builds, tasks, profile)
    planned = plan([b.id for b in builds], tasks, needs.repeats, needs.seed, manifest.vary)
    with PhoneLocks(serials, wait=wait_for_phone):
        if phones:
            _fingerprints(serials)
        sched = _scheduled(planned, serials, profile, builds)
        planned = sched.planned
        with RunLock(store.dir):
            store.records()  # again, now that no other process can append
            try:
                store.open_existing()
                store.update_manifest(resumed_at=[*manifest.resumed_at,
                                                  dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")])
            except OSError as exc:  # a disk still full, or read-only
                raise UserError(f"{run_dir}: cannot write the run directory ({exc.strerror or exc}); "
                                f"nothing was run") from None
            saved = {"request_timeout": manifest.request_timeout, "episode_timeout": manifest.episode_timeout,
                     "phone_wait": manifest.phone_wait}
            opts = RunOptions(profile=profile, max_attempts=attempts, startup_timeout=startup_timeout,
                              run_id=manifest.run_id or run_dir.name, stop=stop, serves=sched.serves,
                              **_limits({**saved, **{k: v for k, v in (limits or {}).items() if v is not None}}))
            chosen = driver(manifest) if driver is not None else None   # a sequential run continues its rounds
            return _play(chosen, builds, tasks, planned, sched, store, serials, opts, hook)
