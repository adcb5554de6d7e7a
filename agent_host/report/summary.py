"""A one-screen summary of results (rich tables), for `report`, `run` and `demo`."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from agent_host.report.format import pval, signed_pp


def _rate(x: dict[str, Any]) -> str:
    """56% [8-100]: compact enough for an 80-column terminal."""
    if x["mean"] is None:
        return "–"
    if x["low"] is None or x["high"] is None:
        return f"{100 * x['mean']:.0f}%"
    return f"{100 * x['mean']:.0f}% [{100 * x['low']:.0f}-{100 * x['high']:.0f}]"


def _ci(lo: float | None, hi: float | None) -> str:
    return "–" if lo is None or hi is None else f"[{100 * lo:+.0f}, {100 * hi:+.0f}]"


def summary_tables(results: dict[str, Any]) -> list[Table]:
    t = Table(title=f"run {escape(results['provenance']['run_id'])} (95% intervals over task instances; * baseline)")
    for col in ("build", "tasks", "eps", "err", "exh", "success", "nav", "recog", "recog@goal", "tok/s", "s/step"):
        t.add_column(col, justify="left" if col == "build" else "right")
    for b in results["builds"]:
        r = b["rates"]
        s = b["speed"]
        t.add_row(escape(b["build"]) + (" *" if b["build"] == results["baseline"] else ""),
                  str(b["tasks"]), str(b["episodes"]), str(b["errors"]["episodes"]), str(b["exhausted"]["episodes"]),
                  *(_rate(r[n]) for n in ("success", "navigation", "recognition_base", "recognition_verify")),
                  "–" if s["decode_tok_s"] is None else f"{s['decode_tok_s']:.1f}",
                  "–" if s["step_s"] is None else f"{s['step_s']:.2f}")
    out = [t]
    if results["comparisons"]:
        c = Table(title=f"vs baseline {escape(results['baseline'])}")
        for col in ("build", "tasks", "diff", "95% CI pp", "sign-flip p", "McNemar", "W/L/T", "MDE"):
            c.add_column(col, justify="left" if col == "build" else "right")
        for x in results["comparisons"]:
            mde = x["mde"]["value"]
            c.add_row(escape(x["build"]), str(x["n_tasks"]), signed_pp(x["mean_diff"]), _ci(x["low"], x["high"]),
                      pval(x["sign_flip"]["p"]), pval(x["mcnemar"]["p"]) if x["mcnemar"] else "n/a",
                      f"{x['won']}/{x['lost']}/{x['tied']}", "–" if mde is None else f"{100 * mde:.0f} pp")
        out.append(c)
    return out
