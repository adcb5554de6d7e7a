"""Task steps (setup, goal_setup, teardown) as data; phone/steps.py runs them on a phone."""

from __future__ import annotations

from typing import Literal, Union

from pydantic import BaseModel, Field

from agent_host.config.strict import Strict, Text, one_key_union

Namespace = Literal["global", "system", "secure"]


class ShellStep(Strict):
    shell: str = Field(min_length=1, description="an adb shell command line (runs as the shell user)")


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
AnyStep = Union[tuple(STEP_KINDS.values())]  # type: ignore[valid-type]  (derived from the table)


def step_kind(step: BaseModel) -> str:
    return next(k for k, m in STEP_KINDS.items() if isinstance(step, m))
