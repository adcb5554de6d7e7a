"""One table spec, two renderings: every header and cell of the builds and comparison tables
(and of the configured builds and the sequential allocation) appears in report.md and in
report.html; no table is written out in a template."""

from __future__ import annotations

import html
import re
from pathlib import Path

import agent_host.report.render
from agent_host.report import write_reports
from agent_host.report.format import md_cell
from agent_host.report.model import Results
from agent_host.report.render import render_html, render_markdown
from agent_host.report.tables import builds_table, comparisons_table, config_table, sequential_table, trivial_table
from fixtures_report import make_run


def test_builds_and_comparisons_render_from_one_spec(tmp_path):
    out = write_reports(make_run(tmp_path / "run"), out=tmp_path / "rep", screenshots=False)
    md = out["md"].read_text()
    page = html.unescape(out["html"].read_text())
    for table in (builds_table(out["model"]), comparisons_table(out["model"]), trivial_table(out["model"])):
        assert table.rows
        md_table = table.markdown()
        assert md_table in md
        for col in table.columns:
            assert col.header in page and col.header in md_table
        for row in table.rows:
            assert len(row) == len(table.columns)
            for cell in row:
                assert cell.text in page and cell.text in md_table
                assert cell.sub in page and cell.sub in md_table
    # the new columns are there, with intervals
    assert "sensitivity" in md and "specificity" in md and "balanced" in page
    assert "navigation" in page and "exhausted" in page
    # the unit is the task (its parameter sets and variants pooled); the instances beside it
    table = builds_table(out["model"])
    i = next(i for i, c in enumerate(table.columns) if c.header == "tasks")
    assert table.columns[i].note == "each one unit"
    assert [(row[i].text, row[i].sub) for row in table.rows] == [("2", "(3 instances)")] * 2


TEMPLATES = Path(agent_host.report.render.__file__).with_name("templates")


def test_no_table_is_written_out_in_a_template():
    """Every table is a spec in tables.py (so report.md and report.html cannot disagree): no
    Markdown table row in a .md.j2 template, no <table in an .html.j2 one but the `table` macro's
    (the report's and the replay section it includes)."""
    for md in TEMPLATES.glob("*.md.j2"):
        rows = [line for line in md.read_text(encoding="utf-8").splitlines() if line.lstrip().startswith("|")]
        assert rows == [], md.name
    page = (TEMPLATES / "report.html.j2").read_text(encoding="utf-8")
    outside = re.sub(r"{% macro table\(.*?{% endmacro %}", "", page, count=1, flags=re.S)
    assert outside != page and "<table" in page
    assert "<table" not in outside
    for html in TEMPLATES.glob("*.html.j2"):
        if html.name != "report.html.j2":
            assert "<table" not in html.read_text(encoding="utf-8"), html.name


def _configured_sequential(tmp_path):
    """The fixture's results with configured builds and a sequential section, which it lacks."""
    out = write_reports(make_run(tmp_path / "run"), out=tmp_path / "rep", screenshots=False)
    data = out["model"].as_dict()
    data["provenance"]["builds"] = [
        {"id": "w4a16", "weight_path": "w/x", "server": "vllm", "model": "m|1", "args": ["--json", '{"a": 1}'],
         "env": {"VLLM_A": "1", "OMP": "4"}, "sampling": {"temperature": 0.0}, "bits_per_weight": 4.5,
         "group_size": 128, "kernel": "marlin"},
        {"id": "w4a8", "weight_path": None, "server": None, "model": None, "args": None, "env": None}]
    data["sequential"] = {
        "outcome": "better", "summary": "decided", "why": "w", "baseline": "w4a16", "build": "w4a8", "diff": 0.2,
        "low": 0.1, "high": 0.3, "look": 2, "looks": 3, "nominal_alpha": 0.02, "method": "m", "episodes": 10,
        "budget_episodes": 20, "fixed": {"repeats": 3, "episodes": 30, "target": 0.2}, "order_mode": "o",
        "allocation": [{"task": "t0", "repeats": 2, "baseline": "1/2", "build": "2/2"},
                       {"task": "t<1>", "repeats": 1, "baseline": "0/1", "build": "1/1"}]}
    return Results.model_validate(data)


def test_configured_builds_and_sequential_allocation_render_from_one_spec(tmp_path):
    res = _configured_sequential(tmp_path)
    viewer = {"builds": [], "baseline": res.baseline, "episodes": [], "colours": {}}
    md, page = render_markdown(res), html.unescape(render_html(res, viewer))
    for table in (config_table(res), sequential_table(res)):
        assert len(table.rows) == 2
        assert table.markdown() in md
        for col in table.columns:
            assert f"<th>{col.header}</th>" in page
        for row in table.rows:
            for cell in row:
                assert md_cell(cell.text) in table.markdown() and cell.text in page
    assert ('| w4a16 | w/x | vllm | m\\|1 | --json {"a": 1} | VLLM_A=1 OMP=4 | temperature=0.0 '
            '| 4.5 bpw g128 marlin |') in md
    assert "| t&lt;1&gt; | 1 | 0/1 | 1/1 |" in md
    assert '<table class="config">' in render_html(res, viewer)     # report.css: it wraps, not scrolls
