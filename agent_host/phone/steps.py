"""Running task steps (config/steps.py) on a phone: setup, goal_setup and teardown.

`RUNNERS` maps each step kind to how it is done: `shell` and `setting` through phone.shell,
`launch` / `force_stop` / `home` through the phone's own methods, `wait` by sleeping. Shell
commands go through the phone profile's `command_variants` (the command this phone needs
instead), as the judge's commands do. A shell step's exit code is not checked: setup
commands such as `pm clear` of an absent package are allowed to fail.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterable
from typing import Any

from agent_host.config.phones import resolve_app
from agent_host.config.steps import AnyStep, SettingStep, ShellStep, step_kind


def step_commands(step: AnyStep) -> list[str]:
    """The (canonical) shell commands of a `shell` or `setting` step; [] for the others."""
    if isinstance(step, ShellStep):
        return [step.shell]
    if isinstance(step, SettingStep):
        s = step.setting
        return [f"settings put {s.namespace} {s.key} {shlex.quote(s.value)}"]
    return []


class _Context:
    def __init__(self, phone: Any, profile: Any, sleep: Callable[[float], None]):
        self.phone = phone
        self.apps = dict(profile.apps) if profile is not None else None
        self.command = profile.command if profile is not None else (lambda c: c)
        self.where = f"phone profile {profile.id!r}" if profile is not None else ""
        self.sleep = sleep

    def package(self, alias_or_package: str) -> str:
        return resolve_app(alias_or_package, self.apps, where=self.where)


def _shell(step: Any, ctx: _Context) -> None:
    for cmd in step_commands(step):
        ctx.phone.shell(ctx.command(cmd))


RUNNERS: dict[str, Callable[[Any, _Context], None]] = {
    "shell": _shell,
    "setting": _shell,
    "launch": lambda step, ctx: ctx.phone.launch(ctx.package(step.launch)),
    "force_stop": lambda step, ctx: ctx.phone.force_stop(ctx.package(step.force_stop)),
    "home": lambda step, ctx: ctx.phone.home(),
    "wait": lambda step, ctx: ctx.sleep(step.wait),
}


def run_steps(steps: Iterable[AnyStep], phone: Any, profile: Any = None,
              sleep: Callable[[float], None] = time.sleep) -> None:
    """Apply steps in order on a phone (agent_host.phone.device.Phone, or one like it);
    `profile`: the PhoneProfile (app packages, command variants); None: the Pixel defaults."""
    ctx = _Context(phone, profile, sleep)
    for step in steps:
        RUNNERS[step_kind(step)](step, ctx)
