"""Put on a vLLM server's PYTHONPATH by agent-host on CPUs with AMX; Python imports it in every
process of the server (the API server and its engine core, which is spawned afresh).

Linux gives a process AMX tile state only after it asks (arch_prctl ARCH_REQ_XCOMP_PERM,
XTILEDATA). oneDNN asks before its own AMX matmuls, but vLLM's CPU kernels (cpu_gemm_wna16's
AMX micro-GEMM, int4_scaled_mm_cpu) do not, so their first `tilezero` dies with SIGILL:
measured here on a 2-core AMX Xeon, the W4A16 server's engine core died on its warm-up request.
Standard library only: this runs before anything else in the process.
"""

import ctypes

try:
    ctypes.CDLL(None, use_errno=True).syscall(158, 0x1023, 18)  # arch_prctl(REQ_XCOMP_PERM, XTILEDATA)
except (OSError, AttributeError):  # not Linux x86-64: nothing to ask for
    pass
