"""uiautomator2 JSON-RPC methods, answered from the world's view tree."""

from __future__ import annotations

import base64
import time
from typing import Any

from .core import RpcError
from .hierarchy import SCREEN_H, SCREEN_W, Node
from .screenshot import render
from .selectors import SelectorError, describe, find, find_all
from .ui import Ui

NOT_FOUND = -32002
POLL_S = 0.1

KEY_NAMES = {
    "home": 3, "back": 4, "left": 21, "right": 22, "up": 19, "down": 20, "center": 23, "menu": 82,
    "search": 84, "enter": 66, "delete": 67, "del": 67, "recent": 187, "volume_up": 24, "volume_down": 25,
    "volume_mute": 164, "camera": 27, "power": 26,
}


def _err(code: int, message: str) -> Exception:
    return RpcError(code, message)


def _not_found(sel: Any) -> Exception:
    return _err(NOT_FOUND, f"uiautomator.UiObjectNotFoundException: {describe(sel)}")


def _roots(w: Ui) -> list[Node]:
    return [win.root for win in w.windows()]


def _find(w: Ui, sel: Any) -> Node | None:
    try:
        return find(_roots(w), sel)
    except SelectorError as e:
        raise _err(-32602, f"java.lang.IllegalArgumentException: {e}") from e


def _bounds(b: tuple[int, int, int, int]) -> dict[str, int]:
    return {"left": b[0], "top": b[1], "right": b[2], "bottom": b[3]}


def obj_info(n: Node) -> dict[str, Any]:
    return {
        "bounds": _bounds(n.bounds), "visibleBounds": _bounds(n.bounds), "checkable": n.checkable,
        "checked": n.checked, "childCount": len(n.children), "className": n.cls, "clickable": n.clickable,
        "contentDescription": n.desc, "enabled": n.enabled, "focusable": n.focusable, "focused": n.focused,
        "longClickable": n.long_clickable, "packageName": n.pkg, "resourceName": n.rid or None,
        "scrollable": n.scrollable, "selected": n.selected, "text": n.text,
    }


def _wait(w: Ui, sel: Any, timeout_ms: float, want: bool) -> bool:
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


def _scroll_once(w: Ui, sel: Any, forward: bool) -> bool:
    """One page of UiScrollable scrolling; False when the container could not move."""
    n = _find(w, sel)
    if n is None:
        raise _not_found(sel)
    if n.on_scroll is None:
        return False
    before = w.dump()
    page = int((n.bounds[3] - n.bounds[1]) * 0.8)
    n.on_scroll(page if forward else -page)
    w.invalidate()
    return w.dump() != before


def _scroll(w: Ui, method: str, p: list[Any]) -> Any:
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


def _params(params: Any) -> list[Any]:
    if params is None:
        return []
    if isinstance(params, dict):
        return [params] if params else []
    return list(params)


def dispatch(w: Ui, method: str, params: Any) -> Any:
    p = _params(params)
    if method == "waitForExists":
        return _wait(w, p[0], p[1] if len(p) > 1 else 0, True)
    if method == "waitUntilGone":
        return _wait(w, p[0], p[1] if len(p) > 1 else 0, False)
    with w.lock:
        try:
            return _dispatch_locked(w, method, p)
        except (IndexError, TypeError, ValueError, KeyError) as e:
            # What the Java server answers for malformed arguments, instead of a Python traceback.
            raise _err(-32602, f"java.lang.IllegalArgumentException: {method}: {e!r}") from e


def _dispatch_locked(w: Ui, method: str, p: list[Any]) -> Any:
    if method == "dumpWindowHierarchy":
        depth = int(p[1]) if len(p) > 1 and p[1] is not None else 50
        return w.dump(depth, compressed=bool(p[0]) if p else False)
    if method == "click":
        if p and isinstance(p[0], dict):
            n = _find(w, p[0])
            if n is None:
                raise _not_found(p[0])
            w.tap(*n.center)
            return True
        x, y = int(p[0]), int(p[1])
        w.tap(x, y, long=len(p) > 2 and int(p[2]) >= 500)
        return True
    if method in ("swipe", "drag"):
        w.swipe(int(p[0]), int(p[1]), int(p[2]), int(p[3]))
        return True
    if method == "swipePoints":
        pts = [int(v) for v in p[0]]
        if len(pts) >= 4:
            w.swipe(pts[0], pts[1], pts[-2], pts[-1])
        return True
    if method == "pressKey":
        name = str(p[0]).lower()
        if name not in KEY_NAMES:
            raise _err(-32602, f"java.lang.IllegalArgumentException: unknown key {p[0]}")
        w.press_key(KEY_NAMES[name])
        return True
    if method == "pressKeyCode":
        w.press_key(int(p[0]))
        return True
    if method in ("setText", "clearTextField"):
        n = _find(w, p[0])
        if n is None:
            raise _not_found(p[0])
        if n.on_text is None:
            return False
        n.on_text("" if method == "clearTextField" else str(p[1] if len(p) > 1 and p[1] is not None else ""))
        w.invalidate()
        return True
    if method == "objInfo":
        n = _find(w, p[0])
        if n is None:
            raise _not_found(p[0])
        return obj_info(n)
    if method == "objInfoOfAllInstances":
        return [obj_info(n) for n in find_all(_roots(w), p[0])]
    if method == "count":
        return len(find_all(_roots(w), p[0]))
    if method == "exist":
        return _find(w, p[0]) is not None
    if method == "takeScreenshot":
        scale = float(p[0]) if p else 1.0
        quality = int(p[1]) if len(p) > 1 else 80
        return base64.b64encode(render(w, "JPEG", quality=quality, scale=scale)).decode("ascii")
    if method == "deviceInfo":
        return {
            "currentPackageName": w.top.pkg, "displayHeight": SCREEN_H, "displayWidth": SCREEN_W,
            "displayRotation": 0, "displaySizeDpX": 411, "displaySizeDpY": 914, "naturalOrientation": True,
            "productName": w.props()["ro.product.name"], "screenOn": True, "sdkInt": 34,
        }
    if method == "setClipboard":
        w.state.clipboard = str(p[1] if len(p) > 1 else (p[0] if p else ""))
        return None
    if method == "getClipboard":
        return w.state.clipboard
    if method == "pasteClipboard":
        w.type_text(w.state.clipboard)
        return None
    if method == "clearInputText":
        return None
    if method in SCROLLS:
        return _scroll(w, method, p)
    if method in ("openNotification", "openQuickSettings"):
        w.open_shade()
        return True
    if method in ("wakeUp", "sleep", "freezeRotation", "setOrientation", "clearLastToast",
                  "clearLastTraversedText", "makeToast"):
        return True
    if method in ("getLastToast", "getLastTraversedText"):
        return None
    raise _err(-32601, f"Method not found: {method}")
