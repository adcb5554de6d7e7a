"""Why a label is (not) on the rendered screen: `explain(xml, needle)`, for task authors
(`agent-host observe --why`).
"""

from __future__ import annotations

import json

from agent_host.phone.parse import Node, bounds_of, parse_nodes
from agent_host.phone.render import render_element
from agent_host.phone.screen import Screen


def explain(xml: str | bytes, needle: str, *, screen: tuple[int, int] | None = None) -> list[str]:
    """For every node whose text, content-desc or resource-id contains `needle` (ignoring case):
    which element shows it, or why none does. For task authors (`agent-host observe --why`)."""
    where: dict[int, int] = {}
    scr, wins = parse_nodes(xml, screen, where)
    f = needle.casefold()
    out: list[str] = []

    def visit(n: Node) -> None:
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


def _why_dropped(n: Node, scr: Screen) -> str:
    a = n.a
    if a.get("visible-to-user") == "false":
        return 'visible-to-user="false"'
    b = bounds_of(a.get("bounds"))
    if b is None:
        return "no bounds attribute"
    if b[2] <= b[0] or b[3] <= b[1]:
        return f"zero area ({a.get('bounds')})"
    if not n.vis:
        return f"off the {scr.width}x{scr.height} screen ({a.get('bounds')})"
    if (a.get("text") or a.get("content-desc")) and not (n.text or n.desc):
        return "its text/desc has no visible characters (or is \"null\")"
    return "a wrapper with no text or desc of its own, no action, not checkable"
