"""Evaluating a task's check (config/checks.py): one batched shell call, the step's own screen.

`EVALUATORS` is the table from check kind to evaluator; `COMMANDS` says which shell commands
a kind needs. `Judge(task, profile).evaluate(phone, screen, answer)` runs every command the
check needs in ONE `adb shell` call (Phone.shell_batch; the phone profile may substitute
per-phone variants of a command, whose output is filed under the original command), decides
UI conditions against `screen`, the parsed dump the agent observes next (so judging costs no
extra dump), and `answer` checks against the agent's latest `answer` action.

A command that exited non-zero (127: not found) makes its leaf false.

The goal is more than the check: the check says the asked-for change is there (`asked`); the
same batch reads the whole state the task touches (its scope, phone/state.py), and the goal
holds only when, since the snapshot after setup, the scope changed by exactly the task's
declared change (`clean`): so many objects added and removed per kind, no more, no fewer. The
check pins which objects; the counts rule out a stray made beside them, a deletion done by
renaming, a change made before giving up. A verify variant starts at the goal, so its expected
change is none. The rule is here once, for every task.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agent_host.config.checks import (AnswerCheck, CHECK_KINDS, ForegroundCheck, SettingCheck, ShellCheck,
                                      UiCheck, check_kind, leaves)
from agent_host.config.phones import resolve_app
from agent_host.config.scope import Scope
from agent_host.judge.answers import same_answer
from agent_host.phone import state
from agent_host.phone.select import matches
from agent_host.text import normalise_answer

if TYPE_CHECKING:
    from agent_host.phone.device import Phone
    from agent_host.config.phones import PhoneProfile
    from agent_host.phone.screen import Screen
    from agent_host.config.tasks import TaskInstance

MAX_DETAIL_OUTPUT = 400
MAX_DIFF_ROWS = 20         # rows of a diff kept in a step's detail, per kind and direction
FOREGROUND_COMMAND = "dumpsys activity activities | grep topResumedActivity"

ShellOutputs = dict[str, tuple[str, int]]   # command -> (stdout, exit code)


@dataclass
class Facts:
    """What a check is decided on: shell outputs, the screen, app packages, the answer."""
    outputs: ShellOutputs = field(default_factory=dict)
    screen: Any = None                 # phone/screen.py Screen, for ui checks
    apps: dict[str, str] | None = None  # alias -> package (None: the Pixel defaults)
    answer: str | None = None          # the agent's latest `answer`

    def output(self, cmd: str) -> tuple[str, int]:
        try:
            return self.outputs[cmd]
        except KeyError:
            raise KeyError(f"no output for {cmd!r}: run every command of shell_commands(check)") from None


def setting_command(check: SettingCheck) -> str:
    return f"settings get {check.setting.namespace} {check.setting.key}"


def _setting(check: SettingCheck, facts: Facts) -> bool:
    stdout, code = facts.output(setting_command(check))
    spec, value = check.setting, stdout.strip()
    if code != 0:
        return False
    if spec.equals is not None:
        return value == spec.equals
    if spec.in_ is not None:
        return value in spec.in_
    return re.fullmatch(spec.matches, value) is not None  # type: ignore[arg-type]


# what a line of a note may carry besides its entry: a list marker, a checkbox
_MARKER = re.compile(r"^\s*(?:(?:[-*+\u2022]|\d+[.)])\s+)?(?:\[[ xX]?\]\s*)?")


def entry_lines(text: str) -> list[str]:
    """The entries of a list written as lines: blank lines and headings (`# ...`, a line ending
    in ':') left out, list markers stripped, each compared as an answer is (normalise_answer)."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#") or line.rstrip().endswith(":"):
            continue
        entry = normalise_answer(_MARKER.sub("", line, count=1))
        if entry:
            out.append(entry)
    return out


def _shell(check: ShellCheck, facts: Facts) -> bool:
    stdout, code = facts.output(check.shell.command)
    spec = check.shell
    if code != 0:
        return False
    if spec.lines is not None:
        return entry_lines(stdout) == [normalise_answer(x) for x in spec.lines]
    if spec.matches is None:
        return True
    if spec.count is not None:
        return sum(1 for _ in re.finditer(spec.matches, stdout, re.MULTILINE)) == spec.count
    return re.search(spec.matches, stdout, re.MULTILINE) is not None


def _ui(check: UiCheck, facts: Facts) -> bool:
    if facts.screen is None:
        raise ValueError("this check has a ui condition: pass the screen")
    return matches(facts.screen.elements, check.ui.model_dump(exclude_none=True))


def _foreground(check: ForegroundCheck, facts: Facts) -> bool:
    stdout, code = facts.output(FOREGROUND_COMMAND)
    pkg = check.foreground.package or resolve_app(check.foreground.app, facts.apps)  # type: ignore[arg-type]
    # topResumedActivity=ActivityRecord{a1b2c3 u0 com.android.settings/.Settings t42}
    return code == 0 and re.search(rf"topResumedActivity.*\s{re.escape(pkg)}/", stdout) is not None


def expected_answer(check: AnswerCheck, facts: Facts) -> str | None:
    """The answer the goal wants: given, or read from phone state (None: the state has none)."""
    spec = check.answer
    if spec.expected is not None:
        return spec.expected
    stdout, code = facts.output(spec.shell)  # type: ignore[arg-type]
    if code != 0:
        return None
    if spec.pattern is None:
        return stdout.strip() or None
    m = re.search(spec.pattern, stdout, re.MULTILINE)
    if m is None:
        return None
    return m.group(1) if m.groups() else m.group(0)


def _answer(check: AnswerCheck, facts: Facts) -> bool:
    want = expected_answer(check, facts)
    if want is None or facts.answer is None:
        return False
    return same_answer(facts.answer, want, check.answer.format)


EVALUATORS: dict[str, Callable[[Any, Facts], bool]] = {
    "setting": _setting,
    "shell": _shell,
    "ui": _ui,
    "foreground": _foreground,
    "answer": _answer,
    "all": lambda c, facts: all(evaluate(x, facts) for x in c.all),
    "any": lambda c, facts: any(evaluate(x, facts) for x in c.any),
    "not": lambda c, facts: not evaluate(c.not_, facts),
}

# the shell commands whose outputs a leaf needs (combinators: their children's)
COMMANDS: dict[str, Callable[[Any], list[str]]] = {
    "setting": lambda c: [setting_command(c)],
    "shell": lambda c: [c.shell.command],
    "ui": lambda c: [],
    "foreground": lambda c: [FOREGROUND_COMMAND],
    "answer": lambda c: [c.answer.shell] if c.answer.shell else [],
    "all": lambda c: [],
    "any": lambda c: [],
    "not": lambda c: [],
}
assert set(EVALUATORS) == set(COMMANDS) == set(CHECK_KINDS), "every check kind needs an evaluator"


def evaluate(check: BaseModel, facts: Facts) -> bool:
    """True when the goal holds."""
    return bool(EVALUATORS[check_kind(check)](check, facts))


def shell_commands(check: BaseModel | None) -> list[str]:
    """The shell commands whose outputs evaluate() needs, without duplicates, in order."""
    if check is None:
        return []
    return list(dict.fromkeys(c for leaf in leaves(check) for c in COMMANDS[check_kind(leaf)](leaf)))


def ui_checks(check: BaseModel | None) -> list[UiCheck]:
    """Every UI check inside `check` (the judge needs a dump only if there is one)."""
    return [] if check is None else [c for c in leaves(check) if isinstance(c, UiCheck)]


@dataclass
class Verdict:
    goal: bool
    detail: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    asked: bool | None = None      # the check alone (None: an infeasible task has none)
    clean: bool | None = None      # the scope changed by exactly the expected change
    untouched: bool | None = None  # the scope did not change at all (what giving up is judged by)


def expected_change(task: TaskInstance) -> dict[str, tuple[int, int]]:
    """kind -> (added, removed) the episode should end with: the task's change on a base
    variant; none on a verify variant (it starts at the goal) or an infeasible task."""
    if task.variant == "verify" or task.infeasible:
        return {}
    return task.change.counts()


def judge_diff(changes: dict[str, state.KindDiff], expected: dict[str, tuple[int, int]]) -> bool:
    """True when every kind changed by exactly its expected counts (unnamed kinds: none)."""
    return all((len(d.added), len(d.removed)) == expected.get(kind, (0, 0)) for kind, d in changes.items())


class Judge:
    """The goal of one task instance on one kind of phone. The first evaluation (after setup)
    takes the start snapshot every later one is compared with."""

    def __init__(self, task: TaskInstance, profile: PhoneProfile | None = None):
        self.task = task
        self.profile = profile
        self.apps = dict(profile.apps) if profile is not None else None
        self.commands: list[str] = shell_commands(task.check)
        self.scope = task.scope or Scope()
        self.state_commands = state.commands(self.scope)
        self.expected = expected_change(task)
        self.phone_commands = [profile.command(c) if profile is not None else c
                               for c in self.commands + self.state_commands]
        self.ui = ui_checks(task.check)
        self.answers = any(isinstance(c, AnswerCheck) for c in leaves(task.check)) if task.check else False
        self.start: state.Snapshot | None = None

    def evaluate(self, phone: Phone, screen: Screen | None = None, answer: str | None = None) -> Verdict:
        """G(t). PhoneError from the shell batch propagates (the episode is then an error)."""
        t0 = time.monotonic()
        if self.ui and screen is None:
            raise ValueError("this check has a ui condition: pass the screen")
        results = phone.shell_batch(self.phone_commands) if self.phone_commands else []
        n = len(self.commands)
        facts = Facts(screen=screen, apps=self.apps, answer=answer)
        for cmd, res in zip(self.commands, results[:n]):
            facts.outputs[cmd] = (res.output, res.exit_code)
        clean, changes = self._clean([(r.output, r.exit_code) for r in results[n:]])
        detail: dict[str, Any] = {}
        if self.task.check is None:           # infeasible: no goal can hold
            asked = None
            detail["infeasible"] = True
        else:
            asked = evaluate(self.task.check, facts)
        if facts.outputs:
            detail["shell"] = {cmd: {"out": _clip(out), "rc": rc} for cmd, (out, rc) in facts.outputs.items()}
        if self.ui:
            detail["ui"] = {_describe(c): _ui(c, facts) for c in self.ui}
        if self.answers:
            detail["answer"] = answer
        if not clean and any(d.added or d.removed for d in changes.values()):
            detail["state"] = _diff_detail(changes, self.expected)
        goal = bool(asked) and clean
        untouched = not any(d.added or d.removed for d in changes.values())
        return Verdict(goal, detail, time.monotonic() - t0, asked=asked, clean=clean if self.scope.kinds else None,
                       untouched=untouched if self.scope.kinds else None)

    def _clean(self, outputs: state.Outputs) -> tuple[bool, dict[str, state.KindDiff]]:
        if not self.scope.kinds:
            return True, {}
        now = state.snapshot(self.scope, outputs)
        if self.start is None:
            self.start = now
        changes = state.diff(self.start, now)
        return judge_diff(changes, self.expected), changes


# Any: the check's detail, free-form JSON the viewer reads
def _diff_detail(changes: dict[str, state.KindDiff], expected: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """What changed in scope, for the viewer: per kind that changed, the rows added and removed
    (clipped), and the expected counts."""
    def clip(rows: list[str]) -> list[str]:
        return [_clip(r)[:200] for r in rows[:MAX_DIFF_ROWS]] + ([f"... {len(rows) - MAX_DIFF_ROWS} more"]
                                                             if len(rows) > MAX_DIFF_ROWS else [])
    return {"kinds": {k: {"added": clip(d.added), "removed": clip(d.removed)}
                      for k, d in changes.items() if d.added or d.removed},
            "expected": {k: {"added": a, "removed": r} for k, (a, r) in expected.items()}}


def _clip(text: str) -> str:
    text = text.rstrip("\n")
    return text if len(text) <= MAX_DETAIL_OUTPUT else text[:MAX_DETAIL_OUTPUT] + "…"


def _describe(check: UiCheck) -> str:
    return ",".join(f"{k}={v}" for k, v in check.ui.model_dump(exclude_none=True).items())
