"""uiautomator2 JSON-RPC methods, answered from the world's view tree.

`METHODS` maps each method the uiautomator2 server answers to its handler; a name not in it is
`-32601 Method not found`, as from the real server. Methods that take a UiObject accept either
a selector (JSON object) or the string id that `childByText` and its siblings return, as the
server's AutomatorServiceImpl does (ids name a stored lookup, re-resolved on every use).

Timed calls take their time, as UiDevice does: swipes, drags and two-finger gestures inject
one step each 5 ms, a long click holds for its milliseconds. The world's lock is released while
a gesture runs (other calls go on meanwhile) and the gesture lands when it ends.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeAlias, TypedDict

from .core import RpcError
from .hierarchy import SCREEN_H, SCREEN_W, Node
from .json_value import Json, JsonObject, as_float, as_int, as_iterable
from .screenshot import render
from .selectors import SelectorError, describe, find, find_all
from .touch import LONG_PRESS_S
from .ui import Ui

NOT_FOUND = -32002
POLL_S = 0.1
STEP_S = 0.005          # UiDevice throttles each injected step to 5 ms
MAX_HOLD_S = 60.0       # a runaway step count cannot pin a server thread for longer

KEY_NAMES = {
    "home": 3, "back": 4, "left": 21, "right": 22, "up": 19, "down": 20, "center": 23, "menu": 82,
    "search": 84, "enter": 66, "delete": 67, "del": 67, "recent": 187, "volume_up": 24, "volume_down": 25,
    "volume_mute": 164, "camera": 27, "power": 26,
}


def _err(code: int, message: str) -> Exception:
    return RpcError(code, message)


def _not_found(sel: Json) -> Exception:
    what = sel if isinstance(sel, str) else describe(sel)
    return _err(NOT_FOUND, f"uiautomator.UiObjectNotFoundException: {what}")


def _roots(w: Ui) -> list[Node]:
    return [win.root for win in w.shown_windows()]


def _find(w: Ui, sel: Json) -> Node | None:
    if isinstance(sel, str):
        return _stored(w, sel)(w)
    try:
        return find(_roots(w), sel)
    except SelectorError as e:
        raise _err(-32602, f"java.lang.IllegalArgumentException: {e}") from e


def _find_all(w: Ui, sel: Json) -> list[Node]:
    if isinstance(sel, str):
        n = _stored(w, sel)(w)
        return [n] if n is not None else []
    try:
        return find_all(_roots(w), sel)
    except SelectorError as e:
        raise _err(-32602, f"java.lang.IllegalArgumentException: {e}") from e


def _stored(w: Ui, key: str) -> Callable[[Ui], Node | None]:
    lookup = w.rpc_objects.get(key)
    if lookup is None:
        raise _err(NOT_FOUND, f"uiautomator.UiObjectNotFoundException: UiObject {key} not found!")
    return lookup


def _must(w: Ui, sel: Json) -> Node:
    n = _find(w, sel)
    if n is None:
        raise _not_found(sel)
    return n


class Bounds(TypedDict):
    left: int
    top: int
    right: int
    bottom: int


class ObjInfo(TypedDict):
    """`objInfo`'s answer: the UiObject fields the client's `.info` reads."""
    bounds: Bounds
    visibleBounds: Bounds
    checkable: bool
    checked: bool
    childCount: int
    className: str
    clickable: bool
    contentDescription: str
    enabled: bool
    focusable: bool
    focused: bool
    longClickable: bool
    packageName: str
    resourceName: str | None
    scrollable: bool
    selected: bool
    text: str


# What a method answers (sent back as the JSON-RPC result), and what its handler returns: that,
# or a gesture that takes its time before it lands.
Result: TypeAlias = "Json | ObjInfo | list[ObjInfo]"
Reply: TypeAlias = "Result | Timed"
Handler: TypeAlias = "Callable[[Ui, list[Json]], Reply]"


def _bounds(b: tuple[int, int, int, int]) -> Bounds:
    return {"left": b[0], "top": b[1], "right": b[2], "bottom": b[3]}


def obj_info(n: Node) -> ObjInfo:
    return {
        "bounds": _bounds(n.bounds), "visibleBounds": _bounds(n.bounds), "checkable": n.checkable,
        "checked": n.checked, "childCount": len(n.children), "className": n.cls, "clickable": n.clickable,
        "contentDescription": n.desc, "enabled": n.enabled, "focusable": n.focusable, "focused": n.focused,
        "longClickable": n.long_clickable, "packageName": n.pkg, "resourceName": n.rid or None,
        "scrollable": n.scrollable, "selected": n.selected, "text": n.text,
    }


def _wait(w: Ui, sel: Json, timeout_ms: float, want: bool) -> bool:
    deadline = time.monotonic() + max(0.0, float(timeout_ms)) / 1000.0
    while True:
        with w.lock:
            if (_find(w, sel) is not None) == want:
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)  # lock released: shell and other calls go on meanwhile


SCROLLS = ("scrollForward", "scrollBackward", "flingForward", "flingBackward", "scrollToBeginning",
           "scrollToEnd", "flingToBeginning", "flingToEnd", "scrollTo")


def _scroll_once(w: Ui, sel: Json, forward: bool) -> bool:
    """One page of UiScrollable scrolling; False when the container could not move."""
    n = _must(w, sel)
    if n.on_scroll is None:
        return False
    before = w.dump()
    page = int((n.bounds[3] - n.bounds[1]) * 0.8 / w.density_scale)   # n as shown; scrolled as built
    n.on_scroll(page if forward else -page)
    w.invalidate()
    return w.dump() != before


def _scroll(w: Ui, method: str, p: list[Json]) -> bool:
    sel = p[0]
    if method == "scrollTo":
        for _ in range(50):
            if _find(w, p[1]) is not None:
                return True
            if not _scroll_once(w, sel, True):
                return _find(w, p[1]) is not None
        return False
    forward = "Forward" in method or "End" in method
    if "Beginning" in method or "End" in method:
        while _scroll_once(w, sel, forward):
            pass
        return True
    return _scroll_once(w, sel, forward)



def _scrolled(w: Ui, method: str, p: list[Json]) -> bool:
    """A UiScrollable call: swipes on a phone, one user input here (however far it scrolls)."""
    result = _scroll(w, method, p)
    w.note_input()
    return result


def _params(params: Json) -> list[Json]:
    if params is None:
        return []
    if isinstance(params, dict):
        return [params] if params else []
    return list(as_iterable(params))


@dataclass(frozen=True)
class Timed:
    """A gesture that lasts `seconds`: `land` runs (under the lock again) when it ends."""
    seconds: float
    land: Callable[[], bool]


def _steps_s(steps: Json) -> float:
    return min(MAX_HOLD_S, max(0, as_int(steps)) * STEP_S)


def dispatch(w: Ui, method: str, params: Json) -> Result:
    p = _params(params)
    if method == "waitForExists":
        return _wait(w, p[0], as_float(p[1]) if len(p) > 1 else 0, True)
    if method == "waitUntilGone":
        return _wait(w, p[0], as_float(p[1]) if len(p) > 1 else 0, False)
    handler = METHODS.get(method)
    if handler is None:
        raise _err(-32601, f"Method not found: {method}")
    try:
        with w.lock:
            result = handler(w, p)
        if isinstance(result, Timed):
            time.sleep(result.seconds)   # lock released: the phone goes on while the finger moves
            with w.lock:
                result = result.land()
        return result
    except (IndexError, TypeError, ValueError, KeyError) as e:
        # What the Java server answers for malformed arguments, instead of a Python traceback.
        raise _err(-32602, f"java.lang.IllegalArgumentException: {method}: {e!r}") from e


# --- touch ------------------------------------------------------------------------------------

def _click(w: Ui, p: list[Json]) -> bool | Timed:
    if p and isinstance(p[0], (dict, str)):
        n = _must(w, p[0])
        w.tap(*n.center)
        return True
    x, y = as_int(p[0]), as_int(p[1])
    if x < 0 or y < 0:
        return False
    if len(p) > 2 and p[2] is not None:
        ms = as_int(p[2])   # click(x, y, ms): touch down, hold, up
        return Timed(min(MAX_HOLD_S, ms / 1000.0), partial(_tapped, w, x, y, ms / 1000.0 >= LONG_PRESS_S))
    w.tap(x, y)
    return True


def _tapped(w: Ui, x: int, y: int, long: bool) -> bool:
    w.tap(x, y, long=long)
    return True


def _long_click(w: Ui, p: list[Json]) -> Timed:
    n = _must(w, p[0])
    x, y = n.center
    return Timed(LONG_PRESS_S + 0.1, partial(_tapped, w, x, y, True))


def _swipe_now(w: Ui, fx: int, fy: int, tx: int, ty: int) -> bool:
    w.swipe(fx, fy, tx, ty)
    return True


def _swipe(w: Ui, p: list[Json]) -> bool | Timed:
    if p and isinstance(p[0], (dict, str)):
        return _swipe_object(w, p)
    fx, fy, tx, ty = (as_int(v) for v in p[:4])
    steps = p[4] if len(p) > 4 else 100
    return Timed(_steps_s(steps), lambda: _swipe_now(w, fx, fy, tx, ty))


def _swipe_object(w: Ui, p: list[Json]) -> bool | Timed:
    """UiObject.swipeUp/Down/Left/Right(steps): across the object, 5 px inside its edges."""
    left, top, right, bottom = _must(w, p[0]).bounds
    cx, cy = (left + right) // 2, (top + bottom) // 2
    ends = {"u": ((cx, bottom - 5), (cx, top + 5)), "d": ((cx, top + 5), (cx, bottom - 5)),
            "l": ((right - 5, cy), (left + 5, cy)), "r": ((left + 5, cy), (right - 5, cy))}
    d = str(p[1]).lower()[:1]
    if d not in ends:
        return False
    (fx, fy), (tx, ty) = ends[d]
    steps = p[-1] if len(p) > 2 else 10
    return Timed(_steps_s(steps), lambda: _swipe_now(w, fx, fy, tx, ty))


def _swipe_points(w: Ui, p: list[Json]) -> bool | Timed:
    pts = [as_int(v) for v in as_iterable(p[0])]
    steps = p[1] if len(p) > 1 else 0
    if len(pts) < 4:
        return True
    return Timed(_steps_s(as_int(steps) * (len(pts) // 2 - 1)),
                 lambda: _swipe_now(w, pts[0], pts[1], pts[-2], pts[-1]))


def _drag_to(w: Ui, p: list[Json]) -> Timed:
    """dragTo(obj, x, y, steps) or dragTo(obj, destObj, steps): from the object's centre."""
    fx, fy = _must(w, p[0]).center
    if isinstance(p[1], (dict, str)):
        tx, ty = _must(w, p[1]).center
        steps = p[2] if len(p) > 2 else 40
    else:
        tx, ty = as_int(p[1]), as_int(p[2])
        steps = p[3] if len(p) > 3 else 40
    return Timed(_steps_s(steps), lambda: _swipe_now(w, fx, fy, tx, ty))


def _two_finger(w: Ui, obj: Json, steps: Json) -> Timed:
    # No app here zooms or rotates: the gesture takes its time and lands on nothing.
    _must(w, obj)
    return Timed(_steps_s(steps), lambda: True)


def _pinch(w: Ui, p: list[Json]) -> Timed:
    percent = as_int(p[1]) if len(p) > 1 else 100
    if not 0 <= percent <= 100:
        raise _err(-32602, "java.lang.IllegalArgumentException: Percent must be between 0 and 100")
    return _two_finger(w, p[0], p[2] if len(p) > 2 else 50)


def _gesture(w: Ui, p: list[Json]) -> Timed:
    for pt in p[1:-1]:
        _point(pt)   # malformed points are an IllegalArgumentException
    return _two_finger(w, p[0], p[-1])


def _point(pt: Json) -> tuple[int, int]:
    if not isinstance(pt, dict):
        raise TypeError(f"a point is an object with x and y, not {type(pt).__name__}")
    return as_int(pt["x"]), as_int(pt["y"])


def _inject(w: Ui, p: list[Json]) -> bool:
    action, x, y = as_int(p[0]), int(as_float(p[1])), int(as_float(p[2]))
    try:
        g = w.touch.event(action, x, y)
    except ValueError:
        return False     # AutomatorServiceImpl.injectInputEvent answers false for other actions
    if g is not None:
        if g.kind == "drag":
            w.swipe(*g.start, *g.end)
        else:
            w.tap(*g.start, long=g.kind == "long")
    return True


def _press_key(w: Ui, p: list[Json]) -> bool:
    name = str(p[0]).lower()
    if name not in KEY_NAMES:
        return False
    w.press_key(KEY_NAMES[name])
    return True


def _press_key_code(w: Ui, p: list[Json]) -> bool:
    w.press_key(as_int(p[0]))
    return True


# --- text -------------------------------------------------------------------------------------

def _set_text(w: Ui, p: list[Json], clear: bool = False) -> bool:
    n = _must(w, p[0])
    if n.on_text is None:
        return False
    n.on_text("" if clear else str(p[1] if len(p) > 1 and p[1] is not None else ""))
    w.invalidate()
    w.note_input()
    return True


def _clear_input_text(w: Ui, p: list[Json]) -> None:
    """The server empties the focused text field (nothing when no field has focus)."""
    n = w.focused_field()
    if n is not None and n.on_text is not None:
        n.on_text("")
        w.invalidate()
    return None


def _get_text(w: Ui, p: list[Json]) -> str:
    return _must(w, p[0]).text


def _paste(w: Ui, p: list[Json]) -> None:
    w.type_text(w.state.clipboard)
    return None


def _set_clipboard(w: Ui, p: list[Json]) -> None:
    w.state.clipboard = str(p[1] if len(p) > 1 else (p[0] if p else ""))
    return None


# --- UiCollection children ----------------------------------------------------------------------

def _child_lookup(coll: Json, child: Json, pick: Callable[[list[Node]], Node | None]) -> Callable[[Ui], Node | None]:
    def lookup(w: Ui) -> Node | None:
        parent = _find(w, coll)
        if parent is None:
            return None
        try:
            return pick(find_all(parent.children, child))
        except SelectorError as e:
            raise _err(-32602, f"java.lang.IllegalArgumentException: {e}") from e
    return lookup


def _having(attr: str, value: str) -> Callable[[list[Node]], Node | None]:
    # UiCollection.getChildByText: the first childPattern match with `value` anywhere inside it.
    def pick(nodes: list[Node]) -> Node | None:
        return next((n for n in nodes if any(getattr(m, attr) == value for m in n.walk())), None)
    return pick


def _store(w: Ui, lookup: Callable[[Ui], Node | None], what: str) -> str:
    if lookup(w) is None:
        raise _err(NOT_FOUND, f"uiautomator.UiObjectNotFoundException: {what}")
    key = str(uuid.uuid4())
    w.rpc_objects[key] = lookup
    return key


def _child_by(attr: str) -> Handler:
    def handler(w: Ui, p: list[Json]) -> str:
        coll, child, value = p[0], p[1], str(p[2])
        lookup = _child_lookup(coll, child, _having(attr, value))
        # Without the flag the server takes a UiScrollable (which scrolls) for a scrollable collection.
        allow = bool(p[3]) if len(p) > 3 else bool(getattr(_find(w, coll), "scrollable", False))
        if allow and lookup(w) is None and _find(w, coll) is not None:
            # UiScrollable.scrollIntoView: from the beginning, a page at a time until it shows.
            while _scroll_once(w, coll, False):
                pass
            while lookup(w) is None and _scroll_once(w, coll, True):
                pass
        return _store(w, lookup, f"{describe(child) if isinstance(child, dict) else child} with {attr} {value!r}")
    return handler


def _child_by_instance(w: Ui, p: list[Json]) -> str:
    coll, child, inst = p[0], p[1], as_int(p[2])
    lookup = _child_lookup(coll, child, lambda nodes: nodes[inst] if 0 <= inst < len(nodes) else None)
    return _store(w, lookup, f"{describe(child) if isinstance(child, dict) else child} instance {inst}")


# --- the rest ---------------------------------------------------------------------------------

def _ui_objects(w: Ui, p: list[Json]) -> list[Json]:
    return list(w.rpc_objects)


def _dump(w: Ui, p: list[Json]) -> str:
    depth = as_int(p[1]) if len(p) > 1 and p[1] is not None else 50
    return w.dump(depth, compressed=bool(p[0]) if p else False)


def _screenshot(w: Ui, p: list[Json]) -> str:
    scale = as_float(p[0]) if p else 1.0
    quality = as_int(p[1]) if len(p) > 1 else 80
    return base64.b64encode(render(w, "JPEG", quality=quality, scale=scale)).decode("ascii")


def _device_info(w: Ui, p: list[Json]) -> JsonObject:
    return {
        "currentPackageName": w.top.pkg, "displayHeight": SCREEN_H, "displayWidth": SCREEN_W,
        "displayRotation": 0, "displaySizeDpX": SCREEN_W * 160 // w.state.density,
        "displaySizeDpY": SCREEN_H * 160 // w.state.density, "naturalOrientation": True,
        "productName": w.props()["ro.product.name"], "screenOn": True, "sdkInt": 34,
    }


def _shade(w: Ui, p: list[Json]) -> bool:
    w.open_shade()
    return True


def _const(value: Json) -> Handler:
    return lambda w, p: value


METHODS: dict[str, Handler] = {
    "dumpWindowHierarchy": _dump,
    "click": _click,
    "longClick": _long_click,
    "swipe": _swipe,
    "drag": _swipe,
    "swipePoints": _swipe_points,
    "dragTo": _drag_to,
    "pinchIn": _pinch,
    "pinchOut": _pinch,
    "gesture": _gesture,
    "injectInputEvent": _inject,
    "pressKey": _press_key,
    "pressKeyCode": _press_key_code,
    "setText": _set_text,
    "clearTextField": lambda w, p: _set_text(w, p, clear=True),
    "clearInputText": _clear_input_text,
    "getText": _get_text,
    "objInfo": lambda w, p: obj_info(_must(w, p[0])),
    "objInfoOfAllInstances": lambda w, p: [obj_info(n) for n in _find_all(w, p[0])],
    "count": lambda w, p: len(_find_all(w, p[0])),
    "exist": lambda w, p: _find(w, p[0]) is not None,
    "childByText": _child_by("text"),
    "childByDescription": _child_by("desc"),
    "childByInstance": _child_by_instance,
    "removeUiObject": lambda w, p: w.rpc_objects.pop(str(p[0]), None) and None,
    "getUiObjects": _ui_objects,
    "takeScreenshot": _screenshot,
    "deviceInfo": _device_info,
    "setClipboard": _set_clipboard,
    "getClipboard": lambda w, p: w.state.clipboard,
    "pasteClipboard": _paste,
    "openNotification": _shade,
    "openQuickSettings": _shade,
    **{m: (lambda m: lambda w, p: _scrolled(w, m, p))(m) for m in SCROLLS},
    **{m: _const(True) for m in ("wakeUp", "sleep", "freezeRotation", "setOrientation", "clearLastToast",
                                 "clearLastTraversedText", "makeToast")},
    **{m: _const(None) for m in ("getLastToast", "getLastTraversedText")},
}
