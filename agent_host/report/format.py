"""How numbers look in every report output (Markdown, HTML, terminal)."""

from __future__ import annotations

import math


def pct(x: float | None, digits: int = 1) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.{digits}f}%"


def interval(lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None:
        return "[–]"
    return f"[{100 * lo:.1f}, {100 * hi:.1f}]"


def signed_pp(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f} pp"


def num(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "–"
    return f"{x:.{digits}f}"


def pval(p: float | None) -> str:
    if p is None:
        return "–"
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def md_cell(x: object) -> str:
    """Markdown table cell: escape what would break the table or become HTML."""
    s = "–" if x is None else str(x)
    for a, b in (("\\", "\\\\"), ("|", "\\|"), ("<", "&lt;"), (">", "&gt;"), ("\n", " ")):
        s = s.replace(a, b)
    return s


