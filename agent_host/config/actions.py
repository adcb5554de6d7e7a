"""The agent's action vocabulary, defined once: each action's arguments (pydantic, with bounds).

Everything else is derived from `ACTIONS`: the OpenAI tool schemas and the validation of a
model's call (agent/tools.py), the system prompt's tool lines (agent/prompt.py), the items of
task solutions and policy scripts (`script_model`, `ScriptItem`: config/tasks.py and
policy/script.py), and how each action is performed on a phone and described to the model
(agent/perform.py, one row per action).

A model names an element by its `index` on the screen; a script may name it instead by a
selector (`text`, `text_contains`, `resource_id`, `desc`), resolved to an index against the
observation when it is played.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model, field_validator, model_validator
from pydantic_core import PydanticCustomError

from agent_host.config.strict import Strict, fail, one_key_union

MAX_INDEX = 999
MAX_TEXT = 500
MAX_REASON = 300
MAX_WAIT_S = 10.0
MAX_COORDINATE = 100_000   # a sanity bound; the screen's own is checked against the build's frame
MAX_SWIPE_S = 5.0
DIRECTIONS = ("up", "down", "left", "right")
SELECTOR_KEYS = ("text", "text_contains", "resource_id", "desc")


def _no_bool(v: object) -> object:
    # JSON true is not an index, though Python's bool is an int
    if isinstance(v, bool):
        raise PydanticCustomError("int_type", "must be an integer, got {v}", {"v": repr(v)})
    return v


def _lower(v: object) -> object:
    return v.strip().lower() if isinstance(v, str) else v


Index = Annotated[int, Field(ge=0, le=MAX_INDEX), BeforeValidator(_no_bool)]
Reason = Annotated[str, Field(max_length=MAX_REASON * 4, json_schema_extra={"maxLength": MAX_REASON})]
# A reason is advertised at MAX_REASON characters but accepted up to four times that: a model
# that overruns it has still ended the task, and wasting the step would mislabel the episode.


class Args(BaseModel):
    """A model call's arguments: unknown extra arguments are dropped (several servers' tool
    parsers add some); numbers written as strings ("3") are accepted."""
    model_config = ConfigDict(extra="ignore", frozen=True)


class NoArgs(Args):
    pass


class IndexArgs(Args):
    index: Index


class TypeTextArgs(Args):
    index: Index
    text: str = Field(max_length=MAX_TEXT)
    submit: bool = False


class SwipeArgs(Args):
    direction: Annotated[Literal["up", "down", "left", "right"], BeforeValidator(_lower)]
    index: Index | None = None


Coordinate = Annotated[int, Field(ge=0, le=MAX_COORDINATE), BeforeValidator(_no_bool)]


class PointArgs(Args):
    x: Coordinate
    y: Coordinate


class SwipeXYArgs(Args):
    x1: Coordinate
    y1: Coordinate
    x2: Coordinate
    y2: Coordinate
    duration: float = Field(0.3, ge=0.05, le=MAX_SWIPE_S)


class OpenAppArgs(Args):
    name: Annotated[str, BeforeValidator(_lower), Field(min_length=1, max_length=100)]


class WaitArgs(Args):
    # the schema asks the model for it; a call without it still waits the default
    model_config = ConfigDict(json_schema_extra={"required": ["seconds"]})
    seconds: float = Field(1.0, ge=0, le=MAX_WAIT_S)


class ReasonArgs(Args):
    model_config = ConfigDict(json_schema_extra={"required": ["reason"]})
    reason: Reason = ""


class AnswerArgs(Args):
    text: str = Field(max_length=MAX_TEXT)


@dataclass(frozen=True)
class ActionKind:
    """One action: its arguments and the words that explain it."""
    name: str
    args: type[Args]
    summary: str                  # the tool schema's description (terse: paid in every prefill)
    prompt: str | None            # its line in the system prompt; None: explained on another's line
    element: bool = False         # `index` names an element on screen (a script may use a selector)
    final: bool = False           # ends the episode
    bare: bool = False            # a script may write it as a plain string (`- press_back`)
    point: bool = False           # names screen points (x, y): offered only to a build with a
                                  # coordinate frame (config/observation.py), checked against it


ACTIONS: dict[str, ActionKind] = {a.name: a for a in (
    ActionKind("tap", IndexArgs, "Tap element [index].", "tap(index); long_press(index)", element=True),
    ActionKind("long_press", IndexArgs, "Touch and hold element [index].", None, element=True),
    ActionKind("type_text", TypeTextArgs, "Set the text of text field [index]; submit presses Enter.",
               "type_text(index, text, submit=false): set the text of a field marked `type`", element=True),
    ActionKind("swipe", SwipeArgs, "Swipe up/down/left/right, in element [index] or across the screen.",
               'swipe(direction, index?): up/down/left/right. "up" shows content further down a list; on a '
               'slider, "right" drags it to the maximum, "left" to the minimum', element=True),
    ActionKind("tap_xy", PointArgs, "Tap the point (x, y).", "tap_xy(x, y); long_press_xy(x, y)", point=True),
    ActionKind("long_press_xy", PointArgs, "Touch and hold the point (x, y).", None, point=True),
    ActionKind("swipe_xy", SwipeXYArgs, "Drag from (x1, y1) to (x2, y2) in duration seconds.",
               "swipe_xy(x1, y1, x2, y2, duration=0.3): drag a finger from one point to another", point=True),
    ActionKind("press_back", NoArgs, "Press Back.", "press_back(); press_home()", bare=True),
    ActionKind("press_home", NoArgs, "Press Home.", None, bare=True),
    ActionKind("open_app", OpenAppArgs, "Open an app.", "open_app(name): name is one of {apps}"),
    ActionKind("wait", WaitArgs, "Wait for the screen to change.", "wait(seconds): at most {max_wait:g}"),
    ActionKind("answer", AnswerArgs, "Give the answer the goal asks for (does not end the task).",
               "answer(text): when the goal asks a question, the answer; then call task_complete"),
    ActionKind("task_complete", ReasonArgs, "The goal is achieved (ends the task).",
               "task_complete(reason): the goal holds now, as the screen shows. Ends the task.", final=True),
    ActionKind("task_infeasible", ReasonArgs, "The goal cannot be achieved (ends the task).",
               "task_infeasible(reason): the goal cannot be achieved on this phone. Ends the task.", final=True),
)}

ACTION_NAMES = tuple(ACTIONS)
FINAL_ACTIONS = tuple(n for n, a in ACTIONS.items() if a.final)
ELEMENT_ACTIONS = tuple(n for n, a in ACTIONS.items() if a.element)
BARE_ACTIONS = tuple(n for n, a in ACTIONS.items() if a.bare)
POINT_ACTIONS = tuple(n for n, a in ACTIONS.items() if a.point)


def offered(coordinates: bool) -> tuple[str, ...]:
    """The actions a build is offered: the coordinate ones only where it has a frame, so a
    text build's tools and prompt stay as they always were."""
    return tuple(n for n, a in ACTIONS.items() if coordinates or not a.point)


def prompt_lines(apps: str, frame: str | None = None) -> list[str]:
    """The system prompt's tool lines; `apps`: the open_app names, comma-separated; `frame`:
    the coordinate frame in words (config/observation.py Frame.describe), None: no coordinate tools."""
    prompts = [ACTIONS[n].prompt for n in offered(frame is not None)]
    lines = [f"- {p.format(apps=apps, max_wait=MAX_WAIT_S)}" for p in prompts if p]
    if frame is not None:
        lines.append(f"- points: {frame}")
    return lines


# -- scripts (task solutions, policy scripts) ------------------------------------------------


class ScriptArgs(BaseModel):
    """A script item's arguments: written by a person, so unknown keys are errors, and a YAML
    number is taken as a string where a string is wanted (`text: 7` taps the dial's "7")."""
    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)


def _selector_rule(name: str) -> Callable[[BaseModel], BaseModel]:
    """Exactly one of index and the selectors (swipe: at most one); type_text's `text` is the
    text to type, so it cannot select."""
    keys = ("index",) + tuple(k for k in SELECTOR_KEYS if not (name == "type_text" and k == "text"))
    optional = name == "swipe"

    def check(self: BaseModel) -> BaseModel:
        given = [k for k in keys if getattr(self, k, None) is not None]
        if optional and len(given) > 1:
            raise fail(f"give at most one of {', '.join(keys)}")
        if not optional and len(given) != 1:
            raise fail(f"give exactly one of {', '.join(keys)}")
        return self
    return check


def _script_model(kind: ActionKind) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for fname, info in kind.args.model_fields.items():
        if kind.element and fname == "index":
            fields[fname] = (Index | None, None)
        else:
            fields[fname] = (info.annotation, info)
    validators: dict[str, Any] = {}   # pydantic's decorator proxies, which create_model's stub does not name
    if kind.element:
        for key in SELECTOR_KEYS:
            if key not in fields:
                fields[key] = (str | None, None)
        validators["_selector"] = model_validator(mode="after")(_selector_rule(kind.name))
    camel = "".join(p.title() for p in kind.name.split("_"))
    return create_model(f"{camel}Script", __base__=ScriptArgs, __module__=__name__,
                        __validators__=validators, **fields)


SCRIPT_MODELS: dict[str, type[BaseModel]] = {name: _script_model(kind) for name, kind in ACTIONS.items()}


def script_model(name: str) -> type[BaseModel]:
    """The model of a script item's arguments for action `name` (KeyError: no such action)."""
    return SCRIPT_MODELS[name]


def split_selector(name: str, args: Mapping[str, object]) -> tuple[dict[str, object], dict[str, str] | None]:
    """A validated script item's arguments as (call arguments, selector or None)."""
    if not ACTIONS[name].element:
        return dict(args), None
    keys = [k for k in SELECTOR_KEYS if not (name == "type_text" and k == "text")]
    selector = {k: str(args[k]) for k in keys if args.get(k) is not None}
    rest = {k: v for k, v in args.items() if k not in selector and v is not None}
    return rest, selector or None


# -- a script item: `{tool: {args}}` (task solutions; the one-key union of all actions) --------


def _none_is_empty(cls: type[BaseModel], v: object) -> object:
    return {} if v is None else v


def _item_model(tool: str, args: type[BaseModel]) -> type[BaseModel]:
    """A one-key model `{tool: args}` (`press_back:` with no value means no arguments)."""
    optional = not ACTIONS[tool].element and all(not f.is_required() for f in args.model_fields.values())
    default = Field(default_factory=args) if optional else Field()
    name = f"{''.join(p.title() for p in tool.split('_'))}Action"
    return type(name, (Strict,), {
        "__annotations__": {tool: args}, "__module__": __name__, tool: default,
        "_none": field_validator(tool, mode="before")(_none_is_empty),
    })


SCRIPT_ITEMS: dict[str, type[BaseModel]] = {name: _item_model(name, script_model(name)) for name in ACTIONS}
for _m in SCRIPT_ITEMS.values():
    _m.model_rebuild()
ScriptItem, ITEM_SCHEMA_EXTRA = one_key_union(SCRIPT_ITEMS, "action", bare=BARE_ACTIONS)


def item_action(item: BaseModel) -> str:
    """The action a validated script item performs."""
    return next(iter(type(item).model_fields))
