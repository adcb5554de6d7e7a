"""Host profiles (device_profiles/hosts/*.yaml) and finding a build by id.

Profiles come from the repository's `device_profiles/hosts/` (the current directory's copy
first, as for phone profiles) and from the user's `<config dir>/hosts/` (see
`builds.config_dir`), where a file with the same name replaces the shipped one.

Build ids are unique within a profile; the same id (`bf16`) may appear in several profiles.
`find_build` accepts `ID`, `PROFILE/ID`, or `ID` with `host_profile=PROFILE`; an id that
several profiles define resolves to this machine's profile (as `agent-host probe` names it).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from agent_host.config import machine
from agent_host.config.builds import Build, HostProfile, Strict, config_dir
from agent_host.config.loading import format_loc, line_of, load_model, load_yaml
from agent_host.errors import ConfigError, UserError

REPO_ROOT = Path(__file__).resolve().parents[2]
HOSTS_DIR = Path("device_profiles") / "hosts"
EMBEDDED_FILE = Path(__file__).with_name("embedded_builds.yaml")


def hosts_dirs() -> list[Path]:
    """Where profiles are read from, later ones overriding earlier ones by file name."""
    local = Path.cwd() / HOSTS_DIR
    shipped = local if local.is_dir() else REPO_ROOT / HOSTS_DIR
    return [shipped, config_dir() / "hosts"]


def host_profile_paths() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for d in hosts_dirs():
        if d.is_dir():
            for p in sorted(d.glob("*.yaml")):
                out[p.stem] = p
    return out


class EmbeddedBuilds(Strict):
    builds: list[Build] = Field(min_length=1)


_embedded: dict[str, Build] = {}


def embedded_builds() -> dict[str, Build]:
    """The builds agent-host defines itself (config/embedded_builds.yaml), by id: their models
    are made by agent-host (serving.models), so they need no download."""
    if not _embedded:
        _embedded.update({b.id: b for b in load_model(EMBEDDED_FILE, EmbeddedBuilds).builds})
    return _embedded


def embedded_build(build_id: str) -> Build | None:
    """`embedded-default`, `embedded-w4a16`, `tiny-random`, ...: a copy, or None."""
    b = embedded_builds().get(build_id)
    return b.model_copy(deep=True) if b else None


def load_host_profile(name_or_path: str | Path) -> HostProfile:
    """Load a host profile by id (`x86-amx`) or by path, with its embedded builds appended.

    Errors read `file:line: field: message`, like every other YAML file agent-host reads.
    """
    name = str(name_or_path)
    path = Path(name).expanduser()
    by_name = not (path.suffix in (".yaml", ".yml") or path.exists())
    if by_name:
        paths = host_profile_paths()
        if name not in paths:
            raise ConfigError(f"unknown host profile {name!r} (known: {', '.join(sorted(paths)) or 'none'})")
        path = paths[name]
    try:
        st = path.stat()
        key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    if key is not None and key in _cache:
        return _cache[key].model_copy(deep=True)
    profile = _load_checked(path, by_name)
    if key is not None:
        _cache[key] = profile.model_copy(deep=True)
    return profile


_cache: dict[tuple, HostProfile] = {}


def _load_checked(path: Path, by_name: bool) -> HostProfile:
    profile = load_model(path, HostProfile)

    def fail(loc: tuple, msg: str):
        _, node = load_yaml(path)  # parsed again only to name the line
        line = line_of(node, loc)
        where = f"{path}:{line}" if line else str(path)
        raise ConfigError(f"{where}: {format_loc(loc)}: {msg}")

    if profile.id != path.stem and (by_name or path.parent.resolve() in {d.resolve() for d in hosts_dirs()}):
        fail(("id",), f"{profile.id!r} must match the file name ({path.stem})")
    ids = [b.id for b in profile.builds]
    for i, eid in enumerate(profile.embedded):
        if eid in ids:
            fail(("embedded", i), f"{eid!r} is also defined under builds")
        b = embedded_build(eid)
        if b is None:
            fail(("embedded", i), f"unknown embedded build {eid!r} "
                                  f"(known: {', '.join(sorted(embedded_builds()))})")
        profile.builds.append(b)
    ids = [b.id for b in profile.builds]
    for prio, rec in profile.recommend.items():
        if rec.build not in ids:
            fail(("recommend", prio, "build"), f"no build {rec.build!r} in this profile (builds: {', '.join(ids)})")
    for i, b in enumerate(profile.builds):
        rel = b.measured.relative_to if b.measured else None
        if rel is not None and rel not in ids:
            fail(("builds", i, "measured", "relative_to"), f"no build {rel!r} in this profile")
        if rel is not None and not b.measured.slowdown:
            fail(("builds", i, "measured", "slowdown"), "required with relative_to")
    return profile


def all_host_profiles() -> list[HostProfile]:
    return [load_host_profile(p) for p in host_profile_paths().values()]


def _known_ids(profiles: list[HostProfile]) -> list[str]:
    ids = set(embedded_builds())
    for prof in profiles:
        ids.update(b.id for b in prof.builds)
    return sorted(ids)


def local_host_profile_id() -> str | None:
    """This machine's host profile as `agent-host probe` names it (None if it has none)."""
    return machine.classify(machine.read_facts()).hardware_class


def find_build(build_id: str, host_profile: str | Path | None = None, *,
               check_machine: bool = True) -> Build:
    """The build `build_id` (`ID` or `PROFILE/ID`), from `host_profile` if given.

    With `check_machine`, a build whose kernel needs CPU flags this machine lacks (W4A8 needs
    AMX: without it vLLM silently takes another kernel) raises UserError instead of being
    returned, so no build is ever silently substituted.
    """
    build = _lookup(build_id, host_profile)
    if check_machine:
        problems = hardware_problems(build)
        if problems:
            raise UserError(f"build {build.id}: {'; '.join(problems)}")
    return build


def _lookup(build_id: str, host_profile: str | Path | None) -> Build:
    if "/" in build_id and host_profile is None and not build_id.endswith((".yaml", ".yml")):
        host_profile, build_id = build_id.split("/", 1)
    if host_profile is not None:
        prof = load_host_profile(host_profile)
        b = prof.build(build_id)
        if b is not None:
            return b
        emb = embedded_build(build_id)
        if emb is not None:
            return emb
        known = sorted({x.id for x in prof.builds} | set(embedded_builds()))
        raise UserError(f"unknown build {build_id!r} in host profile {prof.id} (known: {', '.join(known)})")
    emb = embedded_build(build_id)
    if emb is not None:
        return emb
    profiles = all_host_profiles()
    matches = [(p, p.build(build_id)) for p in profiles if p.build(build_id) is not None]
    if len(matches) == 1:
        return matches[0][1]
    if not matches:
        raise UserError(f"unknown build {build_id!r} (known: {', '.join(_known_ids(profiles))}; "
                        "`agent-host builds` lists them)")
    local = local_host_profile_id()
    for prof, b in matches:
        if prof.id == local:
            return b
    where = ", ".join(f"{p.id}/{build_id}" for p, _ in matches)
    raise UserError(f"build {build_id!r} is defined in several host profiles and this machine's "
                    f"({local or 'none'}) is not one of them: write one of {where}, "
                    "or give --host-profile")


def hardware_problems(build: Build, cpu_flags: frozenset[str] | set[str] | None = None) -> list[str]:
    """Why `build` cannot run as specified on this machine (empty when it can, or when the
    CPU flags cannot be read)."""
    if not build.requires_cpu_flags:
        return []
    here = cpu_flags is None
    if here:
        cpu_flags = machine.read_cpu_flags()
        if cpu_flags is None:
            return []
    missing = [f for f in build.requires_cpu_flags if f not in cpu_flags]
    if not missing and here and "amx_tile" in build.requires_cpu_flags \
            and machine.read_amx_permitted() is False:
        return [f"kernel {build.kernel or '?'} needs AMX, whose flags this CPU shows but whose tile "
                "state this kernel (or hypervisor) does not grant (arch_prctl XTILEDATA)"]
    if not missing:
        return []
    return [f"needs CPU flags {', '.join(missing)} for kernel {build.kernel or '?'}, which this "
            "machine lacks (without them the server would silently take another kernel, a "
            "different build); run it on a machine with them"]
