"""Write report.md, a self-contained report.html, results.json and episodes.csv.

report.html fetches nothing from the network: styles, scripts and charts (SVG) are inline,
and a Content-Security-Policy forbids any other source. Each episode's steps and screenshots
(downscaled WebP data: URIs, each distinct image once per episode) are a page of their own,
trajectories/NNNN.js beside it, which the viewer loads by a <script> tag when the episode is
shown: a run of long trajectories would otherwise make report.html as large as all of them
(fetch() of a local file is refused under file://, a script tag is not). All text from
the phone or the model reaches the page either through jinja2 autoescaping or as JSON inside
a `<script type="application/json">` that the viewer reads and shows with textContent.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import re
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, ParamSpec, TypeVar

import jinja2
from markupsafe import Markup

from agent_host.config.records import EpisodeRecord, NotRegularFile, StepRecord, read_regular, write_text_atomic
from agent_host.config.requests import Json
from agent_host.errors import UserError, check_dir_usable
from agent_host.report import selection
from agent_host.report.format import interval, md_cell, num, pct, pval, signed_pp
from agent_host.report.load import Run, load_run, load_steps
from agent_host.report.model import Results, finite
from agent_host.report.results import analyse, csv_rows
from agent_host.report.breakdown import TaskFacts, task_facts
from agent_host.report.tables import (breakdown_table, builds_table, comparisons_table, config_table, outcomes_table,
                                      pass_k_table, per_task_table, provenance_table, replay_gaps_table, replay_table,
                                      sequential_table, speed_table, task_files_table, trivial_table,
                                      robustness_table, variation_kinds_table)
from agent_host.config.replay_log import ROLES
from agent_host.report.replay import load_summaries, viewer_lines, with_replay
from agent_host.report.state import start_state, state_diff
from agent_host.report.tables import Table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

TEMPLATES = Path(__file__).with_name("templates")
PAGES = "trajectories"
INDEX = f"{PAGES}/index.js"
_PAGE_NAME = re.compile(r"\d{4,}\.js")
SHOT_MAX_WIDTH = 300
SHOT_QUALITY = 65

OUTCOME_COLOURS = {
    "success": "#2e7d32", "premature": "#f9a825", "undone": "#8e24aa", "collateral": "#d81b60",
    "unrecognised": "#1e88e5", "infeasible_claimed": "#6d4c41", "nav_fail": "#c62828",
    "exhausted": "#455a64", "error": "#757575",
}


def json_for_script(data: object) -> Markup:
    """JSON safe inside <script type="application/json">: no `<`, `>` or `&` survive raw."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(text)


def _env(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=autoescape,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters.update(pct=pct, interval=interval, signed_pp=signed_pp, num=num, pval=pval, md=md_cell,
                       tojson_script=json_for_script)
    # a replay's tables are one per replay (and per candidate), so the templates make them
    env.globals.update(colours=OUTCOME_COLOURS, bar_labels=selection.BAR_LABELS, replay_table=replay_table,
                       replay_gaps_table=replay_gaps_table)
    return env


# --------------------------------------------------------------------------- charts

def _svg(fig: Figure, salt: str) -> Markup:
    import matplotlib
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        FigureCanvasSVG(fig).print_svg(buf)   # type: ignore[no-untyped-call]  # matplotlib leaves it unannotated
    text = buf.getvalue()
    return Markup(text[text.index("<svg"):])


P = ParamSpec("P")
R = TypeVar("R")


def _literal_text(plot: Callable[P, R]) -> Callable[P, R]:
    """`plot` with every text of its figure shown as written: a build named `$\\frac{x$` is a
    name, not a formula matplotlib's mathtext would refuse to parse (text is parsed when drawn,
    so the whole plot, drawing included, runs with parsing off)."""
    import functools

    @functools.wraps(plot)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
        import matplotlib
        with matplotlib.rc_context({"text.parse_math": False}):
            return plot(*args, **kwargs)
    return wrapped


@_literal_text
def outcome_bars(results: Results) -> Markup:
    from matplotlib.figure import Figure
    builds = results.builds
    fig = Figure(figsize=(8, 0.55 * len(builds) + 1.2))
    ax = fig.add_subplot()
    names = [b.build for b in builds]
    y = list(range(len(builds)))[::-1]
    left = [0.0] * len(builds)
    for label in selection.BAR_LABELS:
        # a results.json before schema 5 has no `collateral`: no segment, and the legend keeps it
        w = [100 * (b.outcomes[label].fraction or 0) if label in b.outcomes else 0.0 for b in builds]
        name = "infeasible_claimed (feasible task)" if label == "infeasible_claimed" else label
        ax.barh(y, w, left=left, color=OUTCOME_COLOURS[label], label=name, height=0.6)
        for yi, li, wi in zip(y, left, w):
            if wi >= 7:
                ax.text(li + wi / 2, yi, f"{wi:.0f}%", ha="center", va="center", color="white", fontsize=8)
        left = [a + b for a, b in zip(left, w)]
    ax.set_yticks(y, names)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of counted episodes (errors and exhausted excluded)")
    ax.legend(ncol=3, fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    fig.tight_layout()
    return _svg(fig, "outcomes")


@_literal_text
def speed_plot(results: Results) -> Markup | None:
    from matplotlib.figure import Figure
    pts = []
    # decode tok/s on the x axis only if every build has it from the same kind of source
    speeds = [b.speed for b in results.builds if b.speed is not None]
    kinds = {(sp.decode_source or "").split(":")[0] for sp in speeds}
    use_decode = len(speeds) == len(results.builds) and all(sp.decode_tok_s for sp in speeds) and len(kinds) == 1
    for b in results.builds:
        s = b.rates["success"]
        if b.speed is None:
            continue
        x = b.speed.decode_tok_s if use_decode else b.speed.step_s
        if x is None or s.mean is None:
            continue
        lo = s.low if s.low is not None else s.mean
        hi = s.high if s.high is not None else s.mean
        pts.append((b.build, x, 100 * s.mean, 100 * (s.mean - lo), 100 * (hi - s.mean)))
    if not pts:
        return None
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    for name, x, yv, el, eh in pts:
        ax.errorbar([x], [yv], yerr=[[el], [eh]], fmt="o", capsize=4)
        ax.annotate(name, (x, yv), textcoords="offset points", xytext=(6, 6), fontsize=8)
    ax.set_xlabel("decode tokens/s" if use_decode else "seconds per step (lower is faster)")
    ax.set_ylabel("success rate, % (95% CI over tasks)")
    ax.set_ylim(-5, 105)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _svg(fig, "speed")


# --------------------------------------------------------------------------- viewer data

class ShotStore:
    """Screenshots for the viewer: each distinct file (by content) is decoded, downscaled and
    encoded once (WebP, or JPEG where Pillow lacks WebP), in a few threads; steps refer to
    them by index, so a screen that recurs across steps, repeats and builds is stored once.
    Paths are added a batch (a chunk of episodes) at a time and encoded by `encode_batch`, so
    only the batch's paths are held, not every screenshot path of the run."""

    def __init__(self) -> None:
        self.srcs: list[str] = []      # distinct data URIs, in order of first use
        self._seen: dict[str, dict[str, Any] | None] = {}   # content digest -> its ref, or None (not an image)
        self._paths: list[Path] = []
        self._by_path: dict[Path, int] = {}
        self.warnings: list[str] = []

    def add(self, path: Path) -> int:
        """`path`'s position in this batch."""
        if path not in self._by_path:
            self._by_path[path] = len(self._paths)
            self._paths.append(path)
        return self._by_path[path]

    @staticmethod
    def _encode(data: bytes) -> Json | None:
        from PIL import Image, features
        try:
            with Image.open(io.BytesIO(data)) as im:  # raises DecompressionBombError past Pillow's pixel limit
                w, h = im.size
                im.draft("RGB", (SHOT_MAX_WIDTH, h))          # JPEG sources decode smaller
                rgb = im.convert("RGB")
                factor = rgb.size[0] // SHOT_MAX_WIDTH
                if factor >= 2:
                    rgb = rgb.reduce(factor)
                if rgb.size[0] > SHOT_MAX_WIDTH:
                    rgb = rgb.resize((SHOT_MAX_WIDTH, max(1, round(rgb.size[1] * SHOT_MAX_WIDTH / rgb.size[0]))),
                                     Image.Resampling.BILINEAR)
                buf = io.BytesIO()
                if features.check("webp"):
                    rgb.save(buf, "WEBP", quality=SHOT_QUALITY, method=2)
                    mime = "image/webp"
                else:
                    rgb.save(buf, "JPEG", quality=SHOT_QUALITY)
                    mime = "image/jpeg"
        except Image.DecompressionBombError as exc:
            return {"bomb": str(exc)}
        except (OSError, ValueError, SyntaxError):
            return None
        return {"src": f"data:{mime};base64," + base64.b64encode(buf.getvalue()).decode(), "w": w, "h": h}

    def encode_batch(self) -> list[Json | None]:
        """Per path added since the last call: {"i": index into `srcs`, "w", "h"}, or None
        (unreadable, not an image); contents not seen in an earlier batch are encoded now."""
        from concurrent.futures import ThreadPoolExecutor
        digests: list[str | None] = []
        unique: dict[str, bytes] = {}      # contents new in this batch
        first: dict[str, Path] = {}
        for p in self._paths:
            try:
                data = read_regular(p)
            except NotRegularFile:   # a FIFO would hang the report: skipped, and said
                self.warnings.append(f"{p}: not a regular file; screenshot not shown")
                digests.append(None)
                continue
            except OSError:
                digests.append(None)
                continue
            d = hashlib.sha1(data).hexdigest()
            digests.append(d)
            if d not in self._seen:
                unique.setdefault(d, data)
                first.setdefault(d, p)
        self._paths, self._by_path = [], {}
        keys = list(unique)
        if keys:
            with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
                encoded = dict(zip(keys, pool.map(self._encode, (unique[k] for k in keys))))
        for k in keys:
            e = encoded[k]
            if e is not None and "bomb" in e:
                # a header claiming more pixels than Pillow will decode: shown as no screenshot
                self.warnings.append(f"{first[k]}: not shown ({e['bomb']})")
                e = None
            if e is not None:
                self._seen[k] = {"i": len(self.srcs), "w": e["w"], "h": e["h"]}
                self.srcs.append(e["src"])
            else:
                self._seen[k] = None
        return [None if d is None else self._seen[d] for d in digests]


def _step_row(s: StepRecord) -> Json:
    """One step as the viewer shows it. `asked` and `clean` (the goal's two halves) are None in
    records from before the whole-state judge; the scope's diff leaves `check` for `state`."""
    raw = s.raw_output
    check = {k: v for k, v in (s.check_detail or {}).items() if k != "state"}
    return {
        "step": s.step, "observation": s.observation, "package": s.package, "shot": None,
        "action": s.action.model_dump(mode="json") if s.action else None,
        "raw": json.dumps(raw, indent=2, ensure_ascii=False) if raw else "",
        "retry_error": s.retry_error, "goal": s.goal, "asked": s.asked, "clean": s.clean,
        "check": check or None, "state": state_diff(s.check_detail or {}),
        "times": s.times.model_dump(), "usage": s.usage.model_dump(),
    }


def _viewer_episode(run: Run, r: EpisodeRecord, screenshots: bool, store: ShotStore, pending: list[tuple[Json, int]],
                    task_meta: dict[str, TaskFacts], warnings: list[str], read_folder: bool = True) -> Json:
    """One episode's viewer row with its steps and screenshots (added to `store`); with
    `read_folder` False, the row alone (its folder could not be read)."""
    steps: list[StepRecord] = []
    if read_folder:
        steps, w = load_steps(run, r.episode_id)
        warnings += w
    folder = run.episode_dir(r.episode_id) if read_folder else None   # None (and no steps) when the id leads outside
    used: set[str] = set()
    srows = []
    for s in steps:
        row = _step_row(s)
        name = s.screenshot or f"step-{s.step:03d}.png"
        shot = run.inside(folder / name) if screenshots and folder is not None else None
        if shot is not None and shot.is_file():
            used.add(name)
            pending.append((row, store.add(shot)))
        sent = run.inside(folder / s.image) if s.image and screenshots and folder is not None else None
        if sent is not None and sent.is_file():   # a vision build's prompt image, marks and all
            row["sent"] = {"shot": None}
            pending.append((row["sent"], store.add(sent)))
        srows.append(row)
    extra = []
    if screenshots and folder is not None and folder.is_dir():
        for p in sorted(folder.glob("step-*.png")):
            inside = run.inside(p)
            if p.name not in used and inside is not None:
                row = {"name": p.name, "shot": None}
                pending.append((row, store.add(inside)))
                extra.append(row)
    facts: TaskFacts | dict[str, object] = task_meta.get(r.task) or {}
    return {
        "id": r.episode_id, "build": r.build, "instance": selection.instance_of(r), "task": r.task,
        "app": facts.get("app"), "kinds": facts.get("kinds", []),
        "variant": r.variant, "infeasible": r.infeasible, "repeat": r.repeat, "seed": r.seed,
        "attempt": r.attempt, "phone": r.phone, "outcome": r.outcome,
        "label": selection.effective_label(r), "success": r.outcome != "error" and selection.is_success(r),
        "error": r.error, "reason": r.reason, "goal_initial": r.goal_initial,
        "goal_first_step": r.goal_first_step, "goal_lost_step": r.goal_lost_step,
        "goal_final": r.goal_final, "complete_step": r.complete_step,
        "infeasible_step": r.infeasible_step, "n_steps": r.steps, "max_steps": r.max_steps,
        "wall_s": r.wall_s, "usage": r.usage.model_dump(), "steps": srows, "extra_shots": extra,
        "start_state": start_state(run, folder),
    }


CHUNK = 50   # episodes read (steps, screenshots) before they are handed on: a batch of screenshots to encode


def viewer_episodes(run: Run, screenshots: bool, warnings: list[str]) -> Iterator[Json]:
    """Every final episode's viewer row with its steps and its own screenshots (`shots`, the
    data its rows' `shot` indices point into), in the viewer's order, a chunk at a time: a
    run's steps are never all held at once (at 200 000 episodes they were most of a 1.9 GB
    report). The viewer's warnings are added to `warnings` once every episode is read."""
    sel = selection.select_latest(run.records)
    final = sel.counted + sel.errored + sel.exhausted
    order = {b: i for i, b in enumerate(run.builds())}
    final.sort(key=lambda r: (selection.instance_of(r), r.repeat, order.get(r.build, 99)))
    task_meta = task_facts(run.manifest)     # app and kinds, for the viewer's filters
    replayed = viewer_lines(run, warnings)             # each candidate's answer at a replayed step
    store = ShotStore()
    for start in range(0, len(final), CHUNK):
        episodes = []
        pending: list[tuple[dict[str, Any], int]] = []       # (dict that gets "shot", its place in the batch)
        for r in final[start:start + CHUNK]:
            try:
                episodes.append(_viewer_episode(run, r, screenshots, store, pending, task_meta, warnings))
            except OSError as exc:
                # an unreadable folder (chmod 000, a disk error): the episode's row without its
                # steps, named once; the statistics never depend on steps
                warnings.append(f"{run.dir / 'episodes' / r.episode_id}: cannot read ({exc.strerror or exc}); "
                                "its steps are left out of the viewer")
                episodes.append(_viewer_episode(run, r, False, store, pending, task_meta, [], read_folder=False))
        for ep in episodes:
            for row in ep["steps"]:
                row["replay"] = replayed.get(ep["id"], {}).get(str(row["step"]))
        refs = store.encode_batch()
        for row, i in pending:
            row["shot"] = refs[i]
        for ep in episodes:
            ep["extra_shots"] = [x for x in ep["extra_shots"] if x["shot"]]
            ep = finite(ep)
            ep["shots"] = _episode_shots(ep, store.srcs)
            yield ep
    warnings += store.warnings + run.refused


def _episode_shots(ep: Json, srcs: list[str]) -> list[str]:
    """The episode's own list of the images it shows, its rows' indices renumbered into it."""
    local: dict[int, int] = {}
    sent = [row["sent"] for row in ep["steps"] if row.get("sent")]
    for row in [*ep["steps"], *ep["extra_shots"], *sent]:
        if row["shot"] is not None:
            i = local.setdefault(row["shot"]["i"], len(local))
            row["shot"] = {**row["shot"], "i": i}
    return [srcs[i] for i in local]


def viewer_head(run: Run, baseline: str) -> Json:
    """What report.html embeds of the viewer: the episodes' rows are trajectories/index.js."""
    return {"builds": run.builds(), "baseline": baseline, "colours": OUTCOME_COLOURS, "index": INDEX}


def viewer_data(run: Run, baseline: str, screenshots: bool = True) -> Json:
    """The whole viewer in memory (every episode with its steps): for tests and small runs;
    a report streams `viewer_episodes` into its pages instead."""
    warnings: list[str] = []
    episodes = list(viewer_episodes(run, screenshots, warnings))
    return {**viewer_head(run, baseline), "episodes": episodes, "warnings": warnings}


# --------------------------------------------------------------------------- writing

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(cell: object) -> object:
    """A text cell a spreadsheet would run as a formula gets a leading apostrophe (the
    usual neutralisation: shown as text, the apostrophe hidden); numbers stay numbers.
    Line breaks become "\n", which the writer quotes (a bare CR is not quoted, and a
    spreadsheet splits the row there, making the rest of the cell a cell of its own); NULs go."""
    if isinstance(cell, str):
        cell = cell.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
        if cell.startswith(_FORMULA_START) or cell.startswith("\n"):
            return "'" + cell
    return cell


def _csv_text(header: list[str], rows: Iterable[list[object]], batch: int = 2000) -> Iterator[str]:
    """episodes.csv a batch of rows at a time, so the text of every row is never held at once."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for n, row in enumerate(rows, 1):
        w.writerow([csv_safe(c) for c in row])
        if n % batch == 0:
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
    yield buf.getvalue()


def _tables(results: Results) -> dict[str, Table]:
    return {"builds": builds_table(results), "comparisons": comparisons_table(results),
            "breakdown": breakdown_table(results), "trivial": trivial_table(results),
            "outcomes": outcomes_table(results, selection.BAR_LABELS), "pass_k": pass_k_table(results),
            "per_task": per_task_table(results), "speed": speed_table(results),
            "provenance": provenance_table(results), "config": config_table(results),
            "task_files": task_files_table(results), "sequential": sequential_table(results),
            "robustness": robustness_table(results), "variation_kinds": variation_kinds_table(results)}


def render_markdown(results: Results, replays: list[Json] | None = None) -> str:
    return _env(False).get_template("report.md.j2").render(r=results, tables=_tables(results),
                                                           replays=replays or [], roles=ROLES)


def _page(n: int, ep: Json) -> str | None:
    """Move the episode's steps and screenshots out of `ep` into the text of its page, leaving
    `ep` its row with a reference to the page (`page`); None when it has nothing to show but
    its row (most episodes of a large run have no folder; a page each made 100 000 files)."""
    shots, steps, extra, start = ep.pop("shots"), ep.pop("steps"), ep.pop("extra_shots"), ep.pop("start_state", None)
    if not (steps or extra or start):
        return None
    page = {"shots": shots, "steps": steps, "extra_shots": extra, "start_state": start}
    ep["page"] = f"{PAGES}/{n:04d}.js"
    return f"agentHostEpisode({n}, {json_for_script(page)});\n"


def write_pages(out_dir: Path, episodes: Iterable[Json]) -> None:
    """Write each episode's page (atomically) as its episode comes, and the episodes' rows
    into trajectories/index.js, so report.html's size does not grow with the run's episode
    count; then remove the pages of an earlier report that this one no longer has (so the
    folder holds this report's pages only). One episode at a time: neither the steps nor
    the rows of every episode are ever held (index.js is written as it is made)."""
    folder = out_dir / PAGES
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise UserError(f"{folder}: not a directory of the report (a symlink or a file); remove it")
    folder.mkdir(exist_ok=True)
    keep = {Path(INDEX).name}

    def index() -> Iterator[str]:
        # the same text as json_for_script of the list of rows, one row at a time
        yield "agentHostIndex(["
        for n, ep in enumerate(episodes):
            text = _page(n, ep)
            if text is not None:
                # whole or not at all, but not fsynced: an fsync per page was most of a 100 000-episode
                # report's time, and a page lost to a power cut is rewritten by the next report
                # (report.html, written after them, is fsynced)
                write_text_atomic(out_dir / ep["page"], text, durable=False)
                keep.add(Path(ep["page"]).name)
            yield ("," if n else "") + json_for_script(ep)
        yield "]);\n"

    # renamed into place after every page is written, so it never names a page not yet there
    write_text_atomic(out_dir / INDEX, index(), durable=False)
    for old in folder.iterdir():
        if (_PAGE_NAME.fullmatch(old.name) or old.name == Path(INDEX).name) and old.name not in keep and old.is_file():
            old.unlink()


def render_html(results: Results, viewer: Json, replays: list[Json] | None = None) -> str:
    js = (TEMPLATES / "viewer.js").read_text(encoding="utf-8").replace("</", "<\\/")
    css = (TEMPLATES / "report.css").read_text(encoding="utf-8").replace("</", "")
    # Only this exact script may run (CSP hash): an injected <script> would be blocked even
    # if escaping ever failed.
    # The episode pages run by this render's nonce, which no text written before it can know.
    digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode()
    nonce = secrets.token_urlsafe(18)
    return _env(True).get_template("report.html.j2").render(
        r=results, tables=_tables(results), viewer=viewer, bars=outcome_bars(results), speed=speed_plot(results),
        replays=replays or [], roles=ROLES, script=Markup(js), style=Markup(css), nonce=nonce,
        script_hash=Markup(f"'sha256-{digest}'"))


# Any: the report files' paths, results.json's data and the typed model in one dict, read by key
def write_reports(run_dir: str | Path, baseline: str | None = None, out: str | Path | None = None,
                  screenshots: bool = True, target: float = 0.10) -> dict[str, Any]:
    """Read a run directory and write the four report files into `out` (default: the run
    directory). Returns their paths, the typed results (key model) and their JSON form
    (key results)."""
    run = load_run(run_dir)
    # agent-host replay's replay.json files; read first, so its warnings are in run.warnings for analyse
    replays = finite(load_summaries(run))
    results = analyse(run, baseline, target=target)   # the typed model, validated as analyse made it
    replays = finite(load_summaries(run))      # agent-host replay's replay.json files
    out_dir = Path(out) if out else run.dir
    check_dir_usable(out_dir, "--out")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"md": out_dir / "report.md", "html": out_dir / "report.html",
             "json": out_dir / "results.json", "csv": out_dir / "episodes.csv"}
    # the pages first, streamed from the episode folders: what reading them found wrong is
    # among the report's warnings; and before the report that names them, so report.html
    # never points at a page not yet there
    warnings: list[str] = []
    write_pages(out_dir, viewer_episodes(run, screenshots, warnings))
    results.warnings += warnings      # with run.refused: a replay folder outside the run
    results.headline = with_replay(results.headline, replays)
    data = results.as_dict()
    write_text_atomic(paths["json"], json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False, default=str) + "\n")
    write_text_atomic(paths["csv"], _csv_text(*csv_rows(run.records)))
    write_text_atomic(paths["md"], render_markdown(results, replays))
    write_text_atomic(paths["html"], render_html(results, viewer_head(run, results.baseline), replays))
    return {**paths, "results": data, "model": results}
