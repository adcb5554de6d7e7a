"""Phones that differ: the seeded variation of an episode's phone, as data (docs/tasks.md,
"Variations").

Every instance of a task would otherwise start from the same phone (the same launcher, list
contents, font, theme and clock), so a memorised sequence of taps would solve it every time. A
run varies each episode's phone (`run --vary`, default `light`): the choices are drawn from the
episode's seed, which derives from the run seed, the task instance and the repeat but not the
build (runs/plan.py), so every build meets the same phone for the same instance and one seed
always makes the same phone.

This module names the vocabulary (kinds, levels, a task's `vary:`); config/phone_variation.py
chooses and applies one episode's variation. A variation is applied as shell steps added to the task's own setup and teardown (`apply`):
after the task's setup, so what it adds is part of the start snapshot the judge compares with
(never collateral); undone in teardown, since settings survive the next episode's clean start.
What a real phone can take through adb (font scale, display size, dark theme, 12/24-hour clock,
extra rows through the content providers and files) is applied everywhere; the launcher's icon
order, the interruptions and Settings' suggestion cards exist only on the virtual phone (`VIRTUAL_ONLY`, `cmd vphone`).

A kind never touches what the task itself is about: one whose settings the task's commands name
(a dark-theme task is not given a dark theme) is left out by derivation (`KEYS`), and a task may
leave out more with its own `vary: {skip: [...], why: ...}`.
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal

from pydantic import Field, model_validator

from agent_host.config.actions import ScriptItem
from agent_host.config.checks import Check
from agent_host.config.scope import Change
from agent_host.config.steps import Step
from agent_host.config.strict import Strict, fail

VaryKind = Literal["launcher", "distractors", "font_scale", "display_size", "dark", "clock_24h", "interruption",
                   "suggestions", "values"]
KINDS: tuple[str, ...] = VaryKind.__args__  # type: ignore[attr-defined]

# What each kind changes, one line each (docs/tasks.md lists them; `--help` prints them).
WHAT: dict[str, str] = {
    "launcher": "the order of the launcher's icons (virtual phone)",
    "distractors": "extra contacts, texts, calls, events and files of other names, numbers and times, "
                   "in the kinds of state the task touches",
    "font_scale": "the font size (Settings > Display > Font size: 0.85, 1.0, 1.15 or 1.3)",
    "display_size": "the display size (density 356, 378 or 420: every element's bounds move)",
    "dark": "dark theme on or off",
    "clock_24h": "the 12- or 24-hour clock",
    "interruption": "a permission dialog, a rate-this-app sheet or a heads-up notification after the "
                    "agent's first few inputs, to dismiss or work around (virtual phone)",
    "suggestions": "one to three suggestion cards above Settings' home list (\"Set up Fingerprint Unlock\", "
                   "\"Back up your phone\"...): every row below moves down (virtual phone)",
    "values": "the data a task asks about (a code, a time, a number, a count: one of its `vary.values` "
              "parameter overlays), so its answer differs from the unvaried phone's; an infeasible "
              "task's phone is one of its `vary.feasible` phones, where the ask can be done, or its "
              "infeasible one",
}
assert set(WHAT) == set(KINDS)

LEVELS: dict[str, tuple[str, ...]] = {
    "none": (),
    # what a real phone could plausibly show at any time
    "light": ("launcher", "distractors", "font_scale", "display_size", "dark", "clock_24h", "suggestions"),
    "full": KINDS,
}
VIRTUAL_ONLY = frozenset({"launcher", "interruption", "suggestions"})

# A kind is left out of a task whose own commands or checks name one of these: it is what the
# task is about, so varying it would change the task's start state or answer.
KEYS: dict[str, re.Pattern[str]] = {
    "font_scale": re.compile(r"font_scale"),
    "display_size": re.compile(r"\bdensity\b"),
    "dark": re.compile(r"ui_night_mode|\buimode\b"),
    "clock_24h": re.compile(r"time_12_24"),
}



# A parameter overlay's values (config/tasks.py's ParamValue)
OverlayValue = str | int | float


class Feasible(Strict):
    """One phone on which an infeasible task's ask can be done (`vary.feasible`). Without it a
    blind "give up" passes every varied episode of an infeasible task: whether the ask can be
    done has to depend on the phone, as it does on real ones (the contact has a number on this
    one; this Settings offers the length asked)."""
    params: dict[str, OverlayValue] = Field(
        default_factory=dict, description="laid over the instance's parameters (e.g. a length the list offers)")
    setup: list[Step] = Field(default_factory=list,
                              description="run after the task's setup: what makes the ask doable here")
    check: Check = Field(description="true when the goal holds on this phone")
    change: Change = Field(default_factory=Change, description="what the task asks to change on this phone")
    solution: list[ScriptItem] = Field(min_length=1, description="a reference policy script, ending with task_complete")


class VarySpec(Strict):
    """A task's `vary:`: the kinds of variation it cannot take, and why; the other values its
    data may take on a varied phone."""
    skip: list[VaryKind] = Field(default_factory=list, description="variation kinds this task leaves out")
    why: str | None = Field(None, min_length=1,
                            description="why it cannot take them (shown by `tasks check-solutions`)")
    values: list[dict[str, OverlayValue]] = Field(
        default_factory=list,
        description="parameter overlays for the `values` kind: a varied episode plays the instance "
                    "with one of them laid over its parameters (its setup, check, goal and solution "
                    "substituted again), so the data it asks about, and its answer, differ")
    full: bool = Field(True, description="false: no variation makes this task differ for a memorised path "
                                         "(its answer is the phone's own, or one tap from its start state "
                                         "does it), so it is left out of `--vary full`, whose blind replay "
                                         "it would pass on any phone; say why")
    distractors: Literal["among", "older"] | None = Field(
        None, description="where its distractor texts and calls go: among its own rows (they move "
                          "down) or older than all of them (they cannot change what it asks); default: "
                          "older where the check is an answer or the goal has a recency word, else among")
    feasible: list[Feasible] = Field(
        default_factory=list,
        description="an infeasible task only: phones on which its ask can be done; the `values` kind "
                    "plays one of them or the task as it is, drawn from the episode's seed")

    @model_validator(mode="after")
    def _why_with_skip(self) -> "VarySpec":
        if self.skip and not self.why:
            raise fail("why: say why the task cannot take the kinds it skips")
        if not (self.skip or self.values or self.feasible or self.distractors or not self.full):
            raise fail("give skip (with why), values, feasible, distractors or full")
        if not self.full and not self.why:
            raise fail("why: say why no variation can make the task differ")
        if self.distractors and not self.why:
            raise fail("why: say why its distractors go where they do")
        return self


FONT_SCALES = (0.85, 1.0, 1.15, 1.3)
DENSITIES = (356, 378, 420)
INTERRUPTIONS = ("permission", "rate", "headsup")


def plays(full: bool, spec: str) -> bool:
    """Whether a task whose `vary.full` is `full` is played under condition `spec`."""
    return full or spec.strip() != "full"


def parse_vary(spec: str) -> tuple[str, ...]:
    """`--vary`'s value (a level, or kinds joined by `+`: `font_scale+dark`) as the kinds it
    varies; ValueError with a one-line reason for anything else."""
    spec = spec.strip()
    if spec in LEVELS:
        return LEVELS[spec]
    kinds = tuple(k.strip() for k in spec.split("+"))
    bad = [k for k in kinds if k not in KINDS]
    if bad or not spec:
        raise ValueError(f"--vary {spec!r}: give none, light, full, or kinds joined by '+' from "
                         f"{', '.join(KINDS)}" + (f" ({', '.join(bad)} is not one)" if bad else ""))
    return tuple(k for k in KINDS if k in kinds)


def vary_seed(seed: int, spec: str) -> int:
    """The variation's own seed, from the episode seed and the condition: the sampling seed and
    the phone's variation stay independent, and two conditions of one instance differ."""
    return int.from_bytes(hashlib.sha256(f"vary|{seed}|{spec}".encode()).digest()[:4], "big")
