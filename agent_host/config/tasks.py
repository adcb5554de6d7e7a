"""Tasks: YAML files in tasks/ with a goal, setup and teardown steps, a success check, a budget.

A task file holds one task (a mapping) or several (a list). Each task expands into task
instances: one per parameter set (`params`), each with a `base` variant and, unless the task
opts out or is infeasible, a `verify` variant whose setup also makes the goal true (key
`ID@verify`). See docs/tasks.md for the format; `agent-host tasks schema` prints its schema.

Checks are pure data a judge can walk: `check.shell_commands()` lists the shell commands whose
outputs the check needs (run them as one batch), and `check.evaluate(outputs, ui)` decides from
those outputs and a UI matcher, without touching a phone.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import time
from pathlib import Path
from typing import Annotated, Any, Callable, Iterable, Literal, Union

import yaml
from pydantic import (BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, TypeAdapter,
                      ValidationError, field_validator, model_validator)
from pydantic_core import PydanticCustomError

from agent_host.config.actions import ACTIONS, BARE_ACTIONS, script_model
from agent_host.config.loading import format_loc, line_of, load_yaml, validation_messages
from agent_host.config.phones import REPO_ROOT, resolve_app
from agent_host.errors import ConfigError, UserError

TASKS_DIR = Path("tasks")
SCHEMA_LINE = "# yaml-language-server: $schema=./task.schema.json"
VARIANTS = ("base", "verify")
Namespace = Literal["global", "system", "secure"]

ShellOutputs = dict[str, tuple[str, int]]   # command -> (stdout, exit code)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Text(Strict):
    """Models whose string values may be written as YAML numbers (`value: 0` means "0")."""
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True, coerce_numbers_to_str=True)


def _one_key_union(kinds: dict[str, type], what: str, bare: tuple[str, ...] = ()):
    """A union of one-key mappings (`{shell: ...}`, `{setting: {...}}`), told apart by the key.

    The tags carry a space so that loading.validation_messages drops them from the field path:
    errors read `setup[2].setting.value: Field required`, not `setup[2].setting step.setting...`.
    `bare` names kinds that may be written as a plain string (`- home`).
    """
    expected = ", ".join(kinds)

    def shape(v: Any) -> Any:
        if isinstance(v, str) and v in bare:
            return {v: None}
        if isinstance(v, str):
            raise PydanticCustomError(f"{what}_kind", f"unknown {what} '{{k}}' (expected one of: {{e}})",
                                      {"k": v, "e": expected})
        if not isinstance(v, dict):
            raise PydanticCustomError(f"{what}_shape", f"a {what} is a one-key mapping such as {{ex}}, not {{t}}",
                                      {"ex": f"{{{next(iter(kinds))}: ...}}", "t": type(v).__name__})
        if len(v) != 1:
            got = ", ".join(map(str, v)) or "nothing"
            raise PydanticCustomError(f"{what}_shape", f"a {what} has exactly one key, one of: {{e}} (got: {{g}})",
                                      {"e": expected, "g": got})
        key = next(iter(v))
        if key not in kinds:
            raise PydanticCustomError(f"{what}_kind", f"unknown {what} '{{k}}' (expected one of: {{e}})",
                                      {"k": key, "e": expected})
        return v

    by_type = {model: key for key, model in kinds.items()}

    def tag(v: Any) -> str | None:
        if isinstance(v, dict):
            return f"{next(iter(v))} {what}" if len(v) == 1 else None
        key = by_type.get(type(v))   # serialising a model instance
        return None if key is None else f"{key} {what}"

    members = tuple(Annotated[model, Tag(f"{key} {what}")] for key, model in kinds.items())
    union = Union[members]  # type: ignore[valid-type]
    schema_extra = {"enum": list(bare)} if bare else None
    out = Annotated[union, Discriminator(tag), BeforeValidator(shape)]
    return out, schema_extra


def _fail(message: str) -> PydanticCustomError:
    """A validation error whose message reads as written (no "Value error, " prefix)."""
    return PydanticCustomError("task_rule", "{m}", {"m": message})


def _regex(v: str) -> str:
    try:
        re.compile(v)
    except re.error as exc:
        raise _fail(f"invalid regular expression: {exc}") from None
    return v


# ---------------------------------------------------------------------------------------------
# Steps (setup, goal_setup, teardown)

class ShellStep(Strict):
    shell: str = Field(min_length=1, description="an adb shell command line (runs as the shell user)")

    def commands(self, apps: dict[str, str] | None = None) -> list[str]:
        return [self.shell]


class SettingValue(Text):
    namespace: Namespace
    key: str = Field(pattern=r"^[A-Za-z0-9_.:-]+$")
    value: str


class SettingStep(Strict):
    setting: SettingValue

    def commands(self, apps: dict[str, str] | None = None) -> list[str]:
        s = self.setting
        return [f"settings put {s.namespace} {s.key} {shlex.quote(s.value)}"]


class LaunchStep(Strict):
    launch: str = Field(min_length=1, description="app alias (settings, clock, ...) or package")

    def commands(self, apps: dict[str, str] | None = None) -> list[str]:
        pkg = resolve_app(self.launch, apps)
        return [f"monkey -p {pkg} -c android.intent.category.LAUNCHER 1"]


class HomeStep(Strict):
    home: None = Field(None, description="press Home (write `- home`)")

    def commands(self, apps: dict[str, str] | None = None) -> list[str]:
        return ["input keyevent KEYCODE_HOME"]


class ForceStopStep(Strict):
    force_stop: str = Field(min_length=1, description="app alias or package")

    def commands(self, apps: dict[str, str] | None = None) -> list[str]:
        return [f"am force-stop {resolve_app(self.force_stop, apps)}"]


class WaitStep(Strict):
    wait: float = Field(gt=0, le=60, description="seconds")

    def commands(self, apps: dict[str, str] | None = None) -> list[str]:
        return []


STEP_KINDS: dict[str, type[BaseModel]] = {
    "shell": ShellStep, "setting": SettingStep, "launch": LaunchStep, "home": HomeStep,
    "force_stop": ForceStopStep, "wait": WaitStep,
}
Step, _STEP_SCHEMA_EXTRA = _one_key_union(STEP_KINDS, "step", bare=("home",))
AnyStep = Union[ShellStep, SettingStep, LaunchStep, HomeStep, ForceStopStep, WaitStep]


def step_kind(step: BaseModel) -> str:
    return next(k for k, m in STEP_KINDS.items() if isinstance(step, m))


def run_steps(steps: Iterable[AnyStep], phone: Any, apps: dict[str, str] | None = None,
              sleep: Callable[[float], None] = time.sleep) -> None:
    """Apply steps in order on a phone (duck-typed agent_host.phone.device.Phone): `shell` and
    `setting` through phone.shell, `launch` / `force_stop` / `home` through the phone's own
    methods, `wait` by sleeping. A shell step's exit code is not checked (setup commands such
    as `pm clear` of an absent package are allowed to fail)."""
    for step in steps:
        if isinstance(step, (ShellStep, SettingStep)):
            for cmd in step.commands(apps):
                phone.shell(cmd)
        elif isinstance(step, LaunchStep):
            phone.launch(resolve_app(step.launch, apps))
        elif isinstance(step, ForceStopStep):
            phone.force_stop(resolve_app(step.force_stop, apps))
        elif isinstance(step, HomeStep):
            phone.home()
        elif isinstance(step, WaitStep):
            sleep(step.wait)


# ---------------------------------------------------------------------------------------------
# Checks

UiMatcher = Callable[["UiCheck"], bool]


class _CheckBase(Strict):
    def shell_commands(self) -> list[str]:
        """The shell commands whose outputs evaluate() needs, without duplicates, in order."""
        out: list[str] = []
        self._collect(out)
        return list(dict.fromkeys(out))

    def _collect(self, out: list[str]) -> None:
        pass

    def ui_checks(self) -> list["UiCheck"]:
        """Every UI check inside this check (the judge needs a dump only if there is one)."""
        out: list[UiCheck] = []
        self._collect_ui(out)
        return out

    def _collect_ui(self, out: list["UiCheck"]) -> None:
        pass

    def evaluate(self, outputs: ShellOutputs, ui: UiMatcher | None = None,
                 apps: dict[str, str] | None = None) -> bool:
        """True when the goal holds. `outputs` maps each of shell_commands() to (stdout, exit
        code); a command that exited non-zero (127: not found) makes its leaf false. `ui` decides
        a UiCheck against the current screen. `apps` resolves app aliases (a phone profile's
        `apps`; default: the Pixel packages)."""
        raise NotImplementedError


def _output(outputs: ShellOutputs, cmd: str) -> tuple[str, int]:
    try:
        return outputs[cmd]
    except KeyError:
        raise KeyError(f"no output for {cmd!r}: run every command of check.shell_commands()") from None


class SettingCheckSpec(Text):
    namespace: Namespace
    key: str = Field(pattern=r"^[A-Za-z0-9_.:-]+$")
    equals: str | None = Field(None, description="the value, exactly (after trimming whitespace)")
    in_: list[str] | None = Field(None, alias="in", min_length=1, description="one of these values")
    matches: str | None = Field(None, description="a regular expression the whole value matches")

    _v = field_validator("matches")(lambda cls, v: v if v is None else _regex(v))

    @model_validator(mode="before")
    @classmethod
    def _known_operator(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for k in data:
                if k not in ("namespace", "key", "equals", "in", "matches"):
                    raise _fail(f"unknown field or operator '{k}' (operators: equals, in, matches)")
        return data

    @model_validator(mode="after")
    def _one_operator(self):
        n = sum(x is not None for x in (self.equals, self.in_, self.matches))
        if n != 1:
            raise _fail("give exactly one of equals, in, matches")
        return self

    @property
    def command(self) -> str:
        return f"settings get {self.namespace} {self.key}"

    def test(self, value: str) -> bool:
        if self.equals is not None:
            return value == self.equals
        if self.in_ is not None:
            return value in self.in_
        return re.fullmatch(self.matches, value) is not None  # type: ignore[arg-type]


class SettingCheck(_CheckBase):
    setting: SettingCheckSpec

    def _collect(self, out: list[str]) -> None:
        out.append(self.setting.command)

    def evaluate(self, outputs: ShellOutputs, ui: UiMatcher | None = None, apps=None) -> bool:
        stdout, code = _output(outputs, self.setting.command)
        return code == 0 and self.setting.test(stdout.strip())


class ShellCheckSpec(Strict):
    command: str = Field(min_length=1)
    matches: str | None = Field(
        None, description="a regular expression searched for in the output (multi-line); "
                          "without it, exit code 0 alone means true")

    _v = field_validator("matches")(lambda cls, v: v if v is None else _regex(v))


class ShellCheck(_CheckBase):
    shell: ShellCheckSpec

    def _collect(self, out: list[str]) -> None:
        out.append(self.shell.command)

    def evaluate(self, outputs: ShellOutputs, ui: UiMatcher | None = None, apps=None) -> bool:
        stdout, code = _output(outputs, self.shell.command)
        if code != 0:
            return False
        return self.shell.matches is None or re.search(self.shell.matches, stdout, re.MULTILINE) is not None


class UiSelector(Strict):
    text: str | None = Field(None, description="the element's text, exactly")
    text_contains: str | None = None
    resource_id: str | None = Field(None, description="full (android:id/title) or short (title)")
    desc: str | None = Field(None, description="content-desc, exactly")
    desc_contains: str | None = None
    class_name: str | None = Field(None, description="full (android.widget.Switch) or short (Switch)")
    package: str | None = None
    checked: bool | None = None
    selected: bool | None = None
    enabled: bool | None = None

    @model_validator(mode="after")
    def _not_empty(self):
        if not self.model_dump(exclude_none=True):
            raise _fail("give at least one selector attribute (text, resource_id, desc, ...)")
        return self

    def matches_element(self, *, text: str = "", desc: str = "", resource_id: str = "",
                        class_name: str = "", package: str = "", checked: bool = False,
                        selected: bool = False, enabled: bool = True) -> bool:
        """Does one element match? Short ids and class names match the full ones."""
        def short(v: str, sep: str) -> str:
            return v.rsplit(sep, 1)[-1]

        if self.text is not None and text != self.text:
            return False
        if self.text_contains is not None and self.text_contains not in (text or ""):
            return False
        if self.desc is not None and desc != self.desc:
            return False
        if self.desc_contains is not None and self.desc_contains not in (desc or ""):
            return False
        if self.resource_id is not None and self.resource_id not in (resource_id, short(resource_id or "", "/")):
            return False
        if self.class_name is not None and self.class_name not in (class_name, short(class_name or "", ".")):
            return False
        if self.package is not None and package != self.package:
            return False
        for want, got in ((self.checked, checked), (self.selected, selected), (self.enabled, enabled)):
            if want is not None and want != bool(got):
                return False
        return True


class UiCheck(_CheckBase):
    ui: UiSelector = Field(description="true when an element on screen matches every attribute")

    def _collect_ui(self, out: list["UiCheck"]) -> None:
        out.append(self)

    def evaluate(self, outputs: ShellOutputs, ui: UiMatcher | None = None, apps=None) -> bool:
        if ui is None:
            raise ValueError("this check has a ui condition: pass a ui matcher")
        return bool(ui(self))


FOREGROUND_COMMAND = "dumpsys activity activities | grep topResumedActivity"


class ForegroundSpec(Strict):
    package: str | None = None
    app: str | None = Field(None, description="app alias, resolved through the phone profile")

    @model_validator(mode="after")
    def _one(self):
        if (self.package is None) == (self.app is None):
            raise _fail("give exactly one of package, app")
        return self


class ForegroundCheck(_CheckBase):
    foreground: ForegroundSpec

    def _collect(self, out: list[str]) -> None:
        out.append(FOREGROUND_COMMAND)

    def evaluate(self, outputs: ShellOutputs, ui: UiMatcher | None = None, apps=None) -> bool:
        stdout, code = _output(outputs, FOREGROUND_COMMAND)
        pkg = self.foreground.package or resolve_app(self.foreground.app, apps)  # type: ignore[arg-type]
        # topResumedActivity=ActivityRecord{a1b2c3 u0 com.android.settings/.Settings t42}
        return code == 0 and re.search(rf"topResumedActivity.*\s{re.escape(pkg)}/", stdout) is not None


class AllCheck(_CheckBase):
    all: list["Check"] = Field(min_length=1)

    def _collect(self, out):
        for c in self.all:
            c._collect(out)

    def _collect_ui(self, out):
        for c in self.all:
            c._collect_ui(out)

    def evaluate(self, outputs, ui=None, apps=None) -> bool:
        return all(c.evaluate(outputs, ui, apps) for c in self.all)


class AnyCheck(_CheckBase):
    any: list["Check"] = Field(min_length=1)

    def _collect(self, out):
        for c in self.any:
            c._collect(out)

    def _collect_ui(self, out):
        for c in self.any:
            c._collect_ui(out)

    def evaluate(self, outputs, ui=None, apps=None) -> bool:
        return any(c.evaluate(outputs, ui, apps) for c in self.any)


class NotCheck(_CheckBase):
    not_: "Check" = Field(alias="not")

    def _collect(self, out):
        self.not_._collect(out)

    def _collect_ui(self, out):
        self.not_._collect_ui(out)

    def evaluate(self, outputs, ui=None, apps=None) -> bool:
        return not self.not_.evaluate(outputs, ui, apps)


CHECK_KINDS: dict[str, type[BaseModel]] = {
    "setting": SettingCheck, "shell": ShellCheck, "ui": UiCheck, "foreground": ForegroundCheck,
    "all": AllCheck, "any": AnyCheck, "not": NotCheck,
}
Check, _ = _one_key_union(CHECK_KINDS, "check")
AnyCheckModel = Union[SettingCheck, ShellCheck, UiCheck, ForegroundCheck, AllCheck, AnyCheck, NotCheck]
for _m in (AllCheck, AnyCheck, NotCheck):
    _m.model_rebuild()


# ---------------------------------------------------------------------------------------------
# Solutions (policy scripts: docs/architecture.md "Policy scripts")

def _none_is_empty(cls: Any, v: Any) -> Any:
    return {} if v is None else v


def _action(tool: str, args: type[BaseModel]) -> type[BaseModel]:
    """A one-key model `{tool: args}` (`press_back:` with no value means no arguments)."""
    optional = not ACTIONS[tool].element and all(not f.is_required() for f in args.model_fields.values())
    default = Field(default_factory=args) if optional else Field()
    name = f"{''.join(p.title() for p in tool.split('_'))}Action"
    return type(name, (Strict,), {
        "__annotations__": {tool: args}, "__module__": __name__, tool: default,
        "_none": field_validator(tool, mode="before")(_none_is_empty),
    })


# the arguments of each action are defined once, in config/actions.py
ACTION_KINDS: dict[str, type[BaseModel]] = {name: _action(name, script_model(name)) for name in ACTIONS}
for _m in ACTION_KINDS.values():
    _m.model_rebuild()
Action, _ACTION_SCHEMA_EXTRA = _one_key_union(ACTION_KINDS, "action", bare=BARE_ACTIONS)


def action_tool(action: BaseModel) -> str:
    return next(iter(type(action).model_fields))


# ---------------------------------------------------------------------------------------------
# Tasks

ParamValue = Union[str, int, float]


class Task(Strict):
    """One task as written in a file (before params and variants are expanded)."""
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="lower-case, digits, . _ -")
    goal: str = Field(min_length=1, description="what the agent is asked; may use {param} placeholders")
    app: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.]*$",
                     description="the app the task is about: an alias (settings, clock, contacts, ...) "
                                 "resolved through the phone profile, or a package")
    max_steps: int = Field(ge=1, le=100, description="step budget of an episode")
    tags: list[str] = Field(default_factory=list)
    setup: list[Step] = Field(default_factory=list, description="puts the phone in the start state")
    goal_setup: list[Step] = Field(default_factory=list,
                                   description="makes the goal true; the verify variant runs setup + goal_setup")
    check: Check | None = Field(None, description="true when the goal holds (absent on infeasible tasks)")
    teardown: list[Step] = Field(default_factory=list, description="restores a sane state after the episode")
    solution: list[Action] = Field(default_factory=list,
                                   description="a reference policy script that reaches the goal "
                                               "(agent-host tasks check-solutions runs it)")
    infeasible: bool = Field(False, description="no way to succeed: the right answer is task_infeasible")
    verify: bool = Field(True, description="derive an ID@verify variant (setup + goal_setup)")
    params: list[dict[str, ParamValue]] | None = Field(
        None, min_length=1, description="parameter sets; each is its own task instance")
    instance_id: str | None = Field(
        None, description="template for a params instance id, e.g. 'alarm-{hour}{minute}' "
                          "(default: ID[0], ID[1], ...)")
    notes: str = ""

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: list[str]) -> list[str]:
        for t in v:
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", t):
                raise _fail(f"tag {t!r}: use lower-case letters, digits and -")
        return v


def _semantic_errors(task: Task) -> list[tuple[tuple[Any, ...], str]]:
    """Rules across fields, each with the location of the field to fix."""
    errs: list[tuple[tuple[Any, ...], str]] = []
    if task.infeasible:
        if task.check is not None:
            errs.append((("check",), "an infeasible task has no check (remove it, or infeasible: false)"))
        if task.goal_setup:
            errs.append((("goal_setup",), "an infeasible task has no goal to set up"))
    else:
        if task.check is None:
            errs.append((("check",), "Field required (only an infeasible task has no check)"))
        if task.verify and not task.goal_setup:
            errs.append((("goal_setup",), "Field required for the verify variant (or set verify: false)"))
    aliases = known_app_aliases()
    named = [(("app",), task.app)]
    for field in ("setup", "goal_setup", "teardown"):
        for i, step in enumerate(getattr(task, field)):
            if isinstance(step, LaunchStep):
                named.append(((field, i, "launch"), step.launch))
            elif isinstance(step, ForceStopStep):
                named.append(((field, i, "force_stop"), step.force_stop))
    for i, action in enumerate(task.solution):
        if action_tool(action) == "open_app":
            named.append((("solution", i, "open_app", "name"), action.open_app.name))  # type: ignore[attr-defined]
    for loc, name in named:
        if "." not in name and "{" not in name and name not in aliases:
            errs.append((loc, f"unknown app alias {name!r} (known: {', '.join(sorted(aliases))}; "
                              "or give a package name)"))
    if task.solution:
        last = action_tool(task.solution[-1])
        want = "task_infeasible" if task.infeasible else "task_complete"
        if last != want:
            errs.append((("solution", len(task.solution) - 1), f"a solution ends with {want}, not {last}"))
        if len(task.solution) > task.max_steps:
            errs.append((("max_steps",), f"{task.max_steps} is fewer than the solution's "
                                         f"{len(task.solution)} steps"))
    if task.params:
        keys = list(task.params[0])
        for i, p in enumerate(task.params):
            if list(p) != keys and set(p) != set(keys):
                errs.append((("params", i), f"every parameter set needs the same keys ({', '.join(keys)})"))
        for name in _placeholders(task.goal):
            if name not in keys:
                errs.append((("goal",), f"{{{name}}} is not a parameter ({', '.join(keys) or 'none'})"))
        if task.instance_id is not None:
            for name in _placeholders(task.instance_id):
                if name not in keys:
                    errs.append((("instance_id",), f"{{{name}}} is not a parameter"))
            ids = [_substitute(task.instance_id, p) for p in task.params]
            for i, iid in enumerate(ids):
                if ids.index(iid) != i:
                    errs.append((("instance_id",), f"parameter sets {ids.index(iid)} and {i} give the same id {iid!r}"))
                elif not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._\[\]=,:-]*", iid):
                    errs.append((("instance_id",), f"{iid!r} is not a usable id"))
        for i, p in enumerate(task.params):
            for loc, msg in _instance_parts(task, p)[1]:
                errs.append((("params", i), f"makes {format_loc(loc)} invalid: {msg}"))
    elif task.instance_id is not None:
        errs.append((("instance_id",), "instance_id needs params"))
    return errs


_ALIASES: dict[tuple, frozenset[str]] = {}


def known_app_aliases() -> frozenset[str]:
    """App aliases any phone profile in device_profiles/phones defines (and the defaults)."""
    from agent_host.config.phones import DEFAULT_APPS, load_phone_profile, phones_dir

    files = sorted(phones_dir().glob("*.yaml"))
    key = tuple((str(f), f.stat().st_mtime_ns) for f in files)
    if key not in _ALIASES:
        out = set(DEFAULT_APPS)
        for f in files:
            try:
                out |= set(load_phone_profile(f).apps)
            except UserError:
                pass   # a broken profile is reported where it is used
        _ALIASES.clear()
        _ALIASES[key] = frozenset(out)
    return _ALIASES[key]


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _placeholders(text: str) -> list[str]:
    return _PLACEHOLDER.findall(text)


def _substitute(text: str, params: dict[str, ParamValue]) -> str:
    """Replace {name} for each parameter name; other braces (regex quantifiers) stay."""
    return _PLACEHOLDER.sub(lambda m: str(params[m.group(1)]) if m.group(1) in params else m.group(0), text)


def _substitute_deep(data: Any, params: dict[str, ParamValue]) -> Any:
    if isinstance(data, str):
        return _substitute(data, params)
    if isinstance(data, list):
        return [_substitute_deep(x, params) for x in data]
    if isinstance(data, dict):
        return {k: _substitute_deep(v, params) for k, v in data.items()}
    return data


# ---------------------------------------------------------------------------------------------
# Task instances

class TaskInstance(BaseModel):
    """One runnable (task, parameter set, variant)."""
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    id: str                      # instance id: the task id, or e.g. alarm-set[0] for params
    key: str                     # id (base) or id@verify
    variant: Literal["base", "verify"]
    task_id: str                 # the id in the file
    params: dict[str, ParamValue] = Field(default_factory=dict)
    goal: str
    app: str
    setup: list[AnyStep]         # for verify: setup + goal_setup
    teardown: list[AnyStep]
    check: AnyCheckModel | None  # None on infeasible tasks
    max_steps: int
    tags: list[str]
    infeasible: bool
    solution: list[dict[str, Any]]   # policy-script items, {tool: {args}}
    source: Path
    sha256: str
    notes: str = ""

    def goal_holds(self, outputs: ShellOutputs, ui: UiMatcher | None = None,
                   apps: dict[str, str] | None = None) -> bool:
        """The check's verdict (always False on an infeasible task)."""
        return False if self.check is None else self.check.evaluate(outputs, ui, apps)

    def shell_commands(self) -> list[str]:
        return [] if self.check is None else self.check.shell_commands()


_STEPS = TypeAdapter(list[Step])
_CHECK = TypeAdapter(Check)
_ACTIONS = TypeAdapter(list[Action])


def _dump(steps: Iterable[BaseModel]) -> list[Any]:
    """Steps back to their YAML shape (`home` as the bare string)."""
    out: list[Any] = []
    for step in steps:
        kind = step_kind(step)
        out.append(kind if kind == "home" else step.model_dump(by_alias=True, exclude_none=True, mode="json"))
    return out


def _solution_dump(actions: Iterable[BaseModel]) -> list[dict[str, Any]]:
    out = []
    for a in actions:
        tool = action_tool(a)
        out.append({tool: getattr(a, tool).model_dump(exclude_none=True, exclude_defaults=False, mode="json")})
    return out


def expand(task: Task, variants: Iterable[str] = VARIANTS, *, source: Path | str = Path("."),
           sha256: str = "") -> list[TaskInstance]:
    """Task instances: per parameter set, the base and (if wanted and the task has one) the
    verify variant. `{param}` placeholders are substituted in goal, steps, check and solution."""
    variants = tuple(variants)
    for v in variants:
        if v not in VARIANTS:
            raise UserError(f"unknown variant {v!r} (base, verify)")
    source = Path(source)
    sets: list[tuple[str, dict[str, ParamValue]]]
    if task.params:
        sets = [(_substitute(task.instance_id, p) if task.instance_id else f"{task.id}[{i}]", p)
                for i, p in enumerate(task.params)]
    else:
        sets = [(task.id, {})]
    out = []
    for iid, p in sets:
        parts, errors = _instance_parts(task, p)
        if errors:
            loc, msg = errors[0]
            raise ConfigError(f"{source}: {iid}: after substituting parameters: {format_loc(loc)}: {msg}")
        setup, goal_setup, teardown = parts["setup"], parts["goal_setup"], parts["teardown"]
        check, solution = parts["check"], _solution_dump(parts["solution"])
        common = dict(id=iid, task_id=task.id, params=p, goal=_substitute(task.goal, p), app=task.app,
                      teardown=teardown, check=check, max_steps=task.max_steps, tags=list(task.tags),
                      infeasible=task.infeasible, solution=solution, source=source, sha256=sha256,
                      notes=task.notes)
        if "base" in variants:
            out.append(TaskInstance(key=iid, variant="base", setup=setup, **common))
        if "verify" in variants and has_verify(task):
            out.append(TaskInstance(key=f"{iid}@verify", variant="verify", setup=setup + goal_setup, **common))
    return out


def _instance_parts(task: Task, params: dict[str, ParamValue]) -> tuple[dict[str, Any], list[tuple[tuple, str]]]:
    """Steps, check and solution with `params` substituted and validated again; and the
    errors, each with its field path (a parameter may make a value invalid, e.g. a regex)."""
    sources: list[tuple[str, TypeAdapter, Any]] = [
        ("setup", _STEPS, _dump(task.setup)), ("goal_setup", _STEPS, _dump(task.goal_setup)),
        ("teardown", _STEPS, _dump(task.teardown)),
        ("check", _CHECK, None if task.check is None else
         task.check.model_dump(by_alias=True, exclude_none=True, mode="json")),
        ("solution", _ACTIONS, _solution_dump(task.solution)),
    ]
    parts: dict[str, Any] = {}
    errors: list[tuple[tuple, str]] = []
    for name, adapter, data in sources:
        if data is None:
            parts[name] = None
            continue
        try:
            parts[name] = adapter.validate_python(_substitute_deep(data, params))
        except ValidationError as exc:
            for e in exc.errors(include_url=False):
                loc = (name,) + tuple(x for x in e["loc"] if not (isinstance(x, str) and " " in x))
                errors.append((loc, e["msg"]))
    return parts, errors


def has_verify(task: Task) -> bool:
    return task.verify and not task.infeasible and bool(task.goal_setup)


# ---------------------------------------------------------------------------------------------
# Loading

class _TaskList(BaseModel):
    tasks: list[Task]


_Parsed = tuple[list[Task], list[str], str, dict[str, int]]
_PARSED: dict[tuple[str, int, int], _Parsed] = {}


def _file_messages(path: Path) -> _Parsed:
    """Tasks of one file, the error lines (file:line: field: message), and the file's sha256.
    Parsed once per (path, mtime, size): YAML parsing dominates loading."""
    try:
        st = path.stat()
    except OSError:
        return _parse_file(path)
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _PARSED:
        if len(_PARSED) > 512:
            _PARSED.clear()
        _PARSED[key] = _parse_file(path)
    tasks, messages, digest, id_lines = _PARSED[key]
    return list(tasks), list(messages), digest, id_lines


def _parse_file(path: Path) -> _Parsed:
    """See _file_messages; the last item maps each task id to the line it is on."""
    try:
        data, node = load_yaml(path)
    except ConfigError as exc:
        return [], str(exc).splitlines(), "", {}
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if data is None:
        return [], [f"{path}: the file is empty"], digest, {}
    if isinstance(data, dict):
        items, nodes, prefixes = [data], [node], [()]
    elif isinstance(data, list):
        items = data
        nodes = list(node.value) if isinstance(node, yaml.SequenceNode) else [None] * len(data)
        prefixes = [(i,) for i in range(len(data))]
    else:
        line = f":{node.start_mark.line + 1}" if node is not None else ""
        return [], [f"{path}{line}: (top level): a task file holds a task (a mapping) or a list of tasks"], digest, {}
    tasks: list[Task] = []
    messages: list[str] = []
    id_lines: dict[str, int] = {}
    for item, item_node, prefix in zip(items, nodes, prefixes):
        try:
            task = Task.model_validate(item)
        except ValidationError as exc:
            messages += validation_messages(path, node, exc, prefix=prefix)
            continue
        for loc, msg in _semantic_errors(task):
            line = line_of(item_node, loc)
            messages.append(f"{path}:{line}: {format_loc(prefix + loc)}: {msg}" if line
                            else f"{path}: {format_loc(prefix + loc)}: {msg}")
        tasks.append(task)
        id_lines[task.id] = line_of(item_node, ("id",)) or 1
    return tasks, sorted(messages, key=_line_key), digest, id_lines


def _line_key(message: str) -> int:
    m = re.match(r"[^\n]*?\.ya?ml:(\d+):", message)
    return int(m.group(1)) if m else 0


def load_task_file(path: Path | str) -> list[Task]:
    """The tasks in one file; ConfigError lists every problem, one `file:line: field: message` a line."""
    path = Path(path)
    tasks, messages, _, _ = _file_messages(path)
    if messages:
        raise ConfigError("\n".join(messages))
    return tasks


def default_tasks_dir() -> Path:
    local = Path.cwd() / TASKS_DIR
    return local if local.is_dir() else REPO_ROOT / TASKS_DIR


def task_files(paths: Iterable[Path | str]) -> list[Path]:
    """Files named, and the *.yaml / *.yml files in directories named (sorted)."""
    out: dict[Path, Path] = {}   # resolved -> as named, so tasks/ and ./tasks/x.yaml do not clash
    for p in map(Path, paths):
        if p.is_dir():
            files = sorted(q for q in p.iterdir() if q.suffix in (".yaml", ".yml") and q.is_file())
        elif p.exists():
            files = [p]
        else:
            raise UserError(f"{p}: no such file or directory")
        for f in files:
            out.setdefault(f.resolve(), f)
    return list(out.values())


class LoadReport(BaseModel):
    """Everything validate needs: tasks by file, and every error line."""
    model_config = ConfigDict(arbitrary_types_allowed=True)
    tasks: list[tuple[Task, Path, str]] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    files: int = 0


def collect(paths: Iterable[Path | str]) -> LoadReport:
    """Load every file, gathering all errors (per field, per file, and duplicate ids)."""
    report = LoadReport()
    first_seen: dict[str, Path] = {}
    for path in task_files(paths):
        report.files += 1
        tasks, messages, digest, id_lines = _file_messages(path)
        report.errors += messages
        for task in tasks:
            names = [task.id]
            if task.params and task.instance_id:
                names += [_substitute(task.instance_id, p) for p in task.params]
            clash = next((n for n in names if n in first_seen), None)
            if clash is not None:
                report.errors.append(f"{path}:{id_lines.get(task.id, 1)}: id: duplicate task id {clash!r} "
                                     f"(also in {first_seen[clash]})")
                continue
            for n in names:
                first_seen[n] = path
            report.tasks.append((task, path, digest))
    return report


def load_tasks(specs: Iterable[str | Path] = (), variants: Iterable[str] = VARIANTS) -> list[TaskInstance]:
    """Task instances for specs: files, directories, or ids / instance ids / keys (`ID@verify`)
    looked up in the default tasks/ directory. No specs: every task in tasks/."""
    specs = [str(s) for s in specs]
    variants = tuple(variants) or VARIANTS
    paths = [s for s in specs if Path(s).exists() or s.endswith((".yaml", ".yml")) or "/" in s]
    names = [s for s in specs if s not in paths]
    if not specs:
        paths = [str(default_tasks_dir())]
    out: list[TaskInstance] = []
    if paths:
        out += _instances(_checked(collect(paths)), variants)
    if names:
        every = _instances(_checked(collect([default_tasks_dir()])), VARIANTS)
        for name in names:
            if "@" in name:
                hits = [t for t in every if t.key == name]
            else:
                hits = [t for t in every if (t.id == name or t.task_id == name) and t.variant in variants]
            if not hits:
                raise UserError(f"unknown task {name!r} (not an id or key in {default_tasks_dir()}; "
                                "see `agent-host tasks list`)")
            out += hits
    seen: set[str] = set()
    unique = []
    for t in out:
        if t.key not in seen:
            seen.add(t.key)
            unique.append(t)
    return unique


def _checked(report: LoadReport) -> LoadReport:
    if report.errors:
        raise ConfigError("\n".join(report.errors))
    return report


def _instances(report: LoadReport, variants: tuple[str, ...]) -> list[TaskInstance]:
    out: list[TaskInstance] = []
    for task, path, digest in report.tasks:
        out += expand(task, variants, source=path, sha256=digest)
    return out


def task_json_schema() -> dict[str, Any]:
    """The JSON Schema of a task file (one task, or a list of tasks); editors validate with it."""
    schema = TypeAdapter(Union[Task, list[Task]]).json_schema(by_alias=True)
    task = schema["$defs"]["Task"]
    # a step may be the bare string `home`, an action `press_back` / `press_home`
    for key, extra in (("setup", _STEP_SCHEMA_EXTRA), ("goal_setup", _STEP_SCHEMA_EXTRA),
                       ("teardown", _STEP_SCHEMA_EXTRA), ("solution", _ACTION_SCHEMA_EXTRA)):
        items = task["properties"][key]["items"]
        if "oneOf" in items and extra:
            items["oneOf"].append({"type": "string", **extra})
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "agent-host task file",
            "description": "One task (a mapping) or a list of tasks; see docs/tasks.md.", **schema}
