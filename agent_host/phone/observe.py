"""Observation: a uiautomator hierarchy dump -> UI elements -> the compact text the model reads.

`parse(xml) -> Screen`, `render(screen) -> str`, `parse_rendered(text) -> list[dict]`,
`find(elements, text=..., text_contains=..., resource_id=..., desc=...)`, and
`explain(xml, needle)` (which element shows a label, or why none does; `agent-host observe --why`).

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

Rules (see the module's functions for details):
- kept: visible (visible-to-user not false), non-zero area after clipping to the screen;
  dropped: wrappers with no text, no desc, no action, not checkable (their children still count).
- a tap target (clickable or long-clickable node; also a ListView item, which Android reports
  as not clickable) takes the text and desc of its non-actionable descendants, unless it is a
  container (more than 12 texts, two or more nested tap targets, or over half the screen).
- a checkable descendant that is not itself clickable (AOSP SwitchPreference) is merged into
  its row: the row becomes `Switch "Wi-Fi" checked=on tap`. A checkable that is its own tap
  target stays its own element; when it has no name of its own (or only a state word such as
  "On" or "关闭", see STATE_WORDS), it is named by its row's title:
  `Switch "Back Up My Data" checked=off tap`, `Switch "OEM 解锁" | "关闭" checked=off tap`.
- a text of only invisible characters (icon-font glyphs, zero-width spaces) or the literal
  "null" counts as empty; a desc that the texts already say is not repeated; a merged text
  already contained in the element's texts is not repeated.
- the screen size is the full-screen window's; a dump holding only a dialog or sheet gives a
  best guess (`Screen.size_estimated`), which `parse(xml, screen=(w, h))` overrides.
- a clickable node with the same bounds as the tap target it sits in is folded into it.
- indices are the document order of kept elements, so the same dump always gives the same
  indices.
"""

from __future__ import annotations

import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from typing import Any

from agent_host.phone.observe_select import find, parse_rendered  # noqa: F401  (re-exported)

Bounds = tuple[int, int, int, int]

MAX_TEXT = 200  # characters of one text shown to the model; longer texts end with "…"
MAX_MERGED_TEXTS = 12  # a tap target with more text descendants is a container, not a row
CONTAINER_AREA = 0.5  # a tap target covering more than this share of the screen is a container
SYSTEM_UI = "com.android.systemui"

# Resource ids whose short name says nothing the text does not already say.
_GENERIC_IDS = frozenset(
    {"title", "summary", "text", "text1", "text2", "icon", "content", "message", "label",
     "subtitle", "widget_frame", "icon_frame", "text_frame", "list", "image"}
)
_SLIDERS = ("SeekBar", "RatingBar", "Slider")
_TRUE = "true"
_DESC_SPLIT = re.compile(r"[,，;；\n]")
_HEADER_WORDS = ("category", "header", "divider")
# A switch whose only text is its state is named by its row's title (the state stays as a
# second text): vivo's Switch "关闭", Samsung's "On"/"Off".
STATE_WORDS = frozenset(
    "on off an aus ein sí si no yes oui non ligado desligado ativado desativado activado desactivado "
    "attivo disattivo activé désactivé включено выключено вкл выкл bật tắt açık kapalı 开启 关闭 开 关 "
    "開啟 關閉 開 關 已开启 已关闭 オン オフ 켜짐 꺼짐".split()
)
_BOUNDS_RE = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")
# Common display aspect ratios (long side / short side), to tell a bottom-anchored window's
# screen height from a centered one's when the dump has no full-screen window.
_RATIOS = (4 / 3, 16 / 10, 5 / 3, 16 / 9, 2.0, 19 / 9, 19.5 / 9, 20 / 9, 21 / 9)


@dataclass(slots=True)
class Element:
    index: int
    cls: str  # short class name: Switch, TextView, View, ...
    text: str  # primary text: own text, else the first merged text, else a borrowed row title
    desc: str  # content-desc (own, else the first merged one)
    rid: str  # short resource id ("switch_widget")
    resource_id: str  # full resource id ("android:id/switch_widget")
    bounds: Bounds
    center: tuple[int, int]
    package: str
    checkable: bool = False
    checked: bool = False
    selected: bool = False
    enabled: bool = True
    focused: bool = False
    clickable: bool = False
    long_clickable: bool = False
    scrollable: bool = False
    editable: bool = False
    password: bool = False
    slider: bool = False
    hint: str = ""
    texts: list[str] = field(default_factory=list)  # all texts, primary first
    descs: list[str] = field(default_factory=list)  # all descs not equal to a text
    resource_ids: list[str] = field(default_factory=list)  # full ids of everything merged in
    window: int = 0  # index of the top-level window the element is in
    label_from_row: bool = False  # `text` was borrowed from the row's title
    list_item: bool = False

    @property
    def affordances(self) -> list[str]:
        out = []
        if self.clickable or (self.checkable and not self.editable):
            out.append("tap")
        if self.long_clickable:
            out.append("long-press")
        if self.editable:
            out.append("type")
        if self.scrollable:
            out.append("scroll")
        if self.slider:
            out.append("slide")
        return out

    @property
    def actionable(self) -> bool:
        return bool(self.affordances)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["bounds"] = list(self.bounds)
        d["center"] = list(self.center)
        d["affordances"] = self.affordances
        return d


@dataclass(slots=True)
class Window:
    package: str
    bounds: Bounds


@dataclass(slots=True)
class Screen:
    elements: list[Element]
    package: str  # foreground app
    width: int
    height: int
    rotation: int = 0
    windows: list[Window] = field(default_factory=list)
    main_window: int = 0
    size_estimated: bool = False  # no full-screen window: width/height are a best guess

    def to_dict(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "width": self.width,
            "height": self.height,
            "rotation": self.rotation,
            "size_estimated": self.size_estimated,
            "windows": [{"package": w.package, "bounds": list(w.bounds)} for w in self.windows],
            "main_window": self.main_window,
            "elements": [e.to_dict() for e in self.elements],
        }


# ----------------------------------------------------------------------------- parsing


class _N:
    """One <node>, with what the element builder needs precomputed."""

    __slots__ = (
        "a", "kids", "cls", "short", "b", "vis", "text", "desc", "clickable", "long_clickable",
        "scrollable", "checkable", "editable", "slider", "n_texts", "n_taps",
        "list_item",
    )


def _short_class(cls: str) -> str:
    s = cls.rsplit(".", 1)[-1]
    if "$" in s:  # Outer$Inner -> Inner; Outer$2 (anonymous) -> Outer
        outer, _, inner = s.rpartition("$")
        s = inner if inner and not inner.isdigit() else outer.rsplit("$", 1)[-1]
    return s or "View"


_INVISIBLE_CATS = frozenset({"Cc", "Cf", "Co", "Cn", "Zs", "Zl", "Zp"})


def clean_text(s: str | None) -> str:
    """A text or content-desc as the model sees it: stripped; empty when it holds no visible
    character (icon-font glyphs in the private use area, zero-width spaces) or is the literal
    string "null" that some vendors' views report."""
    if not s:
        return ""
    s = s.strip()
    if not s or s == "null":
        return ""
    if s.isascii():
        return s
    if all(unicodedata.category(c) in _INVISIBLE_CATS for c in s):
        return ""
    return s


def _short_id(rid: str) -> str:
    return rid.split(":id/", 1)[-1] if ":id/" in rid else rid.rsplit("/", 1)[-1]


def _informative_id(short: str) -> bool:
    if not short or short in _GENERIC_IDS or "obfuscated" in short:
        return False
    return len(short) >= 3 and any(c.isalpha() for c in short)


def _bounds(s: str | None) -> Bounds | None:
    if not s:
        return None
    m = _BOUNDS_RE.match(s.strip())
    if not m:
        return None
    return int(m[1]), int(m[2]), int(m[3]), int(m[4])


def _to_root(xml: str | bytes) -> ET.Element:
    if isinstance(xml, bytes):
        data = xml
        start = data.find(b"<")
        end = data.rfind(b">")
    else:
        data = xml
        start = data.find("<")
        end = data.rfind(">")
    if start < 0 or end < start:
        raise ValueError("not a UI hierarchy dump: no XML element found")
    data = data[start : end + 1]  # drops a BOM, `UI hierarchy dumped to:` lines, trailing junk
    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        raise ValueError(f"not a UI hierarchy dump: {exc}") from None


_SHORT_CACHE: dict[str, str] = {}


def _build(e: ET.Element, sw: int, sh: int, list_parent: bool) -> _N:
    a = e.attrib
    get = a.get
    n = _N()
    n.a = a
    cls = get("class", "")
    n.cls = cls
    short = _SHORT_CACHE.get(cls)
    if short is None:
        short = _SHORT_CACHE[cls] = _short_class(cls)
    n.short = short
    vis = None
    bs = get("bounds")
    if bs and get("visible-to-user") != "false":
        try:
            l, t, r, b = map(int, bs[1:-1].replace("][", ",").split(","))
        except ValueError:
            m = _BOUNDS_RE.match(bs.strip())
            l, t, r, b = (int(m[1]), int(m[2]), int(m[3]), int(m[4])) if m else (0, 0, 0, 0)
        if l < 0:
            l = 0
        if t < 0:
            t = 0
        if r > sw:
            r = sw
        if b > sh:
            b = sh
        if r > l and b > t:
            vis = (l, t, r, b)
    n.b = vis
    n.vis = vis is not None
    x = get("text")
    n.text = clean_text(x) if x else ""
    x = get("content-desc")
    n.desc = clean_text(x) if x else ""
    n.clickable = get("clickable") == _TRUE
    n.long_clickable = get("long-clickable") == _TRUE
    n.scrollable = get("scrollable") == _TRUE
    n.checkable = get("checkable") == _TRUE
    n.editable = cls.endswith("EditText") or "AutoComplete" in cls
    n.slider = short.endswith(("SeekBar", "RatingBar")) or "Slider" in short
    n.list_item = list_parent
    if len(e):
        is_list = short.endswith("ListView")
        kids = [_build(c, sw, sh, is_list) for c in e if c.tag == "node"]
        nt = ntap = 0
        for k in kids:
            nt += k.n_texts
            ntap += k.n_taps
            if k.vis:
                if k.text or k.desc:
                    nt += 1
                if k.clickable or k.long_clickable:
                    ntap += 1
        n.kids = kids
        n.n_texts, n.n_taps = nt, ntap
    else:
        n.kids = ()
        n.n_texts = n.n_taps = 0
    return n


def _estimate_size(wins: list[Bounds]) -> tuple[int, int, bool]:
    if not wins:
        return 0, 0, True
    if any(b[0] <= 0 and b[1] <= 0 for b in wins):
        return max(b[2] for b in wins), max(b[3] for b in wins), False
    # Only dialogs/sheets: assume horizontal centering; pick the height that makes sense.
    l, t, r, b = max(wins, key=lambda w: (w[2] - w[0]) * (w[3] - w[1]))
    w = r + l if l > 0 else r
    w = max(w, max(x[2] for x in wins))
    bottom = max(x[3] for x in wins)
    centered = t + b

    def ratio(h: int) -> float:
        return max(h, w) / max(1, min(h, w))

    if any(abs(ratio(bottom) - q) / q < 0.005 for q in _RATIOS):
        h = bottom
    elif 1.3 <= ratio(centered) <= 2.5:
        h = centered
    else:
        h = bottom
    return w, max(h, bottom), True


class _Builder:
    def __init__(self, screen_area: int):
        self.elements: list[Element] = []
        self.screen_area = max(1, screen_area)
        self.window = 0
        self.package = ""
        self.where: dict[int, int] | None = None  # id(_N) -> element index, for explain()

    def new(self, n: _N) -> Element:
        a = n.a
        b = n.b
        rid_full = a.get("resource-id") or ""
        e = Element(
            index=len(self.elements),
            cls=n.short,
            text="",
            desc="",
            rid=_short_id(rid_full),
            resource_id=rid_full,
            bounds=b,
            center=((b[0] + b[2]) // 2, (b[1] + b[3]) // 2),
            package=a.get("package") or self.package,
            checkable=n.checkable,
            checked=n.checkable and a.get("checked") == _TRUE,
            selected=a.get("selected") == _TRUE,
            enabled=a.get("enabled") != "false",
            focused=a.get("focused") == _TRUE,
            clickable=n.clickable,
            long_clickable=n.long_clickable,
            scrollable=n.scrollable,
            editable=n.editable,
            password=a.get("password") == _TRUE,
            slider=n.slider,
            hint=(a.get("hint") or "").strip(),
            window=self.window,
            list_item=n.list_item,
        )
        if self.where is not None:
            self.where[id(n)] = e.index
        if rid_full:
            e.resource_ids.append(rid_full)
        if n.text:
            e.texts.append(n.text)
        if n.desc:
            e.descs.append(n.desc)
        self.elements.append(e)
        return e

    def is_row(self, n: _N) -> bool:
        """A tap target (or list item) that should take its descendants' text."""
        if n.scrollable or n.editable:
            return False
        if not (n.clickable or n.long_clickable or n.list_item or (n.checkable and n.n_texts)):
            return False
        if n.n_texts > MAX_MERGED_TEXTS or n.n_taps >= 2:
            return False
        l, t, r, b = n.b
        return (r - l) * (b - t) <= CONTAINER_AREA * self.screen_area

    def walk(self, n: _N, owner: Element | None) -> None:
        if not n.vis:
            for k in n.kids:
                self.walk(k, owner)
            return
        tap = n.clickable or n.long_clickable
        if owner is not None and not (n.scrollable or n.editable or n.slider):
            # Inside a row: fold same-bounds tap targets and non-clickable checkables into it.
            same = n.b == owner.bounds and not n.checkable
            if (tap and same) or (n.checkable and not tap and _can_take_check(owner, n)):
                _merge(owner, n)
                if self.where is not None:
                    self.where[id(n)] = owner.index
                for k in n.kids:
                    self.walk(k, owner)
                return
        if tap or n.scrollable or n.editable or n.checkable or n.slider:
            e = self.new(n)
            child_owner = e if self.is_row(n) else None
            for k in n.kids:
                self.walk(k, child_owner)
            return
        if n.list_item and (n.text or n.desc or n.n_texts) and self.is_row(n):
            e = self.new(n)
            # ListView items are tapped through the list, so uiautomator reports them as not
            # clickable; section headers are list items too.
            rid = e.rid.lower()
            e.clickable = e.enabled and not any(w in rid for w in _HEADER_WORDS)
            for k in n.kids:
                self.walk(k, e)
            return
        if n.text or n.desc:
            if owner is not None:
                _merge(owner, n)
                if self.where is not None:
                    self.where[id(n)] = owner.index
            else:
                self.new(n)
        for k in n.kids:
            self.walk(k, owner)


def _can_take_check(owner: Element, n: _N) -> bool:
    if not owner.checkable:
        return True
    return owner.checked == (n.a.get("checked") == _TRUE)


def _merge(owner: Element, n: _N) -> None:
    a = n.a
    if n.text:
        f = n.text.casefold()
        if not any(f in t.casefold() for t in owner.texts):
            owner.texts.append(n.text)
    if n.desc and n.desc not in owner.descs:
        owner.descs.append(n.desc)
    rid = a.get("resource-id")
    if rid and rid not in owner.resource_ids:
        owner.resource_ids.append(rid)
    if n.checkable and not owner.checkable:
        owner.checkable = True
        owner.checked = a.get("checked") == _TRUE
        owner.cls = n.short
        if rid and (_informative_id(_short_id(rid)) or not _informative_id(owner.rid)):
            owner.rid, owner.resource_id = _short_id(rid), rid
    if a.get("selected") == _TRUE:
        owner.selected = True
    if n.clickable:
        owner.clickable = True
    if n.long_clickable:
        owner.long_clickable = True


def _finish(e: Element) -> None:
    texts = e.texts
    e.text = texts[0] if texts else ""
    if not texts or not (e.descs or e.hint):
        e.desc = e.descs[0] if e.descs else ""
        return
    keys = [_alnum(t) for t in texts]
    if len(keys) > 1:
        keys.append("".join(keys))
    e.descs = [d for d in e.descs if not _desc_covered(d, keys)]
    e.desc = e.descs[0] if e.descs else ""
    if e.hint and _covered(_alnum(e.hint), keys):
        e.hint = ""


_NON_ALNUM = re.compile(r"[\W_]+")


def _alnum(s: str) -> str:
    return _NON_ALNUM.sub("", s.casefold())


def _desc_covered(desc: str, keys: list[str]) -> bool:
    """True when the texts already say everything in `desc` ("Internet,AndroidWifi" beside
    "Internet, AndroidWifi"; a vendor's "title,summary,null")."""
    if not keys:
        return False
    if _covered(_alnum(desc), keys):
        return True
    parts = [_alnum(p) for p in _DESC_SPLIT.split(desc)]
    parts = [p for p in parts if p and p != "null"]
    return bool(parts) and all(_covered(p, keys) for p in parts)


def _covered(key: str, keys: list[str]) -> bool:
    """A desc or hint adds nothing when a text already holds it (ignoring case, spaces, punctuation)."""
    return bool(key) and any(key in k for k in keys)


def _name_checkables(elements: list[Element], roots: list[_N]) -> None:
    """Give a checkable element with no name (or a bare state word) its row's title."""
    want = {
        e.bounds: e for e in elements
        if e.checkable and not e.descs and (not e.texts or e.texts[0].casefold() in STATE_WORDS)
    }
    if not want:
        return
    # Walk again with an ancestor stack; for each wanted node find the nearest ancestor whose
    # other descendants hold a text, within a row-sized band.
    def first_text(n: _N, skip: _N) -> str:
        if n is skip:
            return ""
        if n.vis and n.text and not n.checkable and any(c.isalnum() for c in n.text):
            return n.text
        for k in n.kids:
            s = first_text(k, skip)
            if s:
                return s
        return ""

    def visit(n: _N, stack: list[_N]) -> None:
        if n.vis and n.checkable and n.b in want:
            e = want[n.b]
            h = n.b[3] - n.b[1]
            for anc in reversed(stack):
                if anc.b is None:
                    continue
                ah = anc.b[3] - anc.b[1]
                if ah > max(4 * h, 0.15 * screen_h):
                    break
                title = first_text(anc, n)
                if title:
                    if title not in e.texts:
                        e.texts.insert(0, title)
                        e.label_from_row = True
                    break
        stack.append(n)
        for k in n.kids:
            visit(k, stack)
        stack.pop()

    screen_h = max((r.b[3] for r in roots if r.b), default=0)
    for r in roots:
        visit(r, [])


def parse(xml: str | bytes, *, screen: tuple[int, int] | None = None) -> Screen:
    """Parse a uiautomator hierarchy dump. `screen=(width, height)` overrides the size the
    dump implies (a dump of a lone dialog does not say how big the display is)."""
    return _parse(xml, screen, None)[0]


def _parse(xml: str | bytes, screen: tuple[int, int] | None, where: dict[int, int] | None
           ) -> tuple[Screen, list[_N]]:
    root = _to_root(xml)
    rotation = 0
    if root.tag == "hierarchy":
        try:
            rotation = int(root.get("rotation") or 0)
        except ValueError:
            rotation = 0
        win_nodes = [c for c in root if c.tag == "node"]
    elif root.tag == "node":
        win_nodes = [root]
    else:
        raise ValueError(f"not a UI hierarchy dump: root element <{root.tag}>")
    win_bounds = [_bounds(w.get("bounds")) or (0, 0, 0, 0) for w in win_nodes]
    if screen:
        width, height, estimated = screen[0], screen[1], False
    else:
        width, height, estimated = _estimate_size(win_bounds)
    wins = [_build(w, width, height, False) for w in win_nodes]
    windows = [Window(w.get("package") or "", b) for w, b in zip(win_nodes, win_bounds)]

    builder = _Builder(width * height)
    builder.where = where
    for i, (w, win) in enumerate(zip(wins, windows)):
        builder.window = i
        builder.package = win.package
        builder.walk(w, None)
    elements = builder.elements
    _name_checkables(elements, wins)
    for e in elements:
        _finish(e)

    main = _main_window(windows)
    return Screen(
        elements=elements,
        package=windows[main].package if windows else "",
        width=width,
        height=height,
        rotation=rotation,
        windows=windows,
        main_window=main,
        size_estimated=estimated,
    ), wins


def explain(xml: str | bytes, needle: str, *, screen: tuple[int, int] | None = None) -> list[str]:
    """For every node whose text, content-desc or resource-id contains `needle` (ignoring case):
    which element shows it, or why none does. For task authors (`agent-host observe --why`)."""
    where: dict[int, int] = {}
    scr, wins = _parse(xml, screen, where)
    f = needle.casefold()
    out: list[str] = []

    def visit(n: _N) -> None:
        a = n.a
        raw_text, raw_desc, rid = a.get("text") or "", a.get("content-desc") or "", a.get("resource-id") or ""
        if f in raw_text.casefold() or f in raw_desc.casefold() or f in rid.casefold():
            label = " ".join(x for x in (
                f"{n.short}", json.dumps(raw_text, ensure_ascii=False) if raw_text else "",
                f"desc={json.dumps(raw_desc, ensure_ascii=False)}" if raw_desc else "",
                f"id={rid}" if rid else "", a.get("bounds") or "(no bounds)") if x)
            idx = where.get(id(n))
            if idx is not None:
                e = scr.elements[idx]
                how = "is" if e.bounds == n.b and (n.text in e.texts[:1] or not n.text) else "merged into"
                out.append(f"{label}: {how} element [{idx}]: {render_element(e)}")
            else:
                out.append(f"{label}: not shown: {_why_dropped(n, scr)}")
        for k in n.kids:
            visit(k)

    for w in wins:
        visit(w)
    return out


def _why_dropped(n: _N, scr: Screen) -> str:
    a = n.a
    if a.get("visible-to-user") == "false":
        return 'visible-to-user="false"'
    b = _bounds(a.get("bounds"))
    if b is None:
        return "no bounds attribute"
    if b[2] <= b[0] or b[3] <= b[1]:
        return f"zero area ({a.get('bounds')})"
    if not n.vis:
        return f"off the {scr.width}x{scr.height} screen ({a.get('bounds')})"
    if (a.get("text") or a.get("content-desc")) and not (n.text or n.desc):
        return "its text/desc has no visible characters (or is \"null\")"
    return "a wrapper with no text or desc of its own, no action, not checkable"


def _main_window(windows: list[Window]) -> int:
    if not windows:
        return 0
    idx = list(range(len(windows)))
    apps = [i for i in idx if windows[i].package != SYSTEM_UI] or idx

    def area(i: int) -> int:
        l, t, r, b = windows[i].bounds
        return max(0, r - l) * max(0, b - t)

    return max(apps, key=lambda i: (area(i), -i))


# ----------------------------------------------------------------------------- rendering


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
    show_id = _informative_id(e.rid) and (
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


def observe(xml: str | bytes, *, screen: tuple[int, int] | None = None) -> str:
    """parse + render."""
    return render(parse(xml, screen=screen))
