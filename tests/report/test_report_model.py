"""results.json has a typed model: what the report writes loads back, older files still load."""

from __future__ import annotations

import json

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
    assert res.comparisons[0].needed is not None and res.schema_ == "agent-host.report/2"
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


def test_bad_results_name_the_field(tmp_path):
    out = write_reports(make_run(tmp_path / "run"), out=tmp_path / "rep", screenshots=False)
    data = json.loads(out["json"].read_text())
    data["builds"][0]["tasks"] = "many"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"bad\.json: builds\.0\.tasks"):
        load_results(path)
