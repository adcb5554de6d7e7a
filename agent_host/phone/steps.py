"""Running task steps (config/steps.py) on a phone: setup, goal_setup and teardown.

`RUNNERS` maps each step kind to how it is done: `shell` and `setting` through phone.shell,
`launch` / `force_stop` / `home` through the phone's own methods, `wait` by sleeping. Shell
commands go through the phone profile's `command_variants` (the command this phone needs
instead), as the judge's commands do. A shell or setting step whose command exits non-zero
(or prints the `content` tool's "Error while accessing provider", which older Android
versions exit 0 with), or whose `effect` does not hold afterwards, raises StepFailed: the
start state was not made, so the episode is `error` and retried, never the model's. A step
written `{command, may_fail: true}` may fail (`pm clear` of an app a phone may not have).
A `{phone.*}` placeholder left unbound is refused here too (config/tasks.bind_phone binds it).
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from agent_host.config.phones import resolve_app
from agent_host.config.requirements import phone_placeholders
from agent_host.config.steps import AnyStep, SettingStep, ShellStep, step_kind

if TYPE_CHECKING:
    from agent_host.phone.device import Phone
    from agent_host.config.phones import PhoneProfile

# The `content` tool reports a refused insert/update/delete this way (frameworks/base
# cmds/content Content.java); some Android versions still exit 0 after printing it.
_PROVIDER_ERROR = re.compile(r"^Error while accessing provider|^java\.lang\.\w+(Exception|Error)\b", re.MULTILINE)


class StepFailed(Exception):
    """A step did not take: its command failed or its effect does not hold."""


def step_commands(step: AnyStep) -> list[str]:
    """The (canonical) shell commands of a `shell` or `setting` step; [] for the others."""
    if isinstance(step, ShellStep):
        return [step.command.command]
    if isinstance(step, SettingStep):
        s = step.setting
        return [f"settings put {s.namespace} {s.key} {shlex.quote(s.value)}"]
    return []


class _Context:
    def __init__(self, phone: Phone, profile: PhoneProfile | None, sleep: Callable[[float], None]):
        self.phone = phone
        self.apps = dict(profile.apps) if profile is not None else None
        self.command = profile.command if profile is not None else (lambda c: c)
        self.where = f"phone profile {profile.id!r}" if profile is not None else ""
        # a phone whose state changes as the command returns needs no wait (PhoneProfile.wait_steps)
        self.sleep = sleep if profile is None or profile.wait_steps else (lambda _s: None)

    def package(self, alias_or_package: str) -> str:
        return resolve_app(alias_or_package, self.apps, where=self.where)


def _shell(step: AnyStep, ctx: _Context) -> None:
    spec = step.command if isinstance(step, ShellStep) else None
    for cmd in step_commands(step):
        if phone_placeholders(cmd):
            raise StepFailed(f"{cmd[:120]!r}: {', '.join(phone_placeholders(cmd))} not bound to this phone's "
                             "facts (bind the task first: agent_host.phone.requirements.bind_task)")
        res = ctx.phone.shell(ctx.command(cmd))
        may_fail = spec is not None and spec.may_fail
        refused = cmd.lstrip().startswith("content ") and _PROVIDER_ERROR.search(res.output)
        if not may_fail and (res.exit_code != 0 or refused):
            raise StepFailed(f"{cmd[:160]!r} exited {res.exit_code}: {res.text[-200:]!r}")
    if spec is not None and spec.effect is not None:
        res = ctx.phone.shell(ctx.command(spec.effect.shell))
        if not re.search(spec.effect.matches, res.output, re.MULTILINE):
            raise StepFailed(f"{spec.command[:120]!r}: its effect does not hold ({spec.effect.shell[:80]!r} "
                             f"printed {res.text[-160:]!r}, not /{spec.effect.matches}/)")


# Each runner gets the step of its kind (step_kind picks it): Any, as AnyStep would need
# narrowing in each lambda.
RUNNERS: dict[str, Callable[[Any, _Context], None]] = {
    "shell": _shell,
    "setting": _shell,
    "launch": lambda step, ctx: ctx.phone.launch(ctx.package(step.launch)),
    "force_stop": lambda step, ctx: ctx.phone.force_stop(ctx.package(step.force_stop)),
    "home": lambda step, ctx: ctx.phone.home(),
    "wait": lambda step, ctx: ctx.sleep(step.wait),
}


def run_steps(steps: Iterable[AnyStep], phone: Phone, profile: PhoneProfile | None = None,
              sleep: Callable[[float], None] = time.sleep) -> None:
    """Apply steps in order on a phone (agent_host.phone.device.Phone, or one like it);
    `profile`: the PhoneProfile (app packages, command variants); None: the Pixel defaults."""
    ctx = _Context(phone, profile, sleep)
    for step in steps:
        RUNNERS[step_kind(step)](step, ctx)
