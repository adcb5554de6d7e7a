"""The hand-made run directory of tests/fixtures_report.py has the shape its docstring says."""

from __future__ import annotations

from agent_host.config.records import EpisodeRecord

from fixtures_report import make_run


def test_fixture_has_the_planned_shape(tmp_path):
    run = make_run(tmp_path)
    lines = (run / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 18 + 2           # 18 episodes, two of them retried once
    recs = [EpisodeRecord.model_validate_json(x) for x in lines]
    assert sum(r.outcome == "error" for r in recs) == 3
    assert (run / "episodes" / "w4a8__wifi-on__base__r1" / "step-002.png").is_file()
