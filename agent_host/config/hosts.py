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
from typing import NoReturn

from pydantic import Field

from agent_host.config import machine
from agent_host.config.builds import Build, HostProfile, config_dir
from agent_host.config.strict import Closed
from agent_host.config.loading import Loc, format_loc, line_of, load_model, load_yaml
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


class EmbeddedBuilds(Closed):
    builds: list[Build] = Field(min_length=1)


_embedded: dict[str, Build] = {}


def embedded_builds() -> dict[str, Build]:
    """The builds agent-host defines itself (config/embedded_builds.yaml), by id: their models
    are made by agent-host (serving.models), so they need no download."""
    if not _embedded:
        _embedded.update({b.id: b for b in load_model(EMBEDDED_FILE, EmbeddedBuilds).builds})
    return _embedded


def embedded_build(build_id: str) -> Build | None:
    """`embedded-default`, `embedded-w4a16`, `tiny-random`, ...: a copy with this CPU's dtype
    (`with_cpu_dtype`), or None."""
    b = embedded_builds().get(build_id)
    return with_cpu_dtype(b, _facts()) if b else None


_facts_here: list[machine.HostFacts] = []


def _facts() -> machine.HostFacts:
    if not _facts_here:
        _facts_here.append(machine.read_host_facts())
    return _facts_here[0]


_DTYPE_WORD = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}


def with_cpu_dtype(build: Build, facts: machine.HostFacts) -> Build:
    """A copy of `build`; a vLLM build whose args pin no --dtype gets the dtype the CPU runs
    fast (machine.cpu_dtype): bf16 with avx512_bf16 or AMX, else fp32, never an emulated bf16
    by default. `activations: auto` becomes that dtype's name (W8A8 keeps int8)."""
    b = build.model_copy(deep=True)
    flag = b.traits.dtype_flag
    if flag is None or flag in b.args:
        return b
    dtype, _ = machine.cpu_dtype(facts)
    b.args += [flag, dtype]
    if b.activations in (None, "auto"):
        b.activations = _DTYPE_WORD[dtype]
    return b


def load_host_profile(name_or_path: str | Path) -> HostProfile:
    """Load a host profile by id (`x86-amx`) or by path, with its embedded builds appended.

    Errors read `file:line: field: message`, like every other YAML file agent-host reads.
    """
    name = str(name_or_path)
    if not name.strip():   # Path("") is ".", a directory, and a caller's `if name` would mean "all"
        raise ConfigError("--host-profile is empty: give a host profile id (e.g. x86-amx) or a YAML file")
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


_cache: dict[tuple[str, int, int], HostProfile] = {}


def _load_checked(path: Path, by_name: bool) -> HostProfile:
    profile = load_model(path, HostProfile)

    def fail(loc: Loc, msg: str) -> NoReturn:
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
        if b.measured is not None and rel is not None and not b.measured.slowdown:
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
    return machine.classify(machine.read_host_facts()).hardware_class


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
    matches = [(p, b) for p in profiles if (b := p.build(build_id)) is not None]
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


def hardware_problems(build: Build, cpu_flags: frozenset[str] | set[str] | None = None, *,
                      facts: machine.HostFacts | None = None) -> list[str]:
    """Why `build` cannot run as specified on this machine (or on the machine `facts` describe;
    `cpu_flags` alone checks flags only): empty when it can, or when the machine cannot be read.

    Two refusals, both before any server starts: CPU flags the kernel needs (W4A8 needs AMX:
    without it vLLM silently takes another kernel), and ops the kernel calls that the kernel
    library vLLM loads for this CPU tier does not register (AVX2's has no cpu_gemm_wna16: the
    4-bit server would die on its first request)."""
    here = cpu_flags is None and facts is None
    if facts is not None:
        cpu_flags = facts.cpu_flags
    elif here:
        cpu_flags = machine.read_cpu_flags()
        if cpu_flags is None:
            return []
    assert cpu_flags is not None, "given, or read from facts or this machine"
    out: list[str] = []
    missing = [f for f in build.requires_cpu_flags if f not in cpu_flags]
    amx_denied = (facts.amx_permitted is False) if facts is not None else \
        (here and machine.read_amx_permitted() is False)
    if missing:
        out.append(f"needs CPU flags {', '.join(missing)} for kernel {build.kernel or '?'}, which this "
                   "machine lacks (without them the server would silently take another kernel, a "
                   "different build); run it on a machine with them")
    elif "amx_tile" in build.requires_cpu_flags and amx_denied:
        out.append(f"kernel {build.kernel or '?'} needs AMX, whose flags this CPU shows but whose tile "
                   "state this kernel (or hypervisor) does not grant (arch_prctl XTILEDATA)")
    if build.requires_vllm_ops and build.traits.python_module == "vllm" and (here or facts is not None):
        import dataclasses

        out += vllm_op_problems(build, facts or dataclasses.replace(_facts(), cpu_flags=frozenset(cpu_flags)))
    return out


def vllm_op_problems(build: Build, facts: machine.HostFacts) -> list[str]:
    """The build's vLLM ops that the installed vLLM's library for this CPU tier lacks."""
    lib = machine.vllm_cpu_library(facts)
    if lib is None or not machine.classify(facts).hardware_class or facts.gpus:
        return []
    ops = machine.vllm_library_ops(lib)
    if ops is None:
        return []
    lacking = [o for o in build.requires_vllm_ops if o not in ops]
    if not lacking:
        return []
    return [f"kernel {build.kernel or '?'} calls {', '.join(lacking)}, which vLLM's {lib} library "
            f"(the one it loads on {machine.tier_description(lib)}) does not register: the server "
            "would die on its first request"]
