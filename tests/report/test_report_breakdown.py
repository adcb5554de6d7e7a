"""The report breaks success down by task kind (the kind tags) and by app, so a user sees
where a build fails; `tasks list` counts tasks per app and per kind."""

from __future__ import annotations

import json

import pytest

from agent_host.cli import main
from agent_host.config.records import TASK_KINDS
from agent_host.report import write_reports
from fixtures_report import BASE, OTHER, make_run

TASKS = [  # the fixture run's task instances, as the manifest records them
    {"key": "impossible", "id": "impossible", "variant": "base", "app": "radio", "tags": ["infeasible", "radio"]},
    {"key": "wifi-on", "id": "wifi-on", "variant": "base", "app": "settings", "tags": ["connectivity"]},
    {"key": "wifi-on@verify", "id": "wifi-on", "variant": "verify", "app": "settings", "tags": ["connectivity"]},
]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    run = make_run(tmp_path_factory.mktemp("breakdown"), xss=False)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["tasks"] = TASKS
    (run / "manifest.json").write_text(json.dumps(manifest))
    return write_reports(run, screenshots=False)


def _row(results, by, group):
    return next(r for r in results["breakdown"] if r["by"] == by and r["group"] == group)


def test_kinds_are_the_agreed_tags():
    assert TASK_KINDS == ("multi-app", "text-entry", "retrieval", "long-horizon", "infeasible", "recognition")


def test_breakdown_by_kind_and_app(written):
    res = written["results"]
    groups = [(r["by"], r["group"]) for r in res["breakdown"]]
    assert groups == [("kind", "infeasible"), ("kind", "no kind tag"), ("app", "radio"), ("app", "settings")]
    inf = _row(res, "kind", "infeasible")
    assert inf["instances"] == ["impossible"]
    # impossible: w4a16 infeasible_claimed, premature, nav_fail (1 of 3); w4a8 nav_fail,
    # premature and an error (0 of 2 counted)
    assert inf["builds"][BASE]["mean"] == pytest.approx(1 / 3) and inf["builds"][BASE]["episodes"] == 3
    assert inf["builds"][OTHER]["mean"] == 0 and inf["builds"][OTHER]["episodes"] == 2
    assert _row(res, "app", "radio")["builds"] == inf["builds"]
    settings = _row(res, "app", "settings")
    assert settings["instances"] == ["wifi-on", "wifi-on@verify"]
    # success is over base variants (the verify variant feeds recognition only): w4a16 2/3, w4a8
    # 0/3 (its 3/3 at the goal does not count); pooled with the verify variant it was 3/6
    assert settings["builds"][BASE]["mean"] == pytest.approx(2 / 3)
    assert settings["builds"][OTHER]["mean"] == 0 and settings["builds"][OTHER]["n"] == 3
    lo, hi = settings["builds"][OTHER]["low"], settings["builds"][OTHER]["high"]
    assert lo == 0 < hi
    assert _row(res, "kind", "no kind tag")["builds"] == settings["builds"]


def test_breakdown_in_markdown_and_html(written):
    md = written["md"].read_text()
    section = md.split("## By task kind and app", 1)[1].split("\n## ", 1)[0]
    assert f"| by | group | instances | {BASE} success | {OTHER} success |" in section
    assert "| kind | infeasible | 1 | 33.3%" in section and "| app | settings | 2 | 66.7%" in section
    html = written["html"].read_text()
    table = html.split('id="breakdown"', 1)[1].split("</table>", 1)[0]
    assert '<a href="#viewer" class="viewer-filter" data-kind="infeasible">infeasible</a>' in table
    assert 'data-app="settings"' in table and "66.7%" in table
    assert 'id="f-kind"' in html and 'id="f-app"' in html


def test_a_run_without_task_facts_has_no_breakdown(tmp_path):
    paths = write_reports(make_run(tmp_path, xss=False), screenshots=False)
    assert paths["results"]["breakdown"] == []
    assert "## By task kind and app" not in paths["md"].read_text()


def test_manifest_records_app_and_tags():
    from agent_host.config.tasks import load_tasks
    from agent_host.runs.manifest import build_manifest

    tasks = load_tasks(["wifi-on", "fm-radio-on"], variants=("base",))
    m = build_manifest(run_id="r", builds=[], tasks=tasks, repeats=1, seed=0, phones=[], command=[])
    by_id = {t.id: t for t in m.tasks}
    assert by_id["wifi-on"].app == "settings" and "connectivity" in by_id["wifi-on"].tags
    assert by_id["fm-radio-on"].tags == tasks[1].tags


def test_tasks_list_counts_per_app_and_kind(capsys, tmp_path):
    from fixtures_cli import GOOD

    (tmp_path / "a.yaml").write_text(GOOD.format(id="a").replace("app: settings",
                                                                 "app: settings\ntags: [text-entry, retrieval]"))
    (tmp_path / "b.yaml").write_text(GOOD.format(id="b").replace("app: settings", "app: clock\ntags: [text-entry]"))
    (tmp_path / "c.yaml").write_text(GOOD.format(id="c"))
    assert main(["tasks", "list", "--counts", "--json", str(tmp_path)]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts["tasks"] == 3
    assert counts["apps"] == {"clock": 1, "settings": 2}
    assert counts["kinds"] == {"multi-app": 0, "text-entry": 2, "retrieval": 1, "long-horizon": 0,
                               "infeasible": 0, "recognition": 0, "no kind tag": 1}
    assert main(["tasks", "list", "--counts", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "settings" in text and "text-entry" in text and "no kind tag" in text
    assert main(["tasks", "list", str(tmp_path)]) == 0                  # the table ends with the counts
    text = capsys.readouterr().out
    assert "per app: clock 1, settings 2" in " ".join(text.split())
    assert "per kind: text-entry 2, retrieval 1, no kind tag 1" in " ".join(text.split())


def test_breakdown_renders_from_the_one_table_spec(written):
    import html

    from agent_host.report.tables import breakdown_table

    table = breakdown_table(written["model"])
    md, page = written["md"].read_text(), html.unescape(written["html"].read_text())
    assert len(table.rows) == 4 and table.markdown() in md
    for row in table.rows:
        for cell in row:
            assert cell.text in page and cell.sub in page


def test_breakdown_by_taught_split(tmp_path):
    """A run that names a taught model's split (`run --taught`, recorded in the manifest) is
    broken down by taught / held-out kind too; an instance the split does not name is apart."""
    from agent_host.config.taught import TaughtSplit

    run = make_run(tmp_path / "taught", xss=False)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["tasks"] = TASKS
    manifest["taught"] = TaughtSplit(rule="r", seed=0, held_out_task_fraction=0.2,
                                     instances={"wifi-on": "taught"}).model_dump()
    (run / "manifest.json").write_text(json.dumps(manifest))
    res = write_reports(run, screenshots=False)["results"]
    taught = _row(res, "taught", "taught")
    assert taught["instances"] == ["wifi-on", "wifi-on@verify"]
    assert taught["builds"] == _row(res, "app", "settings")["builds"]
    assert _row(res, "taught", "not in the split")["instances"] == ["impossible"]
    assert not [r for r in res["breakdown"] if r["by"] == "taught" and r["group"].startswith("held-out")]
    md = (run / "report.md").read_text()
    assert "| taught | taught |" in md and "| taught | not in the split |" in md
