"""This machine's facts and its hardware class: what `agent-host probe`, the host profiles and
the run manifest say about the serving machine.

`read_facts()` reads the machine (arch, /proc/cpuinfo flags, cores, memory, nvidia-smi,
Jetson markers); `classify(facts)` is a pure function naming the hardware class. This module
imports no agent-host code, so every layer may use it (config picks this machine's host
profile with it; serving's probe recommends a build from it; runs record it).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

HARDWARE_CLASSES = ("x86-amx", "x86-avx512", "x86-avx2", "arm64", "cuda", "jetson")


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
    # Linux hands a process AMX tile state only on request (arch_prctl XTILEDATA); a kernel or
    # hypervisor that cannot save it leaves the flags in cpuinfo while every tile instruction
    # faults. None: not read (facts from elsewhere, or not x86 Linux).
    amx_permitted: bool | None = None
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


_ARCH_GET_XCOMP_SUPP = 0x1021
_XFEATURE_XTILEDATA = 18


def read_amx_permitted() -> bool | None:
    """Whether this kernel can give a process AMX tile state (ARCH_GET_XCOMP_SUPP has
    XTILEDATA), or None where that cannot be asked (not x86-64 Linux)."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "amd64"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        mask = ctypes.c_uint64(0)
        if libc.syscall(158, _ARCH_GET_XCOMP_SUPP, ctypes.byref(mask)) != 0:  # 158: arch_prctl
            return False
    except (OSError, AttributeError):
        return None
    return bool(mask.value >> _XFEATURE_XTILEDATA & 1)


def read_facts() -> HostFacts:
    """Everything `classify` needs, read from this machine."""
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
        jetson_model=_jetson_model(),
        amx_permitted=read_amx_permitted() if "amx_tile" in flags else None, notes=tuple(notes))


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
        if amx and facts.amx_permitted is not False:
            return ("x86-amx", "x86-64 with AMX (amx_tile, amx_bf16)" + (" and AVX-512" if avx512 else ""),
                    ["CPU flags amx_tile and amx_bf16: the W4A8 kernel int4_scaled_mm_cpu can run"])
        partial = sorted(f & {"amx_tile", "amx_bf16"})
        amx_note = (f"incomplete AMX ({', '.join(partial)} only)" if partial else "no AMX")
        if amx:
            amx_note = "AMX flags but the kernel grants no AMX tile state (arch_prctl)"
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


MANIFEST_FLAGS = ("amx_tile", "amx_bf16", "avx512f", "avx512_bf16", "avx2")


def manifest_facts(facts: HostFacts | None = None) -> dict:
    """What a run records about the serving machine: CPU model, the flags that decide the
    kernels, the probe's class and the threads a server may use."""
    facts = facts or read_facts()
    return {"cpu_model": facts.cpu_model, "arch": facts.arch,
            "cpu_flags": {f: f in facts.cpu_flags for f in MANIFEST_FLAGS},
            "hardware_class": classify(facts).hardware_class, "threads": facts.usable_cores,
            "cores": facts.cores, "memory_gib": facts.memory_gib,
            "gpus": [g.name for g in facts.gpus]}
