"""A one-screen summary of results (rich tables), for `report`, `run` and `demo`."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from agent_host.report.format import pval, signed_pp
from agent_host.report.model import Rate, Results


def _rate(x: Rate | None) -> str:
    """56% [8-100]: compact enough for an 80-column terminal."""
    if x is None or x.mean is None:
        return "–"
    if x.low is None or x.high is None:
        return f"{100 * x.mean:.0f}%"
    return f"{100 * x.mean:.0f}% [{100 * x.low:.0f}-{100 * x.high:.0f}]"


def _ci(lo: float | None, hi: float | None) -> str:
    return "–" if lo is None or hi is None else f"[{100 * lo:+.0f}, {100 * hi:+.0f}]"


# Any: results.json's JSON form, read as well as the model
def summary_tables(results: Results | dict[str, Any]) -> list[Table]:
    """The builds and the comparisons; `results` is the model or its JSON form."""
    r = results if isinstance(results, Results) else Results.model_validate(results)
    t = Table(title=f"run {escape(str(r.provenance.get('run_id')))} (95% intervals over tasks; * baseline)")
    for col in ("build", "tasks", "eps", "err", "exh", "success", "nav", "recog", "sens", "spec", "tok/s", "s/step"):
        t.add_column(col, justify="left" if col == "build" else "right")
    for b in r.builds:
        s = b.speed
        t.add_row(escape(b.build) + (" *" if b.build == r.baseline else ""),
                  str(b.tasks), str(b.episodes), str(b.errors.episodes), str(b.exhausted.episodes),
                  *(_rate(b.rates.get(n)) for n in ("success", "navigation", "recognition_base", "sensitivity",
                                                    "specificity")),
                  "n/a" if s is not None and s.scripted else
                  "–" if s is None or s.decode_tok_s is None else f"{s.decode_tok_s:.1f}",
                  "–" if s is None or s.step_s is None else f"{s.step_s:.2f}")
    if r.trivial:
        for key, p in r.trivial.policies.items():
            t.add_row(f"[dim]({escape(p.name)})[/dim]", str(p.n_tasks), "", "", "",
                      *("–" if x is None else f"{100 * x:.0f}%" for x in (p.success, None, None, p.sensitivity,
                                                                          p.specificity)), "", "")
    t.caption = ("success and nav over base variants; sens: task_complete at the goal (verify); spec: none off it "
                 "(base); (dim rows): what doing nothing scores on these tasks")
    out = [t]
    if r.comparisons:
        c = Table(title=f"vs baseline {escape(r.baseline)}")
        for col in ("build", "tasks", "diff", "95% CI pp", "sign-flip p", "McNemar", "W/L/T", "MDE"):
            c.add_column(col, justify="left" if col == "build" else "right")
        for x in r.comparisons:
            mde = x.mde.value
            c.add_row(escape(x.build), str(x.n_tasks), signed_pp(x.mean_diff), _ci(x.low, x.high),
                      pval(x.sign_flip.p), pval(x.mcnemar.p) if x.mcnemar else "n/a",
                      f"{x.won}/{x.lost}/{x.tied}", "–" if mde is None else f"{100 * mde:.0f} pp")
        out.append(c)
    return out


# Any: results.json's JSON form, read as well as the model
def power_line(results: Results | dict[str, Any]) -> str | None:
    """What this run's design detects in a comparison (80% power), and what 10 pp (or the
    chosen difference) would need: one line for the terminal."""
    r = results if isinstance(results, Results) else Results.model_validate(results)
    w = r.power
    if w is None:
        return None
    can = ("cannot detect a difference of any size up to 100 pp" if w.mde is None
           else f"detects differences of {100 * w.mde:.0f} pp")
    need = []
    if w.needed.tasks:
        need.append(f"{w.needed.tasks} tasks x {w.repeats} repeats")
    if w.needed.repeats:
        need.append(f"{w.tasks} tasks x {w.needed.repeats} repeats")
    return (f"this design ({w.tasks} tasks x {w.repeats} repeats) {can} with 80% power; "
            f"{100 * w.needed.target:.0f} pp needs " + (" or ".join(need) if need else "more than 10,000 tasks"))
