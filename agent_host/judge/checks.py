"""Evaluate a task instance's check on a phone: one batched shell call, the step's own screen.

`Judge(task, profile).evaluate(phone, screen)` runs every shell command the check needs in ONE
`adb shell` call (Phone.shell_batch; the phone profile may substitute per-phone variants of a
command, whose output is filed under the original command) and decides UI conditions against
`screen`, the parsed dump the agent observes next, so judging costs no extra dump.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

MAX_DETAIL_OUTPUT = 400


@dataclass
class Verdict:
    goal: bool
    detail: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def ui_matcher(screen: Any):
    """A `UiMatcher` for agent_host.config.tasks checks: does any element of `screen` match?"""
    elements = list(getattr(screen, "elements", []) or [])

    def match(check: Any) -> bool:
        sel = check.ui
        for e in elements:
            texts = list(getattr(e, "texts", None) or ([e.text] if e.text else []))
            descs = list(getattr(e, "descs", None) or ([e.desc] if e.desc else []))
            rids = list(getattr(e, "resource_ids", None) or ([e.resource_id] if e.resource_id else [""]))
            for text in texts or [""]:
                for desc in descs or [""]:
                    for rid in rids:
                        if sel.matches_element(text=text, desc=desc, resource_id=rid,
                                               class_name=e.cls, package=e.package,
                                               checked=e.checked, selected=e.selected,
                                               enabled=e.enabled):
                            return True
        return False

    return match


class Judge:
    """The goal check of one task instance on one kind of phone."""

    def __init__(self, task: Any, profile: Any = None):
        self.task = task
        self.profile = profile
        self.apps = dict(profile.apps) if profile is not None else None
        self.commands: list[str] = list(task.shell_commands())
        self.phone_commands = [profile.command(c) if profile is not None else c for c in self.commands]
        check = getattr(task, "check", None)
        self.needs_screen = bool(check is not None and check.ui_checks())

    def evaluate(self, phone: Any, screen: Any = None) -> Verdict:
        """G(t). PhoneError from the shell batch propagates (the episode is then an error)."""
        t0 = time.monotonic()
        if self.task.check is None:           # infeasible: no goal can hold
            return Verdict(False, {"infeasible": True}, time.monotonic() - t0)
        outputs: dict[str, tuple[str, int]] = {}
        if self.commands:
            results = phone.shell_batch(self.phone_commands)
            for cmd, res in zip(self.commands, results):
                outputs[cmd] = (res.output, res.exit_code)
        ui = ui_matcher(screen) if self.needs_screen else None
        if self.needs_screen and screen is None:
            raise ValueError("this check has a ui condition: pass the screen")
        goal = bool(self.task.goal_holds(outputs, ui, self.apps))
        detail: dict[str, Any] = {}
        if outputs:
            detail["shell"] = {cmd: {"out": _clip(out), "rc": rc} for cmd, (out, rc) in outputs.items()}
        if self.needs_screen:
            detail["ui"] = {_describe(c): ui(c) for c in self.task.check.ui_checks()}  # type: ignore[misc]
        return Verdict(goal, detail, time.monotonic() - t0)


def _clip(text: str) -> str:
    text = text.rstrip("\n")
    return text if len(text) <= MAX_DETAIL_OUTPUT else text[:MAX_DETAIL_OUTPUT] + "…"


def _describe(check: Any) -> str:
    return ",".join(f"{k}={v}" for k, v in check.ui.model_dump(exclude_none=True).items())
