"""results.json has a typed model: what the report writes loads back, older files still load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_host.errors import UserError
from agent_host.report import write_reports
from agent_host.report.model import load_results
from fixtures_report import BASE, make_run


def test_written_results_load_into_the_model_and_older_ones_too(tmp_path):
    out = write_reports(make_run(tmp_path / "run"), out=tmp_path / "rep", screenshots=False)
    res = load_results(out["json"])
    (b,) = [x for x in res.builds if x.build == BASE]
    assert b.rates["navigation"].n_tasks == 1 and b.exhausted.episodes == 0
    assert res.comparisons[0].needed is not None and res.schema_ == "agent-host.report/5"
    # a results.json from before the navigation split, exhausted and power planning
    old = json.loads(out["json"].read_text())
    for x in old["builds"]:
        del x["exhausted"]
        x["rates"]["recognition"] = x["rates"].pop("recognition_base")
    for c in old["comparisons"]:
        del c["needed"], c["method"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    again = load_results(path)
    assert again.builds[0].exhausted.episodes == 0 and again.comparisons[0].needed is None


def _keys(x, where=""):
    """Every (path, key) of a JSON value, nested dicts and lists walked."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield where, k
            yield from _keys(v, f"{where}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _keys(v, f"{where}.{i}")


def _with_breakdown(tmp_path):
    """The fixture run with its manifest's task list, so results.json has a breakdown too."""
    run = make_run(tmp_path / "run")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["tasks"] = [
        {"key": "impossible", "id": "impossible", "variant": "base", "app": "radio", "tags": ["infeasible"]},
        {"key": "wifi-on", "id": "wifi-on", "variant": "base", "app": "settings", "tags": []},
        {"key": "wifi-on@verify", "id": "wifi-on", "variant": "verify", "app": "settings", "tags": []}]
    (run / "manifest.json").write_text(json.dumps(manifest))
    return write_reports(run, out=tmp_path / "rep", screenshots=False)


def test_a_task_instance_is_never_keyed_unit(tmp_path):
    """The report's unit is the task: a task instance is `instance`, never `unit` (schema 4).
    The one `unit` key left says what the unit of analysis is (statistics.unit: the task)."""
    out = _with_breakdown(tmp_path)
    data = json.loads(out["json"].read_text())
    bad = [(w, k) for w, k in _keys(data) if k in ("unit", "units") and (w, k) != (".statistics", "unit")]
    assert bad == []
    assert "task" in data["statistics"]["unit"]
    assert data["per_task"] and all("instance" in row for row in data["per_task"])
    assert data["breakdown"] and all("instances" in g for g in data["breakdown"])
    assert "instance" in out["csv"].read_text().splitlines()[0].split(",")


def test_a_schema_3_results_file_reads_unit_as_instance(tmp_path):
    """Schema 3 keyed a task instance `unit` (`units` in the breakdown); it still loads, as `instance`."""
    out = _with_breakdown(tmp_path)
    old = json.loads(out["json"].read_text())
    old["schema"] = "agent-host.report/3"
    for row in old["per_task"]:
        row["unit"] = row.pop("instance")
    for g in old["breakdown"]:
        g["units"] = g.pop("instances")
    path = tmp_path / "v3.json"
    path.write_text(json.dumps(old))
    res = load_results(path)
    assert res.breakdown
    assert [t.instance for t in res.per_task] == [t["unit"] for t in old["per_task"]]
    assert [g.instances for g in res.breakdown] == [g["units"] for g in old["breakdown"]]
    dumped = res.as_dict()
    assert "unit" not in dumped["per_task"][0] and "instance" in dumped["per_task"][0]


def test_bad_results_name_the_field(tmp_path):
    out = write_reports(make_run(tmp_path / "run"), out=tmp_path / "rep", screenshots=False)
    data = json.loads(out["json"].read_text())
    data["builds"][0]["tasks"] = "many"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"bad\.json: builds\.0\.tasks"):
        load_results(path)


SCHEMA_2 = Path(__file__).with_name("data") / "results-schema2.json"


def test_a_schema_2_results_file_still_loads_and_renders():
    """tests/report/data/results-schema2.json was written by the report before success moved to
    base variants: its success pooled the verify variant, it named sensitivity
    `recognition_verify`, and it had no specificity, balanced figure or trivial baselines."""
    from agent_host.report.render import render_markdown
    from agent_host.report.summary import summary_tables
    from agent_host.report.tables import builds_table, trivial_table

    raw = json.loads(SCHEMA_2.read_text())
    assert raw["schema"] == "agent-host.report/2" and "trivial" not in raw
    old = load_results(SCHEMA_2)
    b = old.builds[0]
    assert b.rates["success"].mean == pytest.approx(0.5)          # as written (verify pooled in)
    assert b.rates["sensitivity"] == b.rates["recognition_verify"]
    assert b.balanced is None and old.trivial is None and "specificity" not in b.rates
    row = builds_table(old).rows[0]
    # no spec, no balanced; premature, undone, no collateral (schema 5), unrecognised
    assert [c.text for c in row][-6:] == ["–", "–", "16.7%", "8.3%", "–", "0.0%"]
    assert trivial_table(old).rows == []
    md = render_markdown(old)
    assert "Doing nothing" not in md and "| w4a16 (baseline) |" in md
    assert summary_tables(old)


def test_analyse_builds_the_typed_model_and_a_wrong_part_fails_there(tmp_path, monkeypatch):
    """Issue 22: results are built as the typed model, each part validated where analyse makes
    it, not a dict checked after the fact by whoever writes it."""
    from pydantic import ValidationError

    from agent_host.report import stats
    from agent_host.report.load import load_run
    from agent_host.report.model import BuildSummary, Results
    from agent_host.report.results import analyse

    run = load_run(make_run(tmp_path))
    res = analyse(run)
    assert isinstance(res, Results) and all(isinstance(b, BuildSummary) for b in res.builds)
    real = stats.build_summary
    monkeypatch.setattr(stats, "build_summary", lambda *a, **k: {**real(*a, **k), "episodes": "many"})
    with pytest.raises(ValidationError, match="episodes"):
        analyse(run)
