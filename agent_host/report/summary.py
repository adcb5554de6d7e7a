"""A one-screen summary of results (rich tables), for `report`, `run` and `demo`."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from agent_host.report.render import interval, pct, pval, signed_pp


def summary_tables(results: dict[str, Any]) -> list[Table]:
    t = Table(title=f"run {escape(results['provenance']['run_id'])} (95% intervals, unit = task instance)")
    for col in ("build", "tasks", "episodes", "errors", "success", "navigation", "recognition", "tok/s", "s/step"):
        t.add_column(col, justify="left" if col == "build" else "right")
    for b in results["builds"]:
        r = b["rates"]
        s = b["speed"]
        t.add_row(escape(b["build"]) + (" (baseline)" if b["build"] == results["baseline"] else ""),
                  str(b["tasks"]), str(b["episodes"]), f"{b['errors']['episodes']}/{b['errors']['attempts']}",
                  *(f"{pct(r[n]['mean'])} {interval(r[n]['low'], r[n]['high'])}" for n in ("success", "navigation", "recognition")),
                  "–" if s["decode_tok_s"] is None else f"{s['decode_tok_s']:.1f}",
                  "–" if s["step_s"] is None else f"{s['step_s']:.2f}")
    out = [t]
    if results["comparisons"]:
        c = Table(title=f"vs baseline {escape(results['baseline'])}")
        for col in ("build", "tasks", "diff", "95% CI", "sign-flip p", "McNemar p", "won/lost/tied", "MDE"):
            c.add_column(col, justify="left" if col == "build" else "right")
        for x in results["comparisons"]:
            mde = x["mde"]["value"]
            c.add_row(escape(x["build"]), str(x["n_tasks"]), signed_pp(x["mean_diff"]), interval(x["low"], x["high"]),
                      pval(x["sign_flip"]["p"]), pval(x["mcnemar"]["p"]) if x["mcnemar"] else "n/a",
                      f"{x['won']}/{x['lost']}/{x['tied']}", "–" if mde is None else f"{100 * mde:.1f} pp")
        out.append(c)
    return out
