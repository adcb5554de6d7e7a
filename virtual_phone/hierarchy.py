"""View tree of the virtual phone's screen and its uiautomator2 XML form.

Screens are rebuilt from state on every observation (a few hundred nodes at most), so no view
can ever show a value the shell would not report.
"""

from __future__ import annotations

import re

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

# What a tap (or a dialog's cancel) runs; its return value is ignored, so a handler may be any
# call, a lambda over a tuple of calls included.
Callback = Callable[[], object]

Bounds = tuple[int, int, int, int]  # left, top, right, bottom

SCREEN_W, SCREEN_H = 1080, 2400


@dataclass(eq=False)
class Node:
    cls: str
    bounds: Bounds
    text: str = ""
    rid: str = ""
    desc: str = ""
    pkg: str = ""
    checkable: bool = False
    checked: bool = False
    clickable: bool = False
    enabled: bool = True
    focusable: bool = False
    focused: bool = False
    scrollable: bool = False
    long_clickable: bool = False
    password: bool = False
    selected: bool = False
    hint: str = ""
    children: list[Node] = field(default_factory=list)
    # Behaviour, never serialised.
    on_click: Callback | None = None
    on_long_click: Callback | None = None
    on_tap_at: Callable[[int, int], None] | None = None  # SeekBar: where on the track
    on_scroll: Callable[[int], None] | None = None  # dy > 0: content moves up (reveals below)
    on_text: Callable[[str], None] | None = None  # EditText

    def walk(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            yield from c.walk()

    @property
    def center(self) -> tuple[int, int]:
        l, t, r, b = self.bounds
        return (l + r) // 2, (t + b) // 2


@dataclass
class Window:
    root: Node
    modal: bool = False  # a dialog: touches outside it do not reach the windows below
    kind: str = "app"  # "app" (takes touches), "dialog", or "status" (the status bar: none)
    on_outside: Callback | None = None  # cancelable dialogs close on an outside tap


def intersect(a: Bounds, b: Bounds) -> Bounds | None:
    l, t, r, bt = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    if l >= r or t >= bt:
        return None
    return (l, t, r, bt)


def clip(node: Node, rect: Bounds) -> Node | None:
    """Drop what lies outside `rect` and clip the rest, as Android reports visible bounds."""
    vis = intersect(node.bounds, rect)
    if vis is None:
        return None
    kids = [k for k in (clip(c, vis) for c in node.children) if k is not None]
    return replace(node, bounds=vis, children=kids)


def set_package(node: Node, pkg: str) -> None:
    for n in node.walk():
        if not n.pkg:
            n.pkg = pkg


def contains(b: Bounds, x: int, y: int) -> bool:
    return b[0] <= x < b[2] and b[1] <= y < b[3]


def deepest_at(node: Node, x: int, y: int) -> list[Node]:
    """Path from `node` to the deepest descendant under (x, y); later siblings are drawn on top."""
    if not contains(node.bounds, x, y):
        return []
    for c in reversed(node.children):
        sub = deepest_at(c, x, y)
        if sub:
            return [node, *sub]
    return [node]


# Characters XML 1.0 cannot hold (and the C1 controls): Android's dumper
# (AccessibilityNodeInfoDumper.stripInvalidXMLChars) writes each as ".", so text a model
# typed with a BEL or NUL in it still dumps as well-formed XML.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ufdd0-\ufddf\ufffe\uffff]")


def _esc(s: str) -> str:
    return (
        _NOT_XML.sub(".", s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
        .replace("\n", "&#10;")
    )


def _b(v: bool) -> str:
    return "true" if v else "false"


def _write(out: list[str], n: Node, index: int, depth: int, max_depth: int, order: int) -> None:
    ind = "  " * depth
    l, t, r, b = n.bounds
    attrs = (
        f'<node index="{index}" text="{_esc(n.text)}" resource-id="{n.rid}" class="{n.cls}" '
        f'package="{n.pkg}" content-desc="{_esc(n.desc)}" checkable="{_b(n.checkable)}" '
        f'checked="{_b(n.checked)}" clickable="{_b(n.clickable)}" enabled="{_b(n.enabled)}" '
        f'focusable="{_b(n.focusable)}" focused="{_b(n.focused)}" scrollable="{_b(n.scrollable)}" '
        f'long-clickable="{_b(n.long_clickable)}" password="{_b(n.password)}" '
        f'selected="{_b(n.selected)}" visible-to-user="true" bounds="[{l},{t}][{r},{b}]" '
        f'drawing-order="{order}" hint="{_esc(n.hint)}" display-id="0"'
    )
    if not n.children or depth >= max_depth:
        out.append(f"{ind}{attrs} />")
        return
    out.append(f"{ind}{attrs}>")
    for i, c in enumerate(n.children):
        _write(out, c, i, depth + 1, max_depth, i + 1)
    out.append(f"{ind}</node>")


def _important(n: Node) -> bool:
    return bool(n.text or n.desc or n.rid or n.clickable or n.long_clickable or n.scrollable or n.checkable
                or n.focusable or not n.children)


def compress(n: Node) -> list[Node]:
    """setCompressedLayoutHeirarchy(true): layout-only views give way to their children."""
    kids = [k for c in n.children for k in compress(c)]
    if _important(n):
        return [replace(n, children=kids)]
    return kids


def to_xml(windows: list[Node], max_depth: int = 50, compressed: bool = False) -> str:
    """uiautomator2 server format: KXmlSerializer with indentation, CRLF line ends."""
    out = ["<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>", '<hierarchy rotation="0">']
    if compressed:
        windows = [r for w in windows for r in compress(w)]
    for root in windows:
        _write(out, root, 0, 1, max_depth + 1, 0)
    out.append("</hierarchy>")
    return "\r\n".join(out)


_NAF_EXEMPT = ("android.widget.GridView", "android.widget.GridLayout", "android.widget.ListView",
               "android.widget.TableLayout")


def _labelled_below(n: Node) -> bool:
    return any(c.text or c.desc or _labelled_below(c) for c in n.children)


def _naf(n: Node) -> bool:
    """Not Accessibility Friendly: enabled and clickable with no text or description anywhere below."""
    if n.cls.endswith(_NAF_EXEMPT) or not (n.clickable and n.enabled) or n.text or n.desc:
        return False
    return not _labelled_below(n)


def _write_dump(out: list[str], n: Node, index: int, order: int) -> None:
    l, t, r, b = n.bounds
    naf = 'NAF="true" ' if _naf(n) else ""
    out.append(
        f'<node {naf}index="{index}" text="{_esc(n.text)}" resource-id="{n.rid}" '
        f'class="{n.cls}" package="{n.pkg}" content-desc="{_esc(n.desc)}" checkable="{_b(n.checkable)}" '
        f'checked="{_b(n.checked)}" clickable="{_b(n.clickable)}" enabled="{_b(n.enabled)}" '
        f'focusable="{_b(n.focusable)}" focused="{_b(n.focused)}" scrollable="{_b(n.scrollable)}" '
        f'long-clickable="{_b(n.long_clickable)}" password="{_b(n.password)}" selected="{_b(n.selected)}" '
        f'bounds="[{l},{t}][{r},{b}]" drawing-order="{order}" hint="{_esc(n.hint)}"')
    if not n.children:
        out.append(" />")
        return
    out.append(">")
    for i, c in enumerate(n.children):
        _write_dump(out, c, i, i + 1)
    out.append("</node>")


def to_dump_xml(root: Node, compressed: bool = False) -> str:
    """`uiautomator dump` format: the active window only, on one line, no trailing newline.

    Attributes and their order follow AOSP's AccessibilityNodeInfoDumper as captured from an
    Android 14 Pixel (drawing-order and hint, no display-id), NAF first where it applies.
    """
    out = ["<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>", '<hierarchy rotation="0">']
    for r in (compress(root) if compressed else [root]):
        _write_dump(out, r, 0, 0)
    out.append("</hierarchy>")
    return "".join(out)
