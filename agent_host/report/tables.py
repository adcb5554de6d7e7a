"""Report tables specified once (columns: header and how to fill a cell) and rendered to
Markdown here and to HTML by the template's `table` macro, so the two never disagree."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from agent_host.report.format import interval, md_cell, pct


@dataclass(frozen=True)
class Cell:
    text: str
    sub: str = ""                  # second line (an interval), smaller in HTML
    title: str = ""                # tooltip in HTML
    cls: str = "n"                 # CSS class in HTML


@dataclass(frozen=True)
class Column:
    header: str
    fill: Callable[[Any], Cell]
    note: str = ""                 # second header line


@dataclass
class Table:
    columns: list[Column]
    rows: list[list[Cell]] = field(default_factory=list)
    caption: str = ""

    @classmethod
    def of(cls, columns: list[Column], items: list[Any], caption: str = "") -> Table:
        return cls(columns, [[c.fill(x) for c in columns] for x in items], caption)

    def markdown(self) -> str:
        head = "| " + " | ".join(md_cell(c.header + (f" ({c.note})" if c.note else "")) for c in self.columns) + " |"
        rule = "|" + "---|" * len(self.columns)
        body = ["| " + " | ".join(md_cell(c.text + (f" {c.sub}" if c.sub else "")) for c in row) + " |"
                for row in self.rows]
        return "\n".join([head, rule, *body]) + "\n"


def _rate(name: str) -> Callable[[Any], Cell]:
    def fill(b: Any) -> Cell:
        x = b["rates"][name]
        return Cell(pct(x["mean"]), interval(x["low"], x["high"]),
                    f"{x['k']}/{x['n']} pooled episodes; {x['n_tasks']} tasks; {x.get('method', '')}")
    return fill


def builds_table(results: Any) -> Table:
    """One row per build: counts, then every rate with its 95% interval."""
    base = results["baseline"]
    cols = [
        Column("build", lambda b: Cell(b["build"] + (" (baseline)" if b["build"] == base else ""), cls="")),
        Column("tasks", lambda b: Cell(str(b["tasks"]))),
        Column("repeats", lambda b: Cell(f"{b['repeats_min']}" + (f"-{b['repeats_max']}" if b["repeats_max"] != b["repeats_min"] else ""))),
        Column("episodes", lambda b: Cell(str(b["episodes"])), "counted"),
        Column("errors", lambda b: Cell(f"{b['errors']['episodes']} / {b['errors']['attempts']}"), "eps / attempts"),
        Column("exhausted", lambda b: Cell(str(b["exhausted"]["episodes"]),
                                           cls="n bad" if b["exhausted"]["episodes"] else "n"), "budget ran out"),
        Column("success", _rate("success")),
        Column("navigation", _rate("navigation"), "base variants"),
        Column("recognition after navigating", _rate("recognition_base"), "base variants"),
        Column("recognition at the goal", _rate("recognition_verify"), "verify variants"),
        Column("premature", _rate("premature")),
        Column("undone", _rate("undone")),
        Column("unrecognised", _rate("unrecognised")),
    ]
    return Table.of(cols, list(results["builds"]))


def comparisons_table(results: Any) -> Table:
    """One row per build against the baseline."""
    from agent_host.report.format import pval, signed_pp

    def mc(c: Any) -> Cell:
        m = c["mcnemar"]
        if not m:
            return Cell("n/a")
        return Cell(pval(m["p"]), f"({m['build_only']} vs {m['baseline_only']} discordant of {m['pairs']} pairs)")

    def mde(c: Any) -> Cell:
        m = c["mde"]
        if m["value"] is None:
            return Cell(m["note"] or "–")
        return Cell(f"{100 * m['value']:.1f} pp", f"({m['note']})" if m.get("note") else "")

    def needed(c: Any) -> Cell:
        n = c["needed"]
        goal = f"{100 * n['target']:.0f} pp"
        parts = []
        if n.get("tasks"):
            parts.append(f"{n['tasks']} tasks")
        if n.get("repeats"):
            parts.append(f"{n['repeats']} repeats")
        return Cell(f"{goal}: " + (" or ".join(parts) if parts else "–"), f"({n['note']})" if n.get("note") else "")

    cols = [
        Column("build", lambda c: Cell(c["build"], cls="")),
        Column("tasks", lambda c: Cell(str(c["n_tasks"]))),
        Column("mean difference", lambda c: Cell(signed_pp(c["mean_diff"]),
                                                 cls="n good" if (c["mean_diff"] or 0) > 0 else
                                                 ("n bad" if (c["mean_diff"] or 0) < 0 else "n"))),
        Column("95% CI", lambda c: Cell(interval(c["low"], c["high"]), title=c.get("method", ""))),
        Column("sign-flip p", lambda c: Cell(pval(c["sign_flip"]["p"]), f"({c['sign_flip']['method']})")),
        Column("McNemar p", mc),
        Column("won / lost / tied", lambda c: Cell(f"{c['won']} / {c['lost']} / {c['tied']}")),
        Column("MDE", mde, "80% power"),
        Column("to detect", needed, "at 80% power"),
    ]
    return Table.of(cols, list(results["comparisons"]))
