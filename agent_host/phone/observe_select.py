"""Reading a rendered observation back (`parse_rendered`) and resolving selectors (`find`).

Split from agent_host.phone.observe, which re-exports both; this module depends only on the
text format documented there, so the policy server can use it on the text the model saw.
"""

from __future__ import annotations

import json
import re
from typing import Any


def _short_id(rid: str) -> str:
    return rid.split(":id/", 1)[-1] if ":id/" in rid else rid.rsplit("/", 1)[-1]


# ----------------------------------------------------------------------------- reading back

_LINE_RE = re.compile(r"^\[(\d+)\]\s+(\S+)\s*(.*)$")
_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|\||[^\s"|=]+(?:=(?:"(?:[^"\\]|\\.)*"|[^\s"|]*))?')
_HEADER_RE = re.compile(r"^app:\s*(\S*)")
_WINDOW_RE = re.compile(r"^--\s+(\S+)\s+--$")
_AFFORDANCES = ("tap", "long-press", "type", "scroll", "slide")


def parse_rendered(text: str) -> list[dict[str, Any]]:
    """Read a rendered observation back into dicts with keys: index, cls, text, texts, desc,
    descs, hint, rid, package, checkable, checked (True/False/None), selected, enabled,
    focused, password, center (only when rendered), affordances."""
    out: list[dict[str, Any]] = []
    app = ""
    pkg = ""
    for raw in text.splitlines():
        line = raw.strip()
        m = _HEADER_RE.match(line)
        if m:
            app = pkg = m[1]
            continue
        m = _WINDOW_RE.match(line)
        if m:
            pkg = m[1]
            continue
        m = _LINE_RE.match(line)
        if not m:
            continue
        d: dict[str, Any] = {
            "index": int(m[1]), "cls": m[2], "text": "", "texts": [], "desc": "", "descs": [],
            "hint": "", "rid": "", "package": pkg or app, "checkable": False, "checked": None,
            "selected": False, "enabled": True, "focused": False, "password": False,
            "center": None, "affordances": [],
        }
        target: list[str] | None = d["texts"]
        for tok in _TOKEN_RE.findall(m[3]):
            if tok == "|":
                continue
            if tok.startswith('"'):
                if target is not None:
                    target.append(json.loads(tok))
                continue
            key, eq, val = tok.partition("=")
            target = None
            if not eq:
                if key in _AFFORDANCES:
                    d["affordances"].append(key)
                elif key == "disabled":
                    d["enabled"] = False
                elif key in ("selected", "focused", "password"):
                    d[key] = True
                continue
            if key == "desc":
                target = d["descs"]
                target.append(json.loads(val))
            elif key == "hint":
                d["hint"] = json.loads(val)
            elif key == "id":
                d["rid"] = val
            elif key == "checked":
                d["checkable"] = True
                d["checked"] = val == "on"
            elif key == "at":
                x, _, y = val.partition(",")
                d["center"] = [int(x), int(y)]
        d["text"] = d["texts"][0] if d["texts"] else ""
        d["desc"] = d["descs"][0] if d["descs"] else ""
        out.append(d)
    return out


# ----------------------------------------------------------------------------- selectors


def _get(e: Any, key: str, default: Any = None) -> Any:
    if isinstance(e, dict):
        return e.get(key, default)
    return getattr(e, key, default)


def _fold(s: str) -> str:
    return " ".join(s.split()).casefold()


def _tier_text(e: Any, want: str) -> int | None:
    texts = _get(e, "texts") or ([_get(e, "text")] if _get(e, "text") else [])
    hint = _get(e, "hint") or ""
    if texts and texts[0] == want:
        return 0
    if want in texts[1:] or want == hint:
        return 1
    f = _fold(want)
    if any(_fold(t) == f for t in texts) or (hint and _fold(hint) == f):
        return 2
    descs = _get(e, "descs") or ([_get(e, "desc")] if _get(e, "desc") else [])
    if any(_fold(d) == f for d in descs):
        return 3
    return None


def _tier_contains(e: Any, want: str) -> int | None:
    f = _fold(want)
    texts = _get(e, "texts") or ([_get(e, "text")] if _get(e, "text") else [])
    if texts and f in _fold(texts[0]):
        return 0
    if any(f in _fold(t) for t in texts[1:]):
        return 1
    hint = _get(e, "hint") or ""
    descs = _get(e, "descs") or ([_get(e, "desc")] if _get(e, "desc") else [])
    if (hint and f in _fold(hint)) or any(f in _fold(d) for d in descs):
        return 2
    return None


def _tier_desc(e: Any, want: str) -> int | None:
    descs = _get(e, "descs") or ([_get(e, "desc")] if _get(e, "desc") else [])
    if want in descs:
        return 0
    f = _fold(want)
    if any(_fold(d) == f for d in descs):
        return 1
    # A desc equal to a text is not rendered twice, so it may live in texts.
    texts = _get(e, "texts") or ([_get(e, "text")] if _get(e, "text") else [])
    if any(_fold(t) == f for t in texts):
        return 2
    if any(f in _fold(d) for d in descs):
        return 3
    return None


def _tier_rid(e: Any, want: str) -> int | None:
    fulls = list(_get(e, "resource_ids") or [])
    full = _get(e, "resource_id") or ""
    if full and full not in fulls:
        fulls.insert(0, full)
    shorts = [_short_id(x) for x in fulls]
    rid = _get(e, "rid") or ""
    if rid and rid not in shorts:
        shorts.insert(0, rid)
    if want in fulls[:1] or (rid and want == rid):
        return 0
    if want in fulls:
        return 1
    ws = _short_id(want)
    if ws and ws in shorts:
        return 1 if shorts and shorts[0] == ws else 2
    return None


def _is_actionable(e: Any) -> bool:
    aff = _get(e, "affordances")
    return bool(aff() if callable(aff) else aff)


def find(
    elements: list[Any],
    *,
    text: str | None = None,
    text_contains: str | None = None,
    resource_id: str | None = None,
    desc: str | None = None,
) -> Any:
    """The element (an `Element` or a `parse_rendered` dict) matching every given selector.

    Precedence: a better match wins (exact primary text, then an exact secondary text or hint,
    then equal ignoring case and spacing, then desc; for resource_id the full id, then the short
    one); among equal matches an actionable element beats a plain label; then document order.
    """
    checks = [
        (text, _tier_text), (text_contains, _tier_contains), (resource_id, _tier_rid), (desc, _tier_desc),
    ]
    checks = [(w, f) for w, f in checks if w is not None]
    if not checks:
        raise ValueError("find: give text, text_contains, resource_id or desc")
    best = None
    best_key = None
    for e in elements:
        tiers = []
        for want, fn in checks:
            t = fn(e, want)
            if t is None:
                break
            tiers.append(t)
        else:
            key = (max(tiers), sum(tiers), 0 if _is_actionable(e) else 1, _get(e, "index", 0))
            if best_key is None or key < best_key:
                best, best_key = e, key
    return best
