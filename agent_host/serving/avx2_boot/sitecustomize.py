"""Put first on a vLLM server's PYTHONPATH by agent-host when AGENT_HOST_HOLD_AVX2=1; Python
imports it in every process of the server (the API server and its engine core, spawned afresh).

vLLM's x86 CPU wheel picks its kernel library (`_C`, `_C_AVX512`, `_C_AVX2`) and several
kernels (AMX int8 GEMM, attention) by torch.cpu's feature checks, which read the CPU itself
(cpuinfo), not ATEN_CPU_CAPABILITY. This makes torch.cpu.get_capabilities, which every
torch.cpu._is_*_supported reads, answer False for AVX-512 and AMX, so a wider CPU loads
`_C_AVX2` and takes the paths an AVX2-only CPU takes. The environment (config/machine.py
hold_avx2_env) holds ATen, MKL and oneDNN to AVX2 code. It replaces amx_boot (Python imports
one sitecustomize): nothing held to AVX2 runs an AMX instruction.
Standard library only: this runs before anything else in the process.
"""

from __future__ import annotations

import importlib.machinery
import sys
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType, ModuleType

Capabilities = Callable[[], Mapping[str, object]]


def _narrowed(get_capabilities: Capabilities) -> Capabilities:
    def get_capabilities_avx2() -> Mapping[str, object]:
        return MappingProxyType({k: (False if k.startswith(("avx512", "amx")) and v is True else v)
                                 for k, v in get_capabilities().items()})
    return get_capabilities_avx2


class _HoldTorchCpu:
    """A meta path finder that patches torch.cpu as it is imported (importing torch here
    would cost every process of the server its import before it asked for it)."""

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name != "torch.cpu":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            setattr(module, "get_capabilities", _narrowed(getattr(module, "get_capabilities")))
        setattr(spec.loader, "exec_module", exec_module)
        return spec


sys.meta_path.insert(0, _HoldTorchCpu())
