"""The screen model as the compact text the model reads (`render`), and that text read back
(`parse_rendered`, for the policy server, which sees only what the model saw).

Rendered format (one element per line; strings are JSON string literals, so quotes, newlines
and non-ASCII text are unambiguous):

    app: com.android.settings  screen: 1080x2400
    [0] ViewGroup "Search settings" id=search_action_bar tap
    [1] LinearLayout "Battery" | "100%" tap
    [2] Switch "Wi-Fi" | "AndroidWifi" id=switch_widget checked=on tap
    [3] SeekBar "5.0" desc="Media volume" id=seekbar slide
    [4] EditText hint="First name" id=first_name focused tap type
    [5] ImageView at=540,1210 tap
    [6] ScrollView id=main_content_scrollable_container scroll
    -- com.android.systemui --
    [7] TextView "10:06" desc="10:06 PM"

Header: `app:` is the foreground package (the main window's package, not System UI when an
app window is present), `screen:` the size in pixels; `rotation:` appears when the display is
rotated, `window:` when the main window does not cover the screen (a dialog or sheet).
When the dump holds several windows, each starts with a `-- package --` line.

Element line: `[index] Class` then, each only when present: texts (`"title" | "summary"`;
a row's text children are merged into it), `desc=` (content-desc, left out when equal to a
text), `hint=`, `id=` (short resource id, left out when generic or obfuscated), `at=x,y`
(center, only for elements with no text, desc or id), states (`checked=on|off` on checkable
elements, `selected` on actionable non-checkable ones such as tabs, `disabled` on actionable
elements and list rows that are disabled, `focused` and `password` on text fields), then
affordances: `tap`, `long-press`, `type` (text field), `scroll`, `slide` (SeekBar: swipe
along it to change the value). `id=` is shown on actionable or unlabeled elements only.

`parse_rendered(render(screen))` gives back every element attribute the text shows (bounds
are not shown: they come back as the zero box, with `at=` centers where the text has them),
so `render(parse_rendered(text)) == text` for any text `render` wrote.
"""

from __future__ import annotations

import json
import re

from agent_host.phone.screen import Bounds, Element, Screen, Window, informative_id

MAX_TEXT = 200  # characters of one text shown to the model; longer texts end with "…"


def _q(s: str) -> str:
    if len(s) > MAX_TEXT:
        s = s[: MAX_TEXT - 1] + "…"
    return json.dumps(s, ensure_ascii=False)


def render_element(e: Element) -> str:
    parts = [f"[{e.index}] {e.cls}"]
    if e.texts:
        parts.append(" | ".join(_q(t) for t in e.texts))
    if e.descs:
        parts.append("desc=" + " | ".join(_q(d) for d in e.descs))
    if e.hint:
        parts.append("hint=" + _q(e.hint))
    show_id = informative_id(e.rid) and (
        not (e.texts or e.descs) or e.checkable or e.editable or e.scrollable or e.slider
        or e.clickable or e.long_clickable
    )
    if show_id:
        parts.append("id=" + e.rid)
    if not (e.texts or e.descs or e.hint or show_id):
        parts.append(f"at={e.center[0]},{e.center[1]}")
    if e.checkable:
        parts.append("checked=on" if e.checked else "checked=off")
    aff = e.affordances
    if e.selected and aff and not e.checkable:
        parts.append("selected")
    if not e.enabled and (aff or e.list_item):
        parts.append("disabled")
    if e.editable:
        if e.focused:
            parts.append("focused")
        if e.password:
            parts.append("password")
    parts.extend(aff)
    return " ".join(parts)


def _fmt_bounds(b: Bounds) -> str:
    return f"[{b[0]},{b[1]}][{b[2]},{b[3]}]"


def render(screen: Screen) -> str:
    head = f"app: {screen.package}  screen: {screen.width}x{screen.height}"
    if screen.rotation:
        head += f"  rotation: {screen.rotation}"
    if screen.windows:
        mb = screen.windows[screen.main_window].bounds
        if mb != (0, 0, screen.width, screen.height):
            head += f"  window: {_fmt_bounds(mb)}"
    lines = [head]
    used = {e.window for e in screen.elements}
    multi = len(used) > 1
    cur = -1
    for e in screen.elements:
        if multi and e.window != cur:
            cur = e.window
            lines.append(f"-- {screen.windows[cur].package} --")
        lines.append(render_element(e))
    if not screen.elements:
        lines.append("(no elements)")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- reading back

_LINE_RE = re.compile(r"^\[(\d+)\]\s+(\S+)\s*(.*)$")
_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|\||[^\s"|=]+(?:=(?:"(?:[^"\\]|\\.)*"|[^\s"|]*))?')
_HEADER_RE = re.compile(r"^app:\s*(\S*)\s+screen:\s*(\d+)x(\d+)(?:\s+rotation:\s*(-?\d+))?"
                        r"(?:\s+window:\s*\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\])?")
_WINDOW_RE = re.compile(r"^--\s+(\S+)\s+--$")
_AFFORDANCE_FLAGS = {"tap": "clickable", "long-press": "long_clickable", "type": "editable",
                     "scroll": "scrollable", "slide": "slider"}
_NO_BOX: Bounds = (0, 0, 0, 0)


def _element(index: int, cls: str, rest: str, package: str, window: int) -> Element:
    e = Element(index=index, cls=cls, text="", desc="", rid="", resource_id="", bounds=_NO_BOX,
                center=(0, 0), package=package, window=window)
    target: list[str] | None = e.texts
    for tok in _TOKEN_RE.findall(rest):
        if tok == "|":
            continue
        if tok.startswith('"'):
            if target is not None:
                target.append(json.loads(tok))
            continue
        key, eq, val = tok.partition("=")
        target = None
        if not eq:
            if key in _AFFORDANCE_FLAGS:
                setattr(e, _AFFORDANCE_FLAGS[key], True)
            elif key == "disabled":
                e.enabled = False
            elif key in ("selected", "focused", "password"):
                setattr(e, key, True)
            continue
        if key == "desc":
            target = e.descs
            target.append(json.loads(val))
        elif key == "hint":
            e.hint = json.loads(val)
        elif key == "id":
            e.rid = val
        elif key == "checked":
            e.checkable = True
            e.checked = val == "on"
        elif key == "at":
            x, _, y = val.partition(",")
            e.center = (int(x), int(y))
    e.text = e.texts[0] if e.texts else ""
    e.desc = e.descs[0] if e.descs else ""
    if not e.enabled and not e.affordances:
        e.list_item = True       # only a list row shows `disabled` without an affordance
    return e


def parse_rendered(text: str) -> Screen:
    """Read a rendered observation back into the screen model (see the module docstring for
    what survives). Lines that are not part of the format are skipped."""
    elements: list[Element] = []
    windows: list[Window] = []
    app, width, height, rotation, main_box = "", 0, 0, 0, None
    for raw in text.splitlines():
        line = raw.strip()
        m = _HEADER_RE.match(line)
        if m:
            app, width, height = m[1], int(m[2]), int(m[3])
            rotation = int(m[4] or 0)
            main_box = (int(m[5]), int(m[6]), int(m[7]), int(m[8])) if m[5] is not None else None
            continue
        m = _WINDOW_RE.match(line)
        if m:
            windows.append(Window(m[1], _NO_BOX))
            continue
        m = _LINE_RE.match(line)
        if m:
            window = max(len(windows) - 1, 0)
            package = windows[-1].package if windows else app
            elements.append(_element(int(m[1]), m[2], m[3], package, window))
    if not windows:
        windows = [Window(app, _NO_BOX)]
    main = next((i for i, w in enumerate(windows) if w.package == app), 0)
    full: Bounds = (0, 0, width, height)
    for i, w in enumerate(windows):
        w.bounds = (main_box or full) if i == main else full
    return Screen(elements=elements, package=app, width=width, height=height, rotation=rotation,
                  windows=windows, main_window=main)
