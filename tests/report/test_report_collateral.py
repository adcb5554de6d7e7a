"""The `collateral` outcome in the report: its own column wherever each outcome has one, a
failure of success, no recognition and a false alarm to the detector, navigation only where the
whole goal held; the viewer shows the step's diff of the task's scope. Runs and results written
before the label still load."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from agent_host.config.records import OUTCOMES, EpisodeRecord
from agent_host.report import detector, selection, write_reports
from agent_host.report.model import load_results
from agent_host.report.render import OUTCOME_COLOURS, outcome_bars, render_markdown
from agent_host.report.tables import builds_table, outcomes_table
from agent_host.config.manifest import RunManifest
from fixtures_report import (ASKED_ROW, BASE, STRAY, add_collateral_episode, make_run,
                             viewer_of)

DATA = Path(__file__).with_name("data")


@pytest.fixture(scope="module")
def collateral_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("collateral")
    run = make_run(root, xss=False)
    eid = add_collateral_episode(run)
    return eid, write_reports(run, out=root / "out")


def test_every_outcome_has_a_colour_a_bar_or_an_exclusion_and_a_progress_word():
    from agent_host.runs.progress import _SHORT
    assert set(OUTCOME_COLOURS) == set(OUTCOMES) == set(_SHORT)
    assert set(selection.BAR_LABELS) | set(selection.EXCLUDED) == set(OUTCOMES)
    assert len(set(OUTCOME_COLOURS.values())) == len(OUTCOMES)          # each its own colour


def test_results_json_counts_collateral_as_a_failure(collateral_run):
    eid, paths = collateral_run
    data = json.loads(paths["json"].read_text())
    assert data["schema"] == "agent-host.report/5"
    (b,) = [x for x in data["builds"] if x["build"] == BASE]
    assert b["outcomes"]["collateral"] == {"count": 1, "fraction": pytest.approx(1 / 10)}
    assert b["rates"]["collateral"]["k"] == 1
    assert b["per_task"]["event-add"]["k"] == 0 and b["per_task"]["event-add"]["n"] == 1   # not a success
    assert sum(s["count"] for s in b["outcomes"].values()) == b["episodes"]                 # the bars sum to 100%
    other = [x for x in data["builds"] if x["build"] != BASE][0]
    assert other["outcomes"]["collateral"]["count"] == 0


def test_report_md_and_html_have_the_column_and_the_count(collateral_run):
    _, paths = collateral_run
    md = paths["md"].read_text()
    head = "| build | success | premature | undone | collateral | unrecognised | infeasible_claimed | nav_fail |"
    assert head in md
    assert "| w4a16 | 50.0% (5) | 10.0% (1) | 10.0% (1) | 10.0% (1) | 0.0% (0) | 0.0% (0) | 20.0% (2) |" in md
    assert "| collateral (done, and more changed) |" in md               # the builds table's rate
    html = paths["html"].read_text()
    assert "<th>collateral" in html and "10.0% (1)" in html
    assert ">collateral<" in html and OUTCOME_COLOURS["collateral"] in html.lower()   # the bars' legend


def test_episodes_csv_labels_the_episode(collateral_run):
    eid, paths = collateral_run
    (row,) = [r for r in csv.DictReader(paths["csv"].open()) if r["episode_id"] == eid]
    assert (row["outcome"], row["effective_outcome"], row["success"]) == ("collateral", "collateral", "False")
    assert row["goal_ever_true"] == "False" and row["complete_step"] == "3"


def test_viewer_shows_the_diff_the_halves_and_the_state_after_setup(collateral_run):
    eid, paths = collateral_run
    (ep,) = [e for e in viewer_of(paths["html"])["episodes"] if e["id"] == eid]
    assert ep["outcome"] == ep["label"] == "collateral" and ep["success"] is False
    s1, s2, s3 = ep["steps"]
    assert (s1["asked"], s1["clean"], s1["state"]) == (False, True, None)
    assert (s2["asked"], s2["clean"], s2["goal"]) == (True, False, False)
    assert s2["check"] == {"value": True}                                  # the diff is not shown twice
    assert s3["state"] == [
        {"kind": "event", "added": [ASKED_ROW, STRAY], "removed": [], "expected": {"added": 1, "removed": 0}},
        {"kind": "file", "added": [], "removed": ["f /sdcard/Download/Taxes 2026"],
         "expected": {"added": None, "removed": None}},
    ]
    assert ep["start_state"] == {"scope": "event, file (folders /sdcard/Download)", "kinds": {
        "event": {"rows": ["title=Dentist, dtstart=2026-12-03 15:00"], "total": 1},
        "file": {"rows": ["type=f, path=/sdcard/Download/Taxes 2026", "type=d, path=/sdcard/Download"], "total": 2}}}
    # report.html holds the list's facts only; the state after setup is in the episode's page
    assert "Dentist" not in paths["html"].read_text()


def test_a_malformed_state_gives_what_can_be_read():
    from agent_host.report.state import state_diff
    assert state_diff({}) is None and state_diff({"state": "x"}) is None
    assert state_diff({"state": {"kinds": {"contact": {"added": "not a list", "removed": [1]}},
                                 "expected": {"contact": {"added": True}}}}) == [
        {"kind": "contact", "added": [], "removed": ["1"], "expected": {"added": None, "removed": None}}]


def test_the_state_after_setup_bare_or_with_its_scope(tmp_path):
    from agent_host.report.load import Run
    from agent_host.report.state import START_STATE_ROWS, start_state
    run = Run(tmp_path, RunManifest(), [])
    assert start_state(run, tmp_path) is None and start_state(run, None) is None
    (tmp_path / "start_state.json").write_text(json.dumps({"file": [f"f /sdcard/x{i}" for i in range(300)]}))
    got = start_state(run, tmp_path)
    assert got["scope"] is None and got["kinds"]["file"]["total"] == 300
    assert len(got["kinds"]["file"]["rows"]) == START_STATE_ROWS
    (tmp_path / "start_state.json").write_text("[1, 2")
    assert start_state(run, tmp_path) is None


def _rec(outcome: str, variant: str = "base", infeasible: bool = False, **kw) -> EpisodeRecord:
    return EpisodeRecord(episode_id=f"e-{outcome}-{variant}-{len(kw)}", build="b", model="m", task="t",
                         variant=variant, infeasible=infeasible, phone="p", outcome=outcome, **kw)


def test_the_detector_reads_a_collateral_completion_as_off_the_goal():
    # verify variant: placed at the goal, it did more and then said "done": not a hit
    verify = _rec("collateral", "verify", goal_initial=True, goal_lost_step=1, complete_step=2)
    assert not detector.hit(selection.effective_label(verify))
    # base variant: task_complete while the whole goal did not hold: a false alarm, as premature
    assert selection.false_alarm(_rec("collateral", complete_step=2))
    assert selection.false_alarm(_rec("collateral", infeasible=True, complete_step=2))
    # ended by task_infeasible after a change in scope: no task_complete, no false alarm
    assert not selection.false_alarm(_rec("collateral", infeasible=True, infeasible_step=2))
    counts = selection.instance_counts([verify])["t@verify"]
    assert (counts.hits, counts.successes, counts.labels["collateral"]) == (0, 0, 1)


def test_navigation_counts_a_collateral_episode_only_where_the_goal_held():
    assert not selection.goal_ever_true(_rec("collateral", complete_step=2))          # asked, never clean
    assert selection.goal_ever_true(_rec("collateral", goal_first_step=1, goal_lost_step=2, complete_step=3))
    c = selection.instance_counts([_rec("collateral", complete_step=2)])["t"]
    assert (c.ever_true, c.false_alarms, c.successes) == (0, 1, 0)


def test_progress_tallies_name_collateral():
    from agent_host.runs.execute import BuildProgress
    from agent_host.runs.progress import tallies
    p = BuildProgress(build="b", total=3)
    p.outcomes.update({"success": 1, "collateral": 2})
    assert tallies(p) == "ok 1  coll 2"


# -- written before the label ---------------------------------------------------------------


def test_a_run_from_before_the_label_still_reports(tmp_path):
    """tests/report/data/run-before-collateral was written by agent-host before `collateral`
    (records and steps without `asked` and `clean`, no start_state.json)."""
    run = tmp_path / "run"
    shutil.copytree(DATA / "run-before-collateral", run)
    steps = (run / "episodes" / "old__wifi-on__base__r0" / "steps.jsonl").read_text()
    assert '"asked"' not in steps and '"clean"' not in steps
    paths = write_reports(run, out=tmp_path / "out", screenshots=False)
    (b,) = paths["results"]["builds"]
    assert b["outcomes"]["collateral"]["count"] == 0 and b["outcomes"]["success"]["count"] == 2
    ep = viewer_of(paths["html"])["episodes"][0]
    assert ep["start_state"] is None
    assert all(s["asked"] is None and s["clean"] is None and s["state"] is None for s in ep["steps"])


def test_a_schema_4_results_file_loads_and_renders_without_a_collateral_count():
    """tests/report/data/results-schema4.json was written by the report before `collateral`:
    it has no such outcome or rate, so its cells say "–" (not measured), never 0."""
    raw = json.loads((DATA / "results-schema4.json").read_text())
    assert raw["schema"] == "agent-host.report/4" and "collateral" not in raw["builds"][0]["outcomes"]
    old = load_results(DATA / "results-schema4.json")
    row = outcomes_table(old, selection.BAR_LABELS).rows[0]
    assert [c.text for c in row][selection.BAR_LABELS.index("collateral") + 1] == "–"
    builds = builds_table(old)
    assert builds.rows[0][[c.header for c in builds.columns].index("collateral")].text == "–"
    assert "| old | 50.0% (2) | 25.0% (1) | 0.0% (0) | – | 0.0% (0) | 0.0% (0) | 25.0% (1) |" in render_markdown(old)
    assert "collateral" in outcome_bars(old)


@pytest.mark.parametrize("doc", ["README.md", "docs/concepts.md", "docs/reports.md"])
def test_the_docs_outcome_tables_have_a_row_per_outcome(doc):
    text = (Path(__file__).parents[2] / doc).read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip().strip("`") for line in text.splitlines() if line.startswith("| `")}
    if doc == "docs/reports.md":        # its table is of rates: the labels are listed under "What is counted"
        listed = text[text.index("- **Outcome labels**"):text.index("- **Collateral**")]
        rows = {o for o in OUTCOMES if f"`{o}`" in listed}
        assert "| collateral | every task instance |" in text
    assert set(OUTCOMES) <= rows, set(OUTCOMES) - rows
