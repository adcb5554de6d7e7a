"""How each action (config/actions.py) is performed on a phone and described to the model.

`PERFORM` is the one table: action name -> (perform, describe). `perform(phone, args, el,
screen, profile, action)` acts (el: the element `index` names, or None) and fills the
Action's screen points; `describe(args, label)` is the result line the model reads next.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from agent_host.agent.tools import points
from agent_host.config.actions import ACTIONS
from agent_host.config.observation import Frame
from agent_host.config.phones import PhoneProfile
from agent_host.config.records import Action
from agent_host.config.requests import Json
from agent_host.phone.device import Phone
from agent_host.phone.screen import Element, Screen


def swipe_points(direction: str, bounds: tuple[int, int, int, int], *,
                 slider: bool = False) -> tuple[tuple[int, int], tuple[int, int]]:
    """Finger start and end for a swipe inside `bounds` (l, t, r, b): across the middle half
    for a list or the screen (a scroll, not a fling); from the middle to the end of the track
    for a slider (a drag to its end, as a person sets a slider to its maximum or minimum)."""
    l, t, r, b = bounds
    cx, cy = (l + r) // 2, (t + b) // 2
    w, h = r - l, b - t
    if slider:
        ends = {"up": (cx, t + 1), "down": (cx, b - 2), "left": (l + 1, cy), "right": (r - 2, cy)}
        return (cx, cy), ends[direction]
    if direction == "up":
        return (cx, t + int(h * 0.75)), (cx, t + int(h * 0.25))
    if direction == "down":
        return (cx, t + int(h * 0.25)), (cx, t + int(h * 0.75))
    if direction == "left":
        return (l + int(w * 0.8), cy), (l + int(w * 0.2), cy)
    return (l + int(w * 0.2), cy), (l + int(w * 0.8), cy)


def _screen_bounds(screen: Screen) -> tuple[int, int, int, int]:
    w, h = screen.width or 1080, screen.height or 2400
    return (0, int(h * 0.15), w, int(h * 0.85))


def _profile(profile: PhoneProfile | None) -> PhoneProfile:
    assert profile is not None, "the step loop passes the run's phone profile"
    return profile


def _needed(el: Element | None) -> Element:
    assert el is not None, "an action on an element is performed only once its index resolved"
    return el


def _tap(phone: Phone, args: Json, el: Element | None, screen: Screen, profile: PhoneProfile | None,
         action: Action) -> None:
    el = _needed(el)
    action.point = el.center
    phone.tap(*el.center)


def _long_press(phone: Phone, args: Json, el: Element | None, screen: Screen, profile: PhoneProfile | None,
                action: Action) -> None:
    el = _needed(el)
    action.point = el.center
    phone.long_press(*el.center)


def _type_text(phone: Phone, args: Json, el: Element | None, screen: Screen, profile: PhoneProfile | None,
               action: Action) -> None:
    el = _needed(el)
    action.point = el.center
    if not phone.type_text(*el.center, args["text"], bool(args.get("submit"))):
        action.error = f"element {el.index} did not take text input (no focused text field)"


def _swipe(phone: Phone, args: Json, el: Element | None, screen: Screen, profile: PhoneProfile | None,
           action: Action) -> None:
    bounds = el.bounds if el is not None else _screen_bounds(screen)
    start, end = swipe_points(args["direction"], bounds, slider=bool(el is not None and el.slider))
    action.point, action.to = start, end
    phone.swipe(start[0], start[1], end[0], end[1], 0.3)


def _point(action: Action) -> tuple[int, int]:
    assert action.point is not None, "act() maps a point action's coordinates to the phone first"
    return action.point


def _tap_xy(phone: Phone, args: Json, el: Element | None, screen: Screen, profile: PhoneProfile | None,
            action: Action) -> None:
    phone.tap(*_point(action))


def _long_press_xy(phone: Phone, args: Json, el: Element | None, screen: Screen, profile: PhoneProfile | None,
                   action: Action) -> None:
    phone.long_press(*_point(action))


def _swipe_xy(phone: Phone, args: Json, el: Element | None, screen: Screen, profile: PhoneProfile | None,
              action: Action) -> None:
    (x1, y1), end = _point(action), action.to
    assert end is not None, "act() maps both of swipe_xy's points"
    phone.swipe(x1, y1, end[0], end[1], float(args.get("duration", 0.3)))


def _nothing(phone: Phone, args: Json, el: Element | None, screen: Screen, profile: PhoneProfile | None,
             action: Action) -> None:
    pass


def _on_element(name: str) -> Callable[[Json, str], str]:
    return lambda args, label: f"ok: {name.replace('_', ' ')} on element {args['index']}{label}"


def _typed(args: Json, label: str) -> str:
    return (f"ok: typed {json.dumps(args['text'], ensure_ascii=False)} into element {args['index']}{label}"
            + (" and pressed Enter" if args.get("submit") else ""))


def _plain(name: str) -> Callable[[Json, str], str]:
    return lambda args, label: f"ok: {name}"


Perform = Callable[[Phone, Json, Element | None, Screen, PhoneProfile | None, Action], None]
Describe = Callable[[Json, str], str]

PERFORM: dict[str, tuple[Perform, Describe]] = {
    "tap": (_tap, _on_element("tap")),
    "long_press": (_long_press, _on_element("long_press")),
    "type_text": (_type_text, _typed),
    "swipe": (_swipe, lambda a, label: f"ok: swiped {a['direction']}"
              + (f" in element {a['index']}" if "index" in a else "")),
    "tap_xy": (_tap_xy, lambda a, label: f"ok: tapped ({a['x']}, {a['y']})"),
    "long_press_xy": (_long_press_xy, lambda a, label: f"ok: long-pressed ({a['x']}, {a['y']})"),
    "swipe_xy": (_swipe_xy, lambda a, label: f"ok: swiped from ({a['x1']}, {a['y1']}) to ({a['x2']}, {a['y2']})"),
    "press_back": (lambda phone, *_: phone.press("back"), _plain("press_back")),
    "press_home": (lambda phone, *_: phone.press("home"), _plain("press_home")),
    "open_app": (lambda phone, args, el, screen, profile, action: phone.launch(_profile(profile).package(args["name"])),
                 lambda a, label: f"ok: opened {a['name']}"),
    "wait": (lambda phone, args, *_: time.sleep(float(args.get("seconds", 1.0))),
             lambda a, label: f"ok: waited {a['seconds']:g} s"),
    # the episode keeps the latest answer for the judge; the phone is not touched
    "answer": (_nothing, lambda a, label: f"ok: answer recorded: {json.dumps(a['text'], ensure_ascii=False)}"),
    "task_complete": (_nothing, _plain("task_complete")),
    "task_infeasible": (_nothing, _plain("task_infeasible")),
}
assert set(PERFORM) == set(ACTIONS), "every action needs a row in PERFORM"


def _element(args: Json, screen: Screen) -> Element | None:
    if "index" not in args:
        return None
    return next((e for e in screen.elements if e.index == args["index"]), None)


def act(phone: Phone, name: str, args: Json, screen: Screen, profile: PhoneProfile | None,
        frame: Frame | None = None) -> Action:
    """Perform a validated call; returns the Action with its screen point(s) (error set when the
    phone could not do it for a reason that is the model's, e.g. a field that takes no text).
    A point action's coordinates, in the build's `frame`, are mapped to the phone's pixels here."""
    action = Action(name=name, args=args)
    if ACTIONS[name].point:
        assert frame is not None, "validation lets point actions through only with a frame"
        phone_points = [frame.to_phone(x, y) for x, y in points(args)]
        action.point = phone_points[0]
        action.to = phone_points[1] if len(phone_points) > 1 else None
    el = _element(args, screen)
    if ACTIONS[name].element and "index" in args:
        assert el is not None, "validation lets only indices on screen through"
    PERFORM[name][0](phone, args, el, screen, profile, action)
    return action


def describe_result(action: Action, screen: Screen) -> str:
    if action.error:
        return f"error: {action.error}"
    el = _element(action.args, screen)
    label = f' ("{el.text or el.desc}")' if el is not None and (el.text or el.desc) else ""
    return PERFORM[action.name][1](action.args, label)
