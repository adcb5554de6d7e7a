"""Build -> the command line, environment and readiness rules of its server.

`plan` asks the build's server kind (one module each in serving/kinds/) for its LaunchSpec;
what the kinds share is in serving/spec.py (re-exported here for callers). `preflight` runs
the checks that cost nothing before a run starts.
"""

from __future__ import annotations

from agent_host.config.builds import Build
from agent_host.errors import UserError
from agent_host.serving.kinds import kind
from agent_host.serving.spec import LaunchSpec


def missing_packages(build: Build) -> list[str]:
    return build.missing_packages()


def preflight(build: Build) -> None:
    """The checks of `plan` that cost nothing (no model is built, no port taken): a
    UserError now rather than after a run has started."""
    from agent_host.config.hosts import hardware_problems

    if not build.runnable:
        raise UserError(f"build {build.id} is listed but not runnable here: {' '.join(build.notes.split())}")
    if kind(build).MANAGED and (problems := hardware_problems(build)):
        raise UserError(f"build {build.id}: {'; '.join(problems)}")
    if not kind(build).MANAGED:
        plan(build, port=None, api_key="", seed=0)
    elif missing := missing_packages(build):
        raise UserError(f"build {build.id} needs the package(s) {', '.join(missing)}: "
                        f"pip install --no-deps {' '.join(missing)}")
    elif why := unmakeable(build):
        raise UserError(f"build {build.id}: {why}")


def unmakeable(build: Build) -> str | None:
    """Why agent-host cannot make this build's model here (a quantized model not cached yet
    needs the quantize environment), or None."""
    from agent_host.serving import models
    from agent_host.serving.quantize import quantize_env_missing

    if build.model is None:
        return None
    needs = models.DEQUANTIZED.get(build.model, build.model)   # a dequantized one needs its GPTQ one
    if needs in models.QUANTIZED and not models.is_made(needs):
        missing = quantize_env_missing()
        if missing:
            return f"model {build.model} is not made yet and {missing}"
    return None


def plan(build: Build, *, port: int | None, api_key: str, seed: int) -> LaunchSpec:
    """The command line and environment of `build`'s server, from its server kind's module
    (serving/kinds/). `env_set` (what is logged) never holds the API key; `env` (what the
    server gets) does: keys never go on a command line, which any user can read."""
    from agent_host.config.hosts import hardware_problems

    k = kind(build)
    if k.MANAGED and (problems := hardware_problems(build)):
        raise UserError(f"build {build.id}: {'; '.join(problems)}")
    if k.MANAGED and (missing := missing_packages(build)):
        raise UserError(f"build {build.id} needs the package(s) {', '.join(missing)}: "
                        f"pip install --no-deps {' '.join(missing)}")
    return k.plan(build, port=port, api_key=api_key, seed=seed)
