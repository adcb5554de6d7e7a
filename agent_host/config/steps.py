"""Task steps (setup, goal_setup, teardown) as data; phone/steps.py runs them on a phone.

A shell step's exit code is checked: a command that fails makes the setup fail (the episode
is `error`, retried, never the model's). `may_fail: true` lets a command fail on purpose
(`pm clear` of an app a phone may not have); `effect` names what must hold afterwards, for
commands whose failure a real phone does not report in the exit code.
"""

from __future__ import annotations

from typing import Literal, Union, get_args

from pydantic import BaseModel, Field, field_validator

from agent_host.config.strict import Strict, Text, one_key_union, regex

Namespace = Literal["global", "system", "secure"]


class Effect(Strict):
    shell: str = Field(min_length=1, description="a shell command run after the step")
    matches: str = Field(description="a regex its output must match (multi-line), else the step failed")
    _v = field_validator("matches")(lambda cls, v: regex(v))


class ShellCommand(Strict):
    command: str = Field(min_length=1, description="an adb shell command line (runs as the shell user)")
    may_fail: bool = Field(False, description="a non-zero exit code is allowed (else the setup fails)")
    effect: Effect | None = Field(None, description="what must hold after the command")


class ShellStep(Strict):
    shell: str | ShellCommand = Field(description="an adb shell command line (runs as the shell user; "
                                                  "its exit code must be 0), or {command, may_fail, effect}")

    @field_validator("shell")
    @classmethod
    def _nonempty(cls, v: str | ShellCommand) -> str | ShellCommand:
        if isinstance(v, str) and not v.strip():
            raise ValueError("an empty command")
        return v

    @property
    def command(self) -> ShellCommand:
        return self.shell if isinstance(self.shell, ShellCommand) else ShellCommand(command=self.shell)


class SettingValue(Text):
    namespace: Namespace
    key: str = Field(pattern=r"^[A-Za-z0-9_.:-]+$")
    value: str


class SettingStep(Strict):
    setting: SettingValue


class LaunchStep(Strict):
    launch: str = Field(min_length=1, description="app alias (settings, clock, ...) or package")


class HomeStep(Strict):
    home: None = Field(None, description="press Home (write `- home`)")


class ForceStopStep(Strict):
    force_stop: str = Field(min_length=1, description="app alias or package")


class WaitStep(Strict):
    wait: float = Field(gt=0, le=60, description="seconds")


STEP_KINDS: dict[str, type[BaseModel]] = {
    "shell": ShellStep, "setting": SettingStep, "launch": LaunchStep, "home": HomeStep,
    "force_stop": ForceStopStep, "wait": WaitStep,
}
Step, STEP_SCHEMA_EXTRA = one_key_union(STEP_KINDS, "step", bare=("home",))
# Written out for the type checker, which cannot read a Union built from the table at run time;
# the import fails if the two disagree.
AnyStep = Union[ShellStep, SettingStep, LaunchStep, HomeStep, ForceStopStep, WaitStep]
assert set(get_args(AnyStep)) == set(STEP_KINDS.values()), "AnyStep must list every STEP_KINDS type"


def step_kind(step: BaseModel) -> str:
    return next(k for k, m in STEP_KINDS.items() if isinstance(step, m))
