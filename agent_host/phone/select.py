"""The one selector engine: which element of a screen (phone/screen.py) a selector names.

Used alike by task checks (`ui:`, judge/checks.py: does any element match?) and by solutions
and policy scripts (`tap: {text: ...}`, policy/script.py: which element is it?). Text is
compared raw first, then after agent_host.text.normalise (case, every kind of space, Unicode
hyphens and minus), so "Wi-Fi" in a task finds Android's "Wi‑Fi" (U+2011).

Selector attributes: `text`, `text_contains`, `desc`, `desc_contains`, `resource_id` (full
or short), `class_name` (full or short), `package`, `checked`, `selected`, `enabled`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agent_host.phone.screen import Element, short_id
from agent_host.text import normalise

# A selector value is a str (text, ids, class, package) or a bool (checked, selected, enabled) by
# attribute, and each tier takes its attribute's: Any, as one union would need narrowing in each.
Tier = Callable[[Element, Any], "int | None"]


def _texts(e: Element) -> list[str]:
    return e.texts or ([e.text] if e.text else [])


def _descs(e: Element) -> list[str]:
    return e.descs or ([e.desc] if e.desc else [])


def _tier_text(e: Element, want: str) -> int | None:
    texts, hint = _texts(e), e.hint
    if texts and texts[0] == want:
        return 0
    if want in texts[1:] or want == hint:
        return 1
    f = normalise(want)
    if any(normalise(t) == f for t in texts) or (hint and normalise(hint) == f):
        return 2
    if any(normalise(d) == f for d in _descs(e)):
        return 3
    return None


def _tier_contains(e: Element, want: str) -> int | None:
    f, texts = normalise(want), _texts(e)
    if texts and f in normalise(texts[0]):
        return 0
    if any(f in normalise(t) for t in texts[1:]):
        return 1
    if (e.hint and f in normalise(e.hint)) or any(f in normalise(d) for d in _descs(e)):
        return 2
    return None


def _tier_desc(e: Element, want: str) -> int | None:
    descs = _descs(e)
    if want in descs:
        return 0
    f = normalise(want)
    if any(normalise(d) == f for d in descs):
        return 1
    # a desc equal to a text is not rendered twice, so it may live in texts
    if any(normalise(t) == f for t in _texts(e)):
        return 2
    if any(f in normalise(d) for d in descs):
        return 3
    return None


def _tier_desc_contains(e: Element, want: str) -> int | None:
    f = normalise(want)
    if any(f in normalise(d) for d in _descs(e)):
        return 0
    return 1 if any(f in normalise(t) for t in _texts(e)) else None


def _tier_rid(e: Element, want: str) -> int | None:
    fulls = list(e.resource_ids)
    if e.resource_id and e.resource_id not in fulls:
        fulls.insert(0, e.resource_id)
    shorts = [short_id(x) for x in fulls]
    if e.rid and e.rid not in shorts:
        shorts.insert(0, e.rid)
    if want in fulls[:1] or (e.rid and want == e.rid):
        return 0
    if want in fulls:
        return 1
    if fulls and ":id/" in want:
        return None        # a full id names its package too: com.other:id/x is not android:id/x
    ws = short_id(want)
    if ws and ws in shorts:
        return 1 if shorts[0] == ws else 2
    return None


def _tier_class(e: Element, want: str) -> int | None:
    return 0 if want.rsplit(".", 1)[-1] == e.cls else None


def _equal(attr: str) -> Tier:
    return lambda e, want: 0 if getattr(e, attr) == want else None


def _flag(attr: str) -> Tier:
    return lambda e, want: 0 if bool(getattr(e, attr)) == bool(want) else None


TIERS: dict[str, Tier] = {
    "text": _tier_text, "text_contains": _tier_contains, "desc": _tier_desc,
    "desc_contains": _tier_desc_contains, "resource_id": _tier_rid, "class_name": _tier_class,
    "package": _equal("package"), "checked": _flag("checked"), "selected": _flag("selected"),
    "enabled": _flag("enabled"),
}


# Any: a selector's value is whatever its tier compares (str, bool, ...)
def _given(selector: Mapping[str, Any]) -> list[tuple[Tier, Any]]:
    unknown = set(selector) - set(TIERS)
    if unknown:
        raise ValueError(f"unknown selector attribute {sorted(unknown)[0]!r} (one of {', '.join(TIERS)})")
    checks = [(TIERS[k], v) for k, v in selector.items() if v is not None]
    if not checks:
        raise ValueError(f"a selector needs at least one of {', '.join(TIERS)}")
    return checks


# Any: each tier's wanted value, of the type that tier compares
def _tiers(e: Element, checks: list[tuple[Tier, Any]]) -> list[int] | None:
    out = []
    for tier, want in checks:
        t = tier(e, want)
        if t is None:
            return None
        out.append(t)
    return out


# Any: selector values as the task YAML gives them (str, bool, ...)
def find(elements: Iterable[Element], **selector: Any) -> Element | None:
    """The element matching every given attribute, best first: a better match wins (exact
    primary text, then an exact secondary text or hint, then equal after normalisation, then
    desc; for resource_id the full id, then the short one); among equal matches an actionable
    element beats a plain label; then document order."""
    checks = _given(selector)
    best, best_key = None, None
    for e in elements:
        tiers = _tiers(e, checks)
        if tiers is not None:
            key = (max(tiers), sum(tiers), 0 if e.actionable else 1, e.index)
            if best_key is None or key < best_key:
                best, best_key = e, key
    return best


# Any: selector values as the task YAML gives them (str, bool, ...)
def matches(elements: Iterable[Element], selector: Mapping[str, Any]) -> bool:
    """Does any element match every given attribute?"""
    checks = _given(selector)
    return any(_tiers(e, checks) is not None for e in elements)
