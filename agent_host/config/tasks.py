"""Tasks: YAML files in tasks/ with a goal, setup and teardown steps, a success check, a budget.

A task file holds one task (a mapping) or several (a list). Each task expands into task
instances: one per parameter set (`params`), each with a `base` variant and, unless the task
opts out or is infeasible, a `verify` variant whose setup also makes the goal true (key
`ID@verify`). See docs/tasks.md for the format; `agent-host tasks schema` prints its schema.

Tasks are data: steps (config/steps.py), checks (config/checks.py) and solutions (actions,
config/actions.py). The phone layer runs steps (phone/steps.py), the judge evaluates checks
(judge/checks.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Iterable, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from agent_host.config.actions import ITEM_SCHEMA_EXTRA, ScriptItem, item_action
from agent_host.config.checks import AnyCheckModel, Check, ForegroundSpec
from agent_host.config.loading import JsonData, Loc, format_loc, line_of, load_yaml, validation_messages
from agent_host.config.phones import DEFAULT_APPS, REPO_ROOT, load_phone_profile, phones_dir, resolve_app
from agent_host.config.requirements import (PhoneFacts, TaskRequirement, app_requirement, phone_placeholders,
                                            substitute_phone, unknown_phone_placeholders)
from agent_host.config.steps import STEP_SCHEMA_EXTRA, AnyStep, ForceStopStep, LaunchStep, Step, step_kind
from agent_host.config.strict import Strict, fail
from agent_host.config.scope import Change, Scope, ScopeSpec, derive_scope, texts_of
from agent_host.config.variation import VarySpec
from agent_host.errors import ConfigError, UserError

TASKS_DIR = Path("tasks")
SCHEMA_LINE = "# yaml-language-server: $schema=./task.schema.json"
VARIANTS = ("base", "verify")


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
    max_steps: int = Field(ge=1, le=100, strict=True, description="step budget of an episode")
    tags: list[str] = Field(default_factory=list)
    requires: list[TaskRequirement] = Field(
        default_factory=list, description="what the phone must have (config/requirements.py): a run "
                                          "schedules the task only on phones that have it")
    setup: list[Step] = Field(default_factory=list, description="puts the phone in the start state")
    goal_setup: list[Step] = Field(default_factory=list,
                                   description="makes the goal true; the verify variant runs setup + goal_setup")
    check: Check | None = Field(None, description="true when the goal holds (absent on infeasible tasks)")
    teardown: list[Step] = Field(default_factory=list, description="restores a sane state after the episode")
    change: Change = Field(default_factory=Change,
                           description="what the task asks to change, per kind of state: objects added and "
                                       "removed (an edit is one of each); every kind not named, and an "
                                       "infeasible task: nothing. The goal holds only when the check holds "
                                       "and the task's scope changed by exactly this")
    scope: ScopeSpec | None = Field(None, description="more state to watch than the task's own commands "
                                                      "touch (derived: docs/tasks.md, 'Scope')")
    solution: list[ScriptItem] = Field(default_factory=list,
                                   description="a reference policy script that reaches the goal "
                                               "(agent-host tasks check-solutions runs it)")
    infeasible: bool = Field(False, description="no way to succeed: the right answer is task_infeasible")
    verify: bool = Field(True, description="derive an ID@verify variant (setup + goal_setup)")
    params: list[dict[str, ParamValue]] | None = Field(
        None, min_length=1, description="parameter sets; each is its own task instance")
    instance_id: str | None = Field(
        None, description="template for a params instance id, e.g. 'alarm-{hour}{minute}' "
                          "(default: ID[0], ID[1], ...)")
    vary: VarySpec | None = Field(None, description="the variations this task cannot take, and why "
                                                    "(config/variation.py; docs/tasks.md, 'Variations')")
    notes: str = ""

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: list[str]) -> list[str]:
        for t in v:
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", t):
                raise fail(f"tag {t!r}: use lower-case letters, digits and -")
        return v


def _semantic_errors(task: Task) -> list[tuple[Loc, str]]:
    """Rules across fields, each with the location of the field to fix."""
    errs: list[tuple[Loc, str]] = []
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
    errs += _requirement_errors(task)
    aliases = known_app_aliases()
    named: list[tuple[tuple[str | int, ...], str]] = [(("app",), task.app)]
    for field in ("setup", "goal_setup", "teardown"):
        for i, step in enumerate(getattr(task, field)):
            if isinstance(step, LaunchStep):
                named.append(((field, i, "launch"), step.launch))
            elif isinstance(step, ForceStopStep):
                named.append(((field, i, "force_stop"), step.force_stop))
    for i, action in enumerate(task.solution):
        if item_action(action) == "open_app":
            named.append((("solution", i, "open_app", "name"), action.open_app.name))
    for loc, name in named:
        if "." not in name and "{" not in name and name not in aliases:
            errs.append((loc, f"unknown app alias {name!r} (known: {', '.join(sorted(aliases))}; "
                              "or give a package name)"))
    if task.solution:
        last = item_action(task.solution[-1])
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
    errs += _values_errors(task)
    errs += _feasible_errors(task)
    return errs


def _feasible_errors(task: Task) -> list[tuple[Loc, str]]:
    """`vary.feasible`: on an infeasible task only; each phone makes a valid feasible task of
    every parameter set (its errors located under the phone's entry)."""
    if task.vary is None or not task.vary.feasible:
        return []
    if not task.infeasible:
        return [(("vary", "feasible"), "only an infeasible task has phones on which it is feasible")]
    errs: list[tuple[Loc, str]] = []
    keys = set(task.params[0]) if task.params else set()
    for j, twin in enumerate(task.vary.feasible):
        unknown = sorted(set(twin.params) - keys)
        if unknown:
            errs.append((("vary", "feasible", j, "params"), f"{unknown[0]!r} is not a parameter "
                                                            f"({', '.join(sorted(keys)) or 'the task has none'})"))
            continue
        for p in task.params or [{}]:
            bad = _semantic_errors(feasible_task(task, j, p))
            if bad:
                loc, msg = bad[0]
                where = ("params",) if loc and loc[0] == "params" else loc
                errs.append((("vary", "feasible", j, *where), msg))
                break
    return errs


def _values_errors(task: Task) -> list[tuple[Loc, str]]:
    """`vary.values`: each overlay names parameters the task has, and changes what every
    parameter set sets up or checks (an overlay that changes nothing varies nothing)."""
    if task.vary is None or not task.vary.values:
        return []
    if not task.params:
        return [(("vary", "values"), "values overlay parameters: give the task params (one set and an "
                                     "instance_id keep its id)")]
    errs: list[tuple[Loc, str]] = []
    keys = set(task.params[0])
    bases = [_instance_parts(task, p)[0] for p in task.params]
    for j, overlay in enumerate(task.vary.values):
        unknown = sorted(set(overlay) - keys)
        if unknown:
            errs.append((("vary", "values", j), f"{unknown[0]!r} is not a parameter ({', '.join(sorted(keys))})"))
            continue
        for i, (p, base) in enumerate(zip(task.params, bases)):
            parts, bad = _instance_parts(task, {**p, **overlay})
            if bad:
                loc, msg = bad[0]
                errs.append((("vary", "values", j), f"with params[{i}] makes {format_loc(loc)} invalid: {msg}"))
                break
            if all(parts[k] == base[k] for k in ("setup", "check")):
                errs.append((("vary", "values", j), f"changes neither the setup nor the check of params[{i}]"))
                break
    return errs


def _requirement_errors(task: Task) -> list[tuple[Loc, str]]:
    """`{phone.*}` placeholders are known ones, and a task naming the phone's calendar
    declares that it needs one."""
    errs: list[tuple[Loc, str]] = []
    if len(set(task.requires)) != len(task.requires):
        errs.append((("requires",), "a requirement is named twice"))
    raw = json.dumps(task.model_dump(mode="json", exclude={"notes"}))
    # as each instance has them: a parameter may be part of one ({phone.time:2026-12-20T{dep}})
    text = "\n".join(_substitute(raw, p) for p in task.params or [{}])
    for bad in sorted(set(unknown_phone_placeholders(text))):
        errs.append((("id",), f"unknown placeholder {bad} (known: {{phone.calendar_id}}, {{phone.timezone}}, "
                              "{phone.time:YYYY-MM-DDTHH:MM})"))
    if "{phone.calendar_id}" in text and "calendar_account" not in task.requires:
        errs.append((("requires",), "the task uses {phone.calendar_id}: add calendar_account to requires"))
    return errs


_ALIASES: dict[tuple[tuple[str, int], ...], frozenset[str]] = {}


def known_app_aliases() -> frozenset[str]:
    """App aliases any phone profile in device_profiles/phones defines (and the defaults)."""
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


def _substitute_deep(data: JsonData, params: dict[str, ParamValue]) -> JsonData:
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
    requires: tuple[str, ...] = ()   # config/requirements.py names
    phone_bound: bool = False        # `{phone.*}` placeholders substituted (bind_phone)
    change: Change = Field(default_factory=Change)   # what the base variant asks to change
    scope: Scope = Scope()           # the state the task touches (config/scope.py)
    vary_skip: tuple[str, ...] = ()  # the variation kinds its file leaves out (`vary.skip`)
    vary_distractors: str | None = None   # `vary.distractors`: among | older (None: derived)
    vary_full: bool = True           # `vary.full`: false leaves it out of `--vary full`
    vary_values: tuple[dict[str, ParamValue], ...] = ()   # its `vary.values` overlays (`with_values`)
    vary_feasible: int = 0           # how many `vary.feasible` phones it has (`with_values`)

    @property
    def needs_phone_facts(self) -> bool:
        """Its steps, check or solution name a `{phone.*}` fact not yet bound."""
        return not self.phone_bound and bool(phone_placeholders(_instance_text(self)))

    def needs(self, apps: dict[str, str] | None = None) -> tuple[str, ...]:
        """Everything a phone must have to serve this instance: its `requires:`, and
        `app:PACKAGE` for every app it names (`apps`: the phone profile's alias table; None:
        the Pixel's, DEFAULT_APPS). What a run schedules by (runs/requirements.py)."""
        return self.requires + tuple(app_requirement(p) for p in app_packages(self, apps))


_APP_FIELDS = ("app", "launch", "force_stop")


def app_names(obj: object) -> list[str]:
    """Every app a task instance (or any part of one) names, as written: an alias or a package,
    first-named first. Its `app`; its `launch` and `force_stop` steps; its checks'
    `foreground: {app | package}`; the apps its solution opens (`open_app: {name}`)."""
    out: dict[str, None] = {}

    def walk(o: object) -> None:
        if isinstance(o, ForegroundSpec) and o.package:
            out.setdefault(o.package)
        if isinstance(o, BaseModel):
            for name in type(o).model_fields:
                value = getattr(o, name, None)
                if name in _APP_FIELDS and isinstance(value, str):
                    if value:
                        out.setdefault(value)
                elif name == "solution" and isinstance(value, list):
                    for item in value:
                        args = item.get("open_app") if isinstance(item, dict) else None
                        if isinstance(args, dict) and isinstance(args.get("name"), str):
                            out.setdefault(args["name"])
                else:
                    walk(value)
        elif isinstance(o, (list, tuple)):
            for v in o:
                walk(v)
        elif isinstance(o, dict):
            for v in o.values():
                walk(v)
    walk(obj)
    return list(out)


def app_packages(instance: TaskInstance, apps: dict[str, str] | None = None) -> tuple[str, ...]:
    """The packages of the apps `instance` names (app_names), aliases resolved through `apps`
    (a phone profile's table; None: DEFAULT_APPS). UserError for an alias the table lacks."""
    return tuple(dict.fromkeys(resolve_app(n, apps) for n in app_names(instance)))


def needed_apps(tasks: Iterable[TaskInstance], apps: dict[str, str] | None = None) -> dict[str, str]:
    """Name as the tasks write it -> package, for every app some task of `tasks` names: what
    `agent-host phone check` and a run ask a phone's package list about."""
    out: dict[str, str] = {}
    for t in tasks:
        for n in app_names(t):
            if n not in out:
                out[n] = resolve_app(n, apps)
    return out


def _check_dump(check: BaseModel | None) -> JsonData:
    """A check back to its YAML shape (None: an infeasible task's)."""
    return None if check is None else check.model_dump(by_alias=True, exclude_none=True, mode="json")


def _instance_text(t: TaskInstance) -> str:
    return json.dumps([t.goal, _dump(t.setup), _dump(t.teardown), t.solution, _check_dump(t.check)])


def bind_phone(instance: TaskInstance, facts: PhoneFacts) -> TaskInstance:
    """The instance with `{phone.calendar_id}`, `{phone.timezone}` and `{phone.time:...}`
    replaced by what `facts` read from the phone it is about to run on (an instance without
    them comes back as it is). UnboundPhoneFact when the phone lacks a fact."""
    if not instance.needs_phone_facts:
        return instance

    def sub(data: JsonData) -> JsonData:
        if isinstance(data, str):
            return substitute_phone(data, facts)
        if isinstance(data, list):
            return [sub(x) for x in data]
        if isinstance(data, dict):
            return {k: sub(v) for k, v in data.items()}
        return data
    check = None if instance.check is None else _CHECK.validate_python(sub(_check_dump(instance.check)))
    return instance.model_copy(update=dict(
        goal=sub(instance.goal), setup=_STEPS.validate_python(sub(_dump(instance.setup))),
        teardown=_STEPS.validate_python(sub(_dump(instance.teardown))), check=check,
        solution=sub(instance.solution), phone_bound=True))



_STEPS = TypeAdapter(list[Step])
_CHECK = TypeAdapter(Check)
_ACTIONS = TypeAdapter(list[ScriptItem])


def _dump(steps: Iterable[BaseModel]) -> list[JsonData]:
    """Steps back to their YAML shape (`home` as the bare string)."""
    out: list[JsonData] = []
    for step in steps:
        kind = step_kind(step)
        out.append(kind if kind == "home" else step.model_dump(by_alias=True, exclude_none=True, mode="json"))
    return out


def _solution_dump(actions: Iterable[BaseModel]) -> list[dict[str, JsonData]]:
    out: list[dict[str, JsonData]] = []
    for a in actions:
        tool = item_action(a)
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
        scope = derive_scope(texts_of([_dump(setup), _dump(goal_setup), _dump(teardown), _check_dump(check)]),
                             task.app, task.change, task.scope)
        common = dict(id=iid, task_id=task.id, params=p, goal=_substitute(task.goal, p), app=task.app,
                      teardown=teardown, check=check, max_steps=task.max_steps, tags=list(task.tags),
                      infeasible=task.infeasible, solution=solution, source=source, sha256=sha256,
                      notes=task.notes, requires=tuple(task.requires), change=task.change, scope=scope,
                      vary_skip=tuple(task.vary.skip) if task.vary is not None else (),
                      vary_distractors=task.vary.distractors if task.vary is not None else None,
                      vary_full=task.vary.full if task.vary is not None else True,
                      vary_values=tuple(task.vary.values) if task.vary is not None else (),
                      vary_feasible=len(task.vary.feasible) if task.vary is not None else 0)
        if "base" in variants:
            out.append(TaskInstance(key=iid, variant="base", setup=setup, **common))
        if "verify" in variants and has_verify(task):
            out.append(TaskInstance(key=f"{iid}@verify", variant="verify", setup=setup + goal_setup, **common))
    return out


# Any: steps, check and solution as pydantic dumps them, for validating again
def _instance_parts(task: Task, params: dict[str, ParamValue]) -> tuple[dict[str, Any], list[tuple[Loc, str]]]:
    """Steps, check and solution with `params` substituted and validated again; and the
    errors, each with its field path (a parameter may make a value invalid, e.g. a regex).
    The parts are of different types, each its adapter's (a list of steps, a check, a list of
    script items), named by a key: Any, since the caller takes each part by its name."""
    sources: list[tuple[str, TypeAdapter[Any], JsonData]] = [
        ("setup", _STEPS, _dump(task.setup)), ("goal_setup", _STEPS, _dump(task.goal_setup)),
        ("teardown", _STEPS, _dump(task.teardown)),
        ("check", _CHECK, _check_dump(task.check)),
        ("solution", _ACTIONS, _solution_dump(task.solution)),
    ]
    parts: dict[str, Any] = {}
    errors: list[tuple[Loc, str]] = []
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


@functools.lru_cache(maxsize=64)
def _file_tasks(path: Path, sha256: str) -> dict[str, Task]:
    return {t.id: t for t in load_task_file(path)}


def overlay_choices(instance: TaskInstance) -> tuple[int, ...]:
    """What a varied phone's `values` kind draws from (`with_values`' k): each `vary.values`
    overlay, never the unvaried data (its answer is the one a memorised path knows); and for an
    infeasible task, each `vary.feasible` phone beside its infeasible form (the overlays, or
    the unvaried data where it has none). Empty: the task takes no `values`."""
    values = tuple(range(1, len(instance.vary_values) + 1))
    if not instance.vary_feasible:
        return values
    first = len(values) + 1
    return (values or (0,)) + tuple(range(first, first + instance.vary_feasible))


def with_values(instance: TaskInstance, k: int) -> TaskInstance:
    """The instance played with overlay `k` (`overlay_choices`; 0: as it is): its `k`-th
    `vary.values` overlay laid over its parameters, or past those its `vary.feasible` phones,
    expanded again from its file, keeping its id and key. What a varied phone's `values` kind
    plays (config/phone_variation.py), and what a scripted suite answers for it."""
    n = len(instance.vary_values)
    if k == 0 or not (n or instance.vary_feasible):
        return instance
    task = _file_tasks(instance.source, instance.sha256)[instance.task_id]
    i = (k - 1) % (n + instance.vary_feasible)    # a k past them (an older run's header) wraps, as it did
    if i < n:
        params = {**instance.params, **instance.vary_values[i]}
        one = task.model_copy(update={"params": [params], "instance_id": None})
    else:
        one = feasible_task(task, i - n, instance.params)
    out = expand(one, [instance.variant], source=instance.source, sha256=instance.sha256)[0]
    return out.model_copy(update={"id": instance.id, "key": instance.key})


def feasible_task(task: Task, j: int, params: dict[str, ParamValue]) -> Task:
    """Infeasible `task` on its `j`-th `vary.feasible` phone, with parameter set `params`: the
    feasible task that phone makes of it (its own check, change and solution; the phone's
    setup after the task's; no verify variant). It keeps its other variations."""
    assert task.vary is not None
    twin = task.vary.feasible[j]
    return task.model_copy(update={
        "params": [{**params, **twin.params}], "instance_id": None, "infeasible": False, "verify": False,
        "setup": [*task.setup, *twin.setup], "check": twin.check, "change": twin.change,
        "solution": list(twin.solution), "vary": task.vary.model_copy(update={"feasible": []})})


def has_verify(task: Task) -> bool:
    return task.verify and not task.infeasible and bool(task.goal_setup)


# ---------------------------------------------------------------------------------------------
# Loading

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
        items, nodes = [data], [node]
        prefixes: list[tuple[int, ...]] = [()]
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
            at = line_of(item_node, loc)
            messages.append(f"{path}:{at}: {format_loc(prefix + loc)}: {msg}" if at
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
            try:
                files = sorted(q for q in p.iterdir() if q.suffix in (".yaml", ".yml") and q.is_file())
            except OSError as exc:  # a folder we may not list
                raise UserError(f"{p}: cannot list the task folder ({exc.strerror or exc})") from None
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
    files_with_errors: int = 0


def collect(paths: Iterable[Path | str]) -> LoadReport:
    """Load every file, gathering all errors (per field, per file, and duplicate ids)."""
    report = LoadReport()
    first_seen: dict[str, Path] = {}
    for path in task_files(paths):
        report.files += 1
        tasks, messages, digest, id_lines = _file_messages(path)
        before = len(report.errors)
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
        report.files_with_errors += len(report.errors) > before
    return report


def load_tasks(specs: Iterable[str | Path] = (), variants: Iterable[str] = VARIANTS) -> list[TaskInstance]:
    """Task instances for specs: files, directories, or ids / instance ids / keys (`ID@verify`)
    looked up in the default tasks/ directory. No specs: every task in tasks/."""
    given = [str(s) for s in specs]
    variants = tuple(variants) or VARIANTS
    paths = [s for s in given if Path(s).exists() or s.endswith((".yaml", ".yml")) or "/" in s]
    names = [s for s in given if s not in paths]
    if not given:
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


def task_json_schema() -> dict[str, object]:
    """The JSON Schema of a task file (one task, or a list of tasks); editors validate with it."""
    schema = TypeAdapter(Union[Task, list[Task]]).json_schema(by_alias=True)
    # a step may be the bare string `home`, an action `press_back` / `press_home`
    for model, key, extra in (("Task", "setup", STEP_SCHEMA_EXTRA), ("Task", "goal_setup", STEP_SCHEMA_EXTRA),
                              ("Task", "teardown", STEP_SCHEMA_EXTRA), ("Task", "solution", ITEM_SCHEMA_EXTRA),
                              ("Feasible", "setup", STEP_SCHEMA_EXTRA), ("Feasible", "solution", ITEM_SCHEMA_EXTRA)):
        items = schema["$defs"][model]["properties"][key]["items"]
        if "oneOf" in items and extra:
            items["oneOf"].append({"type": "string", **extra})
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "agent-host task file",
            "description": "One task (a mapping) or a list of tasks; see docs/tasks.md.", **schema}
