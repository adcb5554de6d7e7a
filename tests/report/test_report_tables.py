"""One table spec, two renderings: every header and cell of the builds and comparison tables
appears in report.md and in report.html."""

from __future__ import annotations

import html

from agent_host.report import write_reports
from agent_host.report.tables import builds_table, comparisons_table, trivial_table
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
