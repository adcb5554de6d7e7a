"""Parsing a uiautomator hierarchy dump into the screen model (phone/screen.py).

`parse(xml) -> Screen`; `parse_nodes` also returns the node tree, for phone/explain.py.
The text the model reads is written by phone/render.py.

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

import re
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from agent_host.phone.screen import Bounds, Element, Screen, Window, informative_id, short_id

MAX_MERGED_TEXTS = 12  # a tap target with more text descendants is a container, not a row
CONTAINER_AREA = 0.5  # a tap target covering more than this share of the screen is a container
SYSTEM_UI = "com.android.systemui"

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


# ----------------------------------------------------------------------------- parsing


class Node:
    """One <node>, with what the element builder needs precomputed."""

    __slots__ = (
        "a", "kids", "cls", "short", "b", "vis", "text", "desc", "clickable", "long_clickable",
        "scrollable", "checkable", "editable", "slider", "n_texts", "n_taps",
        "list_item",
    )
    a: dict[str, str]
    kids: Sequence[Node]
    cls: str
    short: str
    b: Bounds | None
    vis: bool
    text: str
    desc: str
    clickable: bool
    long_clickable: bool
    scrollable: bool
    checkable: bool
    editable: bool
    slider: bool
    n_texts: int
    n_taps: int
    list_item: bool


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


def bounds_of(s: str | None) -> Bounds | None:
    if not s:
        return None
    m = _BOUNDS_RE.match(s.strip())
    if not m:
        return None
    return int(m[1]), int(m[2]), int(m[3]), int(m[4])


def _to_root(xml: str | bytes) -> ET.Element:
    data: str | bytes = xml
    if isinstance(xml, bytes):
        start = xml.find(b"<")
        end = xml.rfind(b">")
    else:
        start = xml.find("<")
        end = xml.rfind(">")
    if start < 0 or end < start:
        raise ValueError("not a UI hierarchy dump: no XML element found")
    data = data[start : end + 1]  # drops a BOM, `UI hierarchy dumped to:` lines, trailing junk
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise ValueError(f"not a UI hierarchy dump: {exc}") from None
    # the tree is walked recursively; a real screen is a few dozen levels deep
    stack = [(root, 1)]
    while stack:
        el, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"not a UI hierarchy dump: nested more than {MAX_DEPTH} levels deep")
        stack.extend((c, depth + 1) for c in el)
    return root


MAX_DEPTH = 300


_SHORT_CACHE: dict[str, str] = {}


def _build(e: ET.Element, sw: int, sh: int, list_parent: bool) -> Node:
    a = e.attrib
    get = a.get
    n = Node()
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
        self.where: dict[int, int] | None = None  # id(Node) -> element index, for explain()

    def new(self, n: Node) -> Element:
        a = n.a
        b = n.b
        assert b is not None, "only a visible node becomes an element"
        rid_full = a.get("resource-id") or ""
        e = Element(
            index=len(self.elements),
            cls=n.short,
            text="",
            desc="",
            rid=short_id(rid_full),
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

    def is_row(self, n: Node) -> bool:
        """A tap target (or list item) that should take its descendants' text."""
        if n.scrollable or n.editable:
            return False
        if not (n.clickable or n.long_clickable or n.list_item or (n.checkable and n.n_texts)):
            return False
        if n.n_texts > MAX_MERGED_TEXTS or n.n_taps >= 2:
            return False
        assert n.b is not None, "walk() asks only of visible nodes"
        l, t, r, b = n.b
        return (r - l) * (b - t) <= CONTAINER_AREA * self.screen_area

    def walk(self, n: Node, owner: Element | None) -> None:
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


def _can_take_check(owner: Element, n: Node) -> bool:
    if not owner.checkable:
        return True
    return owner.checked == (n.a.get("checked") == _TRUE)


def _merge(owner: Element, n: Node) -> None:
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
        if rid and (informative_id(short_id(rid)) or not informative_id(owner.rid)):
            owner.rid, owner.resource_id = short_id(rid), rid
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


NodeON_ALNUM = re.compile(r"[\W_]+")


def _alnum(s: str) -> str:
    return NodeON_ALNUM.sub("", s.casefold())


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


def _name_checkables(elements: list[Element], roots: list[Node]) -> None:
    """Give a checkable element with no name (or a bare state word) its row's title."""
    want = {
        e.bounds: e for e in elements
        if e.checkable and not e.descs and (not e.texts or e.texts[0].casefold() in STATE_WORDS)
    }
    if not want:
        return
    # Walk again with an ancestor stack; for each wanted node find the nearest ancestor whose
    # other descendants hold a text, within a row-sized band.
    def first_text(n: Node, skip: Node) -> str:
        if n is skip:
            return ""
        if n.vis and n.text and not n.checkable and any(c.isalnum() for c in n.text):
            return n.text
        for k in n.kids:
            s = first_text(k, skip)
            if s:
                return s
        return ""

    def visit(n: Node, stack: list[Node]) -> None:
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
    return parse_nodes(xml, screen, None)[0]


def parse_nodes(xml: str | bytes, screen: tuple[int, int] | None, where: dict[int, int] | None
           ) -> tuple[Screen, list[Node]]:
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
    win_bounds = [bounds_of(w.get("bounds")) or (0, 0, 0, 0) for w in win_nodes]
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


def _main_window(windows: list[Window]) -> int:
    if not windows:
        return 0
    idx = list(range(len(windows)))
    apps = [i for i in idx if windows[i].package != SYSTEM_UI] or idx

    def area(i: int) -> int:
        l, t, r, b = windows[i].bounds
        return max(0, r - l) * max(0, b - t)

    return max(apps, key=lambda i: (area(i), -i))
