"""Report tables specified once (columns: header and how to fill a cell) and rendered to
Markdown here and to HTML by the template's `table` macro, so the two never disagree."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from agent_host.report.format import interval, md_cell, num, pct, pval, signed_pp
from agent_host.config.requests import Json
from agent_host.report.model import BuildSummary, Comparison, GroupRow, PassK, Results, TaskRow
from agent_host.report.replay import rate_text


@dataclass(frozen=True)
class Cell:
    text: str
    sub: str = ""                  # second line (an interval), smaller in HTML
    title: str = ""                # tooltip in HTML
    cls: str = "n"                 # CSS class in HTML
    filters: tuple[tuple[str, str], ...] = ()   # HTML: a link setting the viewer's filters (kind, app, ...)
    link: str = "viewer-filter"    # HTML: that link's class, which says what viewer.js does with it


@dataclass(frozen=True)
class Column:
    header: str
    fill: Callable[[Any], Cell]
    note: str = ""                 # second header line
    width: str = ""                # HTML: a share of a full-width table ("12%"); Markdown has none


@dataclass
class Table:
    columns: list[Column]
    rows: list[list[Cell]] = field(default_factory=list)
    caption: str = ""
    cls: str = ""                  # HTML: the table's CSS class

    # Any: a table's items are whatever its columns' fill functions read (builds, rows, tuples, JSON)
    @classmethod
    def of(cls, columns: list[Column], items: Sequence[Any], caption: str = "", css: str = "") -> Table:
        return cls(columns, [[c.fill(x) for c in columns] for x in items], caption, css)

    def markdown(self) -> str:
        head = "| " + " | ".join(md_cell(c.header + (f" ({c.note})" if c.note else "")) for c in self.columns) + " |"
        rule = "|" + "---|" * len(self.columns)
        body = ["| " + " | ".join(md_cell(c.text + (f" {c.sub}" if c.sub else "")) for c in row) + " |"
                for row in self.rows]
        return "\n".join([head, rule, *body]) + "\n"


def _rate(name: str) -> Callable[[BuildSummary], Cell]:
    def fill(b: BuildSummary) -> Cell:
        x = b.rates.get(name)
        if x is None:
            return Cell("–")
        return Cell(pct(x.mean), interval(x.low, x.high), f"{x.k}/{x.n} pooled episodes; {x.n_tasks} tasks; {x.method}")
    return fill


def _balanced(b: BuildSummary) -> Cell:
    x = b.balanced
    if x is None or x.mean is None:
        return Cell("–")
    return Cell(pct(x.mean), interval(x.low, x.high),
                f"(sensitivity + specificity) / 2; {x.n_tasks_sensitivity} and {x.n_tasks_specificity} tasks; {x.method}")


def _repeats(b: BuildSummary) -> str:
    return f"{b.repeats_min}" + (f"-{b.repeats_max}" if b.repeats_max != b.repeats_min else "")


def builds_table(results: Results) -> Table:
    """One row per build: counts, then every rate with its 95% interval."""
    base = results.baseline
    cols = [
        Column("build", lambda b: Cell(b.build + (" (baseline)" if b.build == base else ""), cls="")),
        Column("tasks", lambda b: Cell(str(b.tasks), f"({b.instances} instances)"
                                       if b.instances and b.instances != b.tasks else ""), "each one unit"),
        Column("repeats", lambda b: Cell(_repeats(b))),
        Column("episodes", lambda b: Cell(str(b.episodes)), "counted"),
        Column("errors", lambda b: Cell(f"{b.errors.episodes} / {b.errors.attempts}"), "eps / attempts"),
        Column("exhausted", lambda b: Cell(str(b.exhausted.episodes), cls="n bad" if b.exhausted.episodes else "n"),
               "budget ran out"),
        Column("success", _rate("success"), "base variants"),
        Column("navigation", _rate("navigation"), "base variants"),
        Column("recognition after navigating", _rate("recognition_base"), "base variants"),
        Column("sensitivity", _rate("sensitivity"), "verify: completes at the goal"),
        Column("specificity", _rate("specificity"), "base: never completes off it"),
        Column("balanced", _balanced, "recognition"),
        Column("premature", _rate("premature")),
        Column("undone", _rate("undone")),
        Column("collateral", _rate("collateral"), "done, and more changed"),
        Column("unrecognised", _rate("unrecognised")),
    ]
    return Table.of(cols, results.builds)


def trivial_table(results: Results) -> Table:
    """What the two do-nothing policies score on this run's tasks, beside the builds table."""
    t = results.trivial
    cols = [
        Column("trivial policy", lambda p: Cell(p.name, cls="")),
        Column("success", lambda p: Cell(pct(p.success)), "base variants"),
        Column("sensitivity", lambda p: Cell(pct(p.sensitivity)), "verify variants"),
        Column("specificity", lambda p: Cell(pct(p.specificity)), "base variants"),
        Column("balanced", lambda p: Cell(pct(p.balanced)), "recognition"),
    ]
    return Table.of(cols, list(t.policies.values()) if t else [])


def _mcnemar(c: Comparison) -> Cell:
    m = c.mcnemar
    if m is None:
        return Cell("n/a")
    return Cell(pval(m.p), f"({m.build_only} vs {m.baseline_only} discordant of {m.pairs} pairs)")


def _mde(c: Comparison) -> Cell:
    m = c.mde
    if m.value is None:
        return Cell(m.note or "–")
    return Cell(f"{100 * m.value:.1f} pp", f"({m.note})" if m.note else "")


def _needed(c: Comparison) -> Cell:
    n = c.needed
    if n is None:
        return Cell("–")
    parts = [f"{n.tasks} tasks"] if n.tasks else []
    if n.repeats:
        parts.append(f"{n.repeats} repeats")
    return Cell(f"{100 * n.target:.0f} pp: " + (" or ".join(parts) if parts else "–"), f"({n.note})" if n.note else "")


def _sign(x: float | None) -> str:
    return "n good" if (x or 0) > 0 else ("n bad" if (x or 0) < 0 else "n")


def comparisons_table(results: Results) -> Table:
    """One row per build against the baseline."""
    cols = [
        Column("build", lambda c: Cell(c.build, cls="")),
        Column("tasks", lambda c: Cell(str(c.n_tasks))),
        Column("mean difference", lambda c: Cell(signed_pp(c.mean_diff), cls=_sign(c.mean_diff))),
        Column("95% CI", lambda c: Cell(interval(c.low, c.high), title=c.method)),
        Column("sign-flip p", lambda c: Cell(pval(c.sign_flip.p), f"({c.sign_flip.method})")),
        Column("McNemar p", _mcnemar),
        Column("won / lost / tied", lambda c: Cell(f"{c.won} / {c.lost} / {c.tied}")),
        Column("MDE", _mde, "80% power"),
        Column("to detect", _needed, "at 80% power"),
    ]
    return Table.of(cols, results.comparisons)


def breakdown_table(results: Results) -> Table:
    """One row per task kind, then per app: each build's success headline on those tasks."""
    def success(build: str) -> Callable[[GroupRow], Cell]:
        def fill(g: GroupRow) -> Cell:
            x = g.builds.get(build)
            if x is None or not x.episodes:
                return Cell("–")
            return Cell(pct(x.mean), interval(x.low, x.high),
                        f"{x.k}/{x.n} pooled episodes; {x.n_tasks} tasks; {x.method}")
        return fill

    cols = [
        Column("by", lambda g: Cell(g.by, cls="")),
        # the viewer filters episodes by kind and app; the taught rows (run --taught) have no filter there
        Column("group", lambda g: Cell(g.group, cls="", title="show its episodes", filters=((g.by, g.group),))
               if g.by in ("kind", "app") else Cell(g.group, cls="")),
        Column("instances", lambda g: Cell(str(len(g.instances)), title=", ".join(g.instances))),
        *(Column(f"{b.build} success", success(b.build)) for b in results.builds),
    ]
    return Table.of(cols, results.breakdown)


def outcomes_table(results: Results, labels: Sequence[str]) -> Table:
    """One row per build: the share (and count) of its counted episodes with each label; "–"
    where results.json predates the label (schema 4 and older have no `collateral`: their judge
    could not tell it, so no count is not a count of 0)."""
    def share(label: str) -> Callable[[BuildSummary], Cell]:
        def fill(b: BuildSummary) -> Cell:
            x = b.outcomes.get(label)
            return Cell("–", title="not in this results.json") if x is None else Cell(f"{pct(x.fraction)} ({x.count})")
        return fill
    cols = [Column("build", lambda b: Cell(b.build, cls="")),
            *(Column(label, share(label)) for label in labels)]
    return Table.of(cols, results.builds)


def pass_k_table(results: Results) -> Table:
    """Two rows per build, pass^k and pass@k, a column per k."""
    def at(k: int) -> Callable[[tuple[BuildSummary, str, list[PassK]]], Cell]:
        def fill(row: tuple[BuildSummary, str, list[PassK]]) -> Cell:
            x = row[2][k - 1] if k <= len(row[2]) else None
            return Cell(pct(x.value), title=f"{x.n_tasks} tasks") if x is not None else Cell("")
        return fill
    cols = [Column("build", lambda row: Cell(row[0].build, cls="")),
            Column("measure", lambda row: Cell(row[1], cls="")),
            *(Column(f"k={k}", at(k)) for k in range(1, results.max_repeats + 1))]
    rows = [row for b in results.builds for row in ((b, "pass^k", b.pass_hat_k), (b, "pass@k", b.pass_at_k))]
    return Table.of(cols, rows)


def per_task_table(results: Results) -> Table:
    """One row per task instance: each build's successes of its counted episodes (Wilson
    interval), then each comparison's difference on it."""
    def tally(build: str) -> Callable[[TaskRow], Cell]:
        def fill(t: TaskRow) -> Cell:
            c = t.builds.get(build)
            if c is None:
                return Cell("–")
            err = f" +{c.errors} err" if c.errors else ""
            return Cell(f"{c.k}/{c.n}", interval(c.low, c.high) + err, cls="n bad" if c.errors else "n")
        return fill

    def diff(c: Comparison) -> Callable[[TaskRow], Cell]:
        return lambda t: Cell(signed_pp(c.per_task.get(t.instance)), cls=_sign(c.per_task.get(t.instance)))

    cols = [Column("task instance", lambda t: Cell(t.instance + (" (infeasible)" if t.infeasible else ""), cls="",
                                                  title="show its episodes", filters=(("task", t.instance),))),
            *(Column(b.build, tally(b.build)) for b in results.builds),
            *(Column(f"{c.build} − {c.baseline}", diff(c)) for c in results.comparisons)]
    return Table.of(cols, results.per_task)


def _decode(b: BuildSummary) -> Cell:
    s = b.speed
    if s is None:
        return Cell("–", title="no data")
    if s.scripted:
        return Cell("n/a (scripted)", title="a scripted policy decodes nothing")
    approx = " (approx)" if s.decode_source and s.decode_source.startswith("approx") else ""
    return Cell(num(s.decode_tok_s, 1) + approx, title=s.decode_source or "no data")


def speed_table(results: Results) -> Table:
    """One row per build: decode speed, latency and cost per step and per episode."""
    shared = results.provenance.get("shared_machine") or []
    cols = [
        Column("build", lambda b: Cell(b.build + (" (shared machine)" if b.build in shared else ""), cls="")),
        Column("decode tok/s", _decode),
        Column("TTFT s", lambda b: Cell(num(b.speed.ttft_s, 3))),
        Column("s / step", lambda b: Cell(num(b.speed.step_s, 2))),
        Column("model s / step", lambda b: Cell(num(b.speed.model_s_per_step, 2))),
        Column("tokens / episode", lambda b: Cell(num(b.speed.tokens_per_episode, 0))),
        Column("prompt tok / step", lambda b: Cell(num(b.speed.prompt_tokens_per_step, 0),
                                                   title="prompt tokens per model request, as the server counted "
                                                         "them: a vision build's include its images (its "
                                                         "observation: the configured builds' facts)")),
        Column("image tok / step", lambda b: Cell(num(b.speed.image_tokens_per_step, 0),
                                                  title="of the prompt tokens per request, the images' (vLLM "
                                                        "counts them); without images: the difference")),
        Column("s / episode", lambda b: Cell(num(b.speed.episode_wall_s, 1))),
        Column("prompt cached", lambda b: Cell(f"{num(100 * b.speed.cached_share, 0)} %"
                                               if b.speed.cached_share is not None else "-",
                                               title="share of prompt tokens served from the prefix cache, from step 2 on")),
    ]
    return Table.of(cols, results.builds)


def _or(x: object, blank: str = "–") -> str:
    return blank if x is None or x == "" else str(x)


def _phone_name(ph: object) -> str:
    return str(ph.get("serial") or ph.get("id") or ph) if isinstance(ph, dict) else str(ph)


def _provenance_rows(results: Results) -> list[tuple[str, Cell]]:
    p, t = results.provenance, results.totals
    dirty = {True: " (dirty working tree)", None: " (dirty state unknown)"}.get(p.get("git_dirty"), "")
    resumed = f" (resumed {', '.join(p['resumed_at'])})" if p.get("resumed_at") else ""
    attempts = f", max attempts {p['max_attempts']}" if p.get("max_attempts") else ""
    planned = f" of {p['episodes_planned']} planned" if p.get("episodes_planned") else ""
    order = p.get("order_mode")
    return [
        ("run", Cell(_or(p.get("run_id")), f"({p.get('run_dir')})", cls="")),
        ("created", Cell(_or(p.get("created_at")) + resumed, cls="")),
        ("git", Cell(_or(p.get("git_revision"), "unknown") + dirty, cls="dirty" if p.get("git_dirty") else "")),
        ("agent-host", Cell(_or(p.get("agent_host_version")), cls="")),
        ("versions", Cell(", ".join(f"{k} {_or(v)}" for k, v in (p.get("versions") or {}).items()), cls="")),
        ("python / platform", Cell(f"{_or(p.get('python'))} / {_or(p.get('platform'))}", cls="")),
        ("command", Cell(" ".join(p.get("command") or []), cls="")),
        ("repeats / seed", Cell(f"{_or(p.get('repeats'))} / {_or(p.get('seed'))}{attempts}", cls="")),
        ("order", Cell(f"interleaved, randomised by the seed: {order}" if order else "build after build", cls="")),
        ("phones", Cell(", ".join(_phone_name(ph) for ph in p.get("phones") or []), cls="")),
        ("episodes", Cell(f"{t['episodes']} ({t['counted']} counted, {t['errored']} ended in error, "
                          f"{t['error_attempts']} error attempts, {t['superseded_attempts']} superseded attempts)"
                          f"{planned}", cls="")),
        ("phone profile", Cell(_or(p.get("phone_profile")), cls="")),
    ]


def _seen(b: Json) -> str:
    """A vision build's observation (docs/builds.md "Vision builds"); "" for a text build."""
    mode = b.get("observation") or "text"
    if mode == "text" and not b.get("coordinates"):
        return ""
    size = (f" <= {b['max_pixels']} px" if b.get("max_pixels") else "") + \
        (f" long side {b['long_side']}" if b.get("long_side") else "")
    return f"sees: {mode}{size}" + (f", points in {b['coordinates']}" if b.get("coordinates") else "")


def _pairs(d: Json | None, sep: str = " ") -> str:
    return sep.join(f"{k}={v}" for k, v in (d or {}).items())


def _facts(b: Json) -> str:
    parts = [f"{b['bits_per_weight']} bpw" if b.get("bits_per_weight") else "",
             f"g{b['group_size']}" if b.get("group_size") else "", b.get("kernel") or "", _seen(b)]
    return " ".join(p for p in parts if p)


def config_table(results: Results) -> Table:
    """The builds as the manifest configured them. Args and env are long unbroken words (a JSON
    argument, VLLM_... names): fixed column widths let them wrap in a page-wide table rather
    than scroll it (report.css, table.config); env is one variable a line in HTML."""
    cols = [
        Column("build", lambda b: Cell(_or(b.get("id")), cls="strong"), width="12%"),
        Column("weight path", lambda b: Cell(b.get("weight_path") or "", cls=""), width="8%"),
        Column("server", lambda b: Cell(b.get("server") or "", cls=""), width="6%"),
        Column("model", lambda b: Cell(b.get("model") or "", cls=""), width="10%"),
        Column("args", lambda b: Cell(" ".join(b.get("args") or []), cls="code"), width="28%"),
        Column("env", lambda b: Cell(_pairs(b.get("env"), "\n"), cls="code"), width="16%"),
        Column("sampling", lambda b: Cell(_pairs(b.get("sampling")), cls=""), width="10%"),
        Column("facts", lambda b: Cell(_facts(b), cls=""), width="10%"),
    ]
    return Table.of(cols, results.provenance.get("builds") or [], css="config")


def task_files_table(results: Results) -> Table:
    """The task files the run read, each with the sha256 of its content."""
    cols = [Column("task file", lambda row: Cell(row[0], cls="code")),
            Column("sha256", lambda row: Cell(str(row[1]), cls="code"))]
    return Table.of(cols, list((results.provenance.get("task_files") or {}).items()))


def sequential_table(results: Results) -> Table:
    """A sequential run's repeats per task and each build's successes over its counted episodes."""
    q = results.sequential or {}
    cols = [Column("task", lambda a: Cell(str(a["task"]), cls="")),
            Column("repeats", lambda a: Cell(str(a["repeats"]))),
            Column(str(q.get("baseline", "")), lambda a: Cell(str(a["baseline"]))),
            Column(str(q.get("build", "")), lambda a: Cell(str(a["build"])))]
    return Table.of(cols, q.get("allocation") or [])


def provenance_table(results: Results) -> Table:
    """What the run was: its id, code revision, versions, command, design and phones."""
    cols = [Column("", lambda row: Cell(row[0], cls="")), Column("", lambda row: row[1])]
    return Table.of(cols, _provenance_rows(results))


# -- a replay's section (report/replay.py's summaries, one per reference build) ----------------


def replay_table(replay: Json, roles: Sequence[str]) -> Table:
    """Per candidate: the share of the reference's steps it answered alike, by role."""
    def by_role(role: str) -> Column:
        return Column(role, lambda bc: Cell(rate_text(bc[1]["by_role"].get(role)), cls=""))

    def divergence(c: Json) -> Cell:
        firsts = c["first_divergence"]
        return Cell(f"{sum(1 for d in firsts if d.get('step'))}/{len(firsts)} episodes", cls="")

    cols = [Column("build", lambda bc: Cell(bc[0], cls="strong")),
            Column("all steps", lambda bc: Cell(rate_text(bc[1]["agreement"]), cls="")),
            *[by_role(role) for role in roles],
            Column("completion agreement", lambda bc: Cell(rate_text(bc[1]["completion_agreement"]), cls="")),
            Column("false completion", lambda bc: Cell(rate_text(bc[1]["false_completion"]), cls="")),
            Column("log-prob gap", lambda bc: Cell(num(bc[1]["logprob_gap"]["all"], 3))),
            Column("first divergence", lambda bc: divergence(bc[1])),
            Column("steps/min", lambda bc: Cell(num(bc[1]["steps_per_minute"], 1)))]
    return Table.of(cols, list(replay["candidates"].items()))


def replay_gaps_table(gaps: list[Json]) -> Table:
    """A candidate's largest log-prob gaps; each episode links to that step in the viewer."""
    cols = [Column("episode", lambda g: Cell(g["episode_id"], cls="", link="replay-link",
                                             filters=(("episode", g["episode_id"]), ("step", str(g["step"]))))),
            Column("step", lambda g: Cell(str(g["step"]))),
            Column("role", lambda g: Cell(g["role"], cls="")),
            Column("gap", lambda g: Cell(num(g["gap"], 3))),
            Column("action", lambda g: Cell(str(g.get("match", "")), cls=""))]
    return Table.of(cols, gaps)


def robustness_table(results: Results) -> Table:
    """Per build and varied condition: success without and with variations, and the gap."""
    rob = results.robustness
    cols = [
        Column("build", lambda r: Cell(r.build, cls="")),
        Column("condition", lambda r: Cell(r.condition, cls="")),
        Column("unvaried", lambda r: Cell(pct(r.plain)), "success"),
        Column("varied", lambda r: Cell(pct(r.varied)), "success"),
        Column("gap", lambda r: Cell(signed_pp(r.diff), cls=_sign(r.diff)), "varied - unvaried"),
        Column("95% CI", lambda r: Cell(interval(r.low, r.high), title=r.method)),
        Column("tasks", lambda r: Cell(f"{r.n_tasks}", f"({r.n_instances} instances)")),
    ]
    return Table.of(cols, rob.rows if rob else [])


def variation_kinds_table(results: Results) -> Table:
    """Per build and single kind of variation: the paired episodes it broke and mended."""
    rob = results.robustness
    cols = [
        Column("build", lambda k: Cell(k.build, cls="")),
        Column("kind", lambda k: Cell(k.kind, cls="")),
        Column("pairs", lambda k: Cell(str(k.pairs)), "base episodes"),
        Column("failures caused", lambda k: Cell(str(k.caused), ", ".join(k.instances[:5]),
                                                 cls="n bad" if k.caused else "n"), "success unvaried only"),
        Column("mended", lambda k: Cell(str(k.fixed)), "success varied only"),
    ]
    return Table.of(cols, rob.kinds if rob else [])
