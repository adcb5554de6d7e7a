"""uiautomator2 selector JSON (mask bits of uiautomator2/_selector.py) matched against the view tree."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .hierarchy import Node
from .json_value import Json, JsonObject, as_int, as_iterable

# (json key, mask bit)
_FIELDS = (
    ("text", 0x01), ("textContains", 0x02), ("textMatches", 0x04), ("textStartsWith", 0x08),
    ("className", 0x10), ("classNameMatches", 0x20), ("description", 0x40), ("descriptionContains", 0x80),
    ("descriptionMatches", 0x0100), ("descriptionStartsWith", 0x0200), ("checkable", 0x0400),
    ("checked", 0x0800), ("clickable", 0x1000), ("longClickable", 0x2000), ("scrollable", 0x4000),
    ("enabled", 0x8000), ("focusable", 0x010000), ("focused", 0x020000), ("selected", 0x040000),
    ("packageName", 0x080000), ("packageNameMatches", 0x100000), ("resourceId", 0x200000),
    ("resourceIdMatches", 0x400000), ("index", 0x800000), ("instance", 0x01000000),
)
_BOOL_ATTR = {"checkable": "checkable", "checked": "checked", "clickable": "clickable",
              "longClickable": "long_clickable", "scrollable": "scrollable", "enabled": "enabled",
              "focusable": "focusable", "focused": "focused", "selected": "selected"}


class SelectorError(ValueError):
    pass


def _full(pattern: str, value: str) -> bool:
    # UiSelector *Matches use Java's String.matches: the whole string must match.
    try:
        return re.fullmatch(pattern, value, re.DOTALL) is not None
    except re.error as e:
        raise SelectorError(f"bad regular expression {pattern!r}: {e}") from e


def _active(sel: JsonObject) -> JsonObject:
    mask = as_int(sel.get("mask", 0) or 0)
    if not mask:  # tolerate hand-written selectors without a mask
        return {k: sel[k] for k, _ in _FIELDS if k in sel}
    return {k: sel.get(k) for k, bit in _FIELDS if mask & bit}


def node_matches(n: Node, index: int, crit: JsonObject) -> bool:
    for k, v in crit.items():
        if k == "instance":
            continue
        if k == "text" and n.text != v:
            return False
        if k == "textContains" and str(v) not in n.text:
            return False
        if k == "textMatches" and not _full(str(v), n.text):
            return False
        if k == "textStartsWith" and not n.text.startswith(str(v)):
            return False
        if k == "className" and n.cls != v:
            return False
        if k == "classNameMatches" and not _full(str(v), n.cls):
            return False
        if k == "description" and n.desc != v:
            return False
        if k == "descriptionContains" and str(v) not in n.desc:
            return False
        if k == "descriptionMatches" and not _full(str(v), n.desc):
            return False
        if k == "descriptionStartsWith" and not n.desc.startswith(str(v)):
            return False
        if k == "packageName" and n.pkg != v:
            return False
        if k == "packageNameMatches" and not _full(str(v), n.pkg):
            return False
        if k == "resourceId" and n.rid != v:
            return False
        if k == "resourceIdMatches" and not _full(str(v), n.rid):
            return False
        if k == "index" and index != as_int(v):
            return False
        if k in _BOOL_ATTR and getattr(n, _BOOL_ATTR[k]) != bool(v):
            return False
    return True


def _indexed(root: Node, idx: int = 0) -> Iterator[tuple[Node, int]]:
    yield root, idx
    for i, c in enumerate(root.children):
        yield from _indexed(c, i)


def _find_in(roots: list[Node], sel: JsonObject) -> list[Node]:
    crit = _active(sel)
    out = [n for r in roots for n, i in _indexed(r) if node_matches(n, i, crit)]
    return out


def find_all(roots: list[Node], sel: Json) -> list[Node]:
    """Every node the selector matches, in document order, honouring child/sibling chains."""
    if not isinstance(sel, dict):
        raise SelectorError("selector must be an object")
    found = _find_in(roots, sel)
    relations = as_iterable(sel.get("childOrSibling") or [])
    for rel, sub in zip(relations, as_iterable(sel.get("childOrSiblingSelector") or [])):
        if not isinstance(sub, dict):
            raise SelectorError("selector must be an object")
        nxt: list[Node] = []
        for n in found:
            if rel == "child":
                scope = n.children
                nxt += [m for m in _find_in(scope, sub) if m not in nxt]
            elif rel == "sibling":
                parent = _parent_of(roots, n)
                crit = _active(sub)
                for i, c in enumerate(parent.children if parent else []):
                    if c is not n and node_matches(c, i, crit) and c not in nxt:
                        nxt.append(c)
            else:
                raise SelectorError(f"unsupported childOrSibling relation {rel!r}")
        found = _apply_instance(nxt, sub)
    return found


def _apply_instance(nodes: list[Node], sel: JsonObject) -> list[Node]:
    crit = _active(sel)
    if "instance" in crit:
        i = as_int(crit["instance"])
        return nodes[i:i + 1]
    return nodes


def _parent_of(roots: list[Node], target: Node) -> Node | None:
    for r in roots:
        for n in r.walk():
            if any(c is target for c in n.children):
                return n
    return None


def find(roots: list[Node], sel: Json) -> Node | None:
    nodes = find_all(roots, sel)   # raises unless sel is an object
    if isinstance(sel, dict) and not (sel.get("childOrSibling") or []):
        nodes = _apply_instance(nodes, sel)
    return nodes[0] if nodes else None


def describe(sel: Json) -> str:
    crit = _active(sel) if isinstance(sel, dict) else {}
    return "UiSelector[" + ", ".join(f"{k.upper()}={v}" for k, v in crit.items()) + "]"
