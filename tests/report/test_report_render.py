"""Report files, loading, escaping and the CLI on the hand-made fixture run."""

from __future__ import annotations

import csv
import json
import re

import pytest

from agent_host.cli import main
from agent_host.errors import UserError
from agent_host.report import write_reports
from agent_host.report.load import load_run
from fixtures_report import BASE, OTHER, XSS, lengthen_episode, make_run, viewer_of


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("render")
    run = make_run(root)
    return run, write_reports(run, out=root / "out")


def test_four_files_and_the_episode_pages_and_nothing_else(written):
    run, paths = written
    out = paths["html"].parent
    assert sorted(p.name for p in out.iterdir()) == ["episodes.csv", "report.html", "report.md", "results.json",
                                                     "trajectories"]
    assert sorted(p.name for p in (out / "trajectories").iterdir()) == [f"{n:04d}.js" for n in range(18)] + ["index.js"]
    data = json.loads(paths["json"].read_text())
    assert data["baseline"] == BASE and [b["build"] for b in data["builds"]] == [BASE, OTHER]
    assert data["provenance"]["git_dirty"] is True
    assert data["provenance"]["other"] == {"some_future_key": {"x": 1}}     # unknown keys kept
    rows = list(csv.DictReader(paths["csv"].open()))
    assert len(rows) == 20                                                   # every attempt
    assert sum(r["counted"] == "True" for r in rows) == 17
    assert sum(r["latest_attempt"] == "True" and r["outcome"] == "error" for r in rows) == 1


def test_markdown_numbers(written):
    md = written[1]["md"].read_text()
    assert "| wifi-on | 2/3 [20.8, 93.9] | 0/3 [0.0, 56.1] | -66.7 pp |" in md
    assert "| impossible (infeasible) | 1/3 [6.1, 79.2] | 0/2 [0.0, 65.8] +1 err | -33.3 pp |" in md
    assert "0.5000 (exact (4 sign patterns))" in md and "0.2500" in md
    assert "| w4a8 | 2 | -50.0 pp |" in md                  # 2 tasks, base variants (success's)
    # beside the headline, what doing nothing scores on these tasks (impossible is infeasible)
    assert "Doing nothing scores, on these tasks: complete at once 0.0%, infeasible at once 50.0%." in md
    assert "| infeasible at once | 50.0% | 0.0% | 100.0% | 50.0% |" in md
    assert "<script" not in md


def test_html_is_self_contained_and_escaped(written):
    html = written[1]["html"].read_text()
    assert XSS not in html and "alert(1)</script>" not in html
    assert len(re.findall(r"<script\b", html)) == 2                          # the data block and the viewer
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "url(http" not in html and "@import" not in html
    assert "default-src 'none'" in html
    data = viewer_of(written[1]["html"])
    assert len(data["episodes"]) == 18
    ep = next(e for e in data["episodes"] if e["id"] == "w4a16__wifi-on__base__r0")
    assert ep["steps"][0]["observation"].count(XSS) == 1                    # intact once decoded
    shot = ep["steps"][0]["shot"]
    assert ep["shots"][shot["i"]].startswith(("data:image/webp;base64,", "data:image/jpeg;base64,"))
    assert (shot["w"], shot["h"]) == (108, 240)                             # original size, for the overlay
    assert len(ep["shots"]) == 4                                             # 4 distinct images, stored once
    # the page is a script the viewer runs: no text in it closes the script or opens markup
    page = (written[1]["html"].parent / ep["page"]).read_text()
    assert XSS not in page and "</" not in page
    assert ep["steps"][1]["action"]["to"] == [54, 40]
    assert [s["name"] for s in ep["extra_shots"]] == ["step-000.png"]


def test_html_size_does_not_grow_with_a_trajectory(tmp_path):
    """Issue 24: report.html inlined every step (a 20 MB-reply run made it 483 MB); now a long
    trajectory is its episode's page beside it, and report.html is the same size give or take."""
    short = write_reports(make_run(tmp_path / "short"))
    run = make_run(tmp_path / "long")
    lengthen_episode(run, "w4a16__impossible__base__r0", 2000)
    long = write_reports(run)
    grown = long["html"].stat().st_size - short["html"].stat().st_size
    assert abs(grown) < 2000, grown
    ep = next(e for e in viewer_of(long["html"])["episodes"] if e["id"] == "w4a16__impossible__base__r0")
    assert [s["step"] for s in ep["steps"]] == list(range(1, 2001))
    assert len(ep["shots"]) == 200 + 3 + 1      # every tenth step's, the fixture's steps 1-3 and step 0's
    # the markdown report does not show steps: the same either way
    def md(paths, root):
        return re.sub(r"Generated \S+ ", "", paths["md"].read_text()).replace(str(root), "ROOT")
    assert md(long, tmp_path / "long") == md(short, tmp_path / "short")


def test_pages_of_an_earlier_report_go_and_a_symlinked_folder_is_refused(tmp_path):
    run = make_run(tmp_path)
    stale = run / "trajectories" / "0099.js"
    write_reports(run)
    stale.write_text("agentHostEpisode(99, {});\n")
    write_reports(run)
    assert not stale.exists() and len(list((run / "trajectories").iterdir())) == 18 + 1   # and index.js
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir(), elsewhere.mkdir()
    (out / "trajectories").symlink_to(elsewhere)
    with pytest.raises(UserError, match="trajectories: not a directory of the report"):
        write_reports(run, out=out)
    assert list(elsewhere.iterdir()) == []


def test_partial_last_line_is_tolerated(tmp_path):
    run = make_run(tmp_path)
    log = run / "episodes.jsonl"
    full = log.read_text()
    log.write_text(full + full.splitlines()[0][:57])                         # killed mid-write
    loaded = load_run(run)
    assert len(loaded.records) == 20
    assert any("partial last line" in w for w in loaded.warnings)
    bad = full.splitlines()
    bad[3] = bad[3][:40]
    log.write_text("\n".join(bad) + "\n")
    with pytest.raises(UserError, match=r"episodes\.jsonl:4:"):
        load_run(run)


def test_incomplete_run_warns(tmp_path):
    run = make_run(tmp_path, planned=24)
    res = write_reports(run)["results"]
    assert any("18 of 24 planned" in w for w in res["warnings"])


def test_cli_writes_and_prints(tmp_path, capsys):
    run = make_run(tmp_path)
    assert main(["report", str(run), "--baseline", OTHER, "--json", "--no-screenshots"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["baseline"] == OTHER and data["comparisons"][0]["mean_diff"] == pytest.approx(1 / 2)
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr().out
    assert str(run / "report.html") in out and "w4a8" in out
    assert not list(run.glob(".*.tmp"))


def test_cli_errors_are_one_line(tmp_path, capsys):
    missing = tmp_path / "nope"
    assert main(["report", str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(missing) in err
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "manifest.json").write_text("{}")
    (empty / "episodes.jsonl").write_text("")
    assert main(["report", str(empty)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "episodes.jsonl" in err
    run = make_run(tmp_path)
    assert main(["report", str(run), "--baseline", "nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err


def test_build_with_only_errors(tmp_path):
    from agent_host.config.records import EpisodeRecord
    run = tmp_path / "r"
    run.mkdir()
    recs = [EpisodeRecord(episode_id=f"{b}{i}", build=b, model="m", task=f"t{i}", phone="p",
                          outcome="success" if b == "a" else "error") for b in "ab" for i in range(2)]
    (run / "episodes.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in recs))
    res = write_reports(run)["results"]
    b = res["builds"][1]
    assert b["episodes"] == 0 and b["errors"]["episodes"] == 2 and b["rates"]["success"]["mean"] is None
    c = res["comparisons"][0]
    assert c["n_tasks"] == 0 and c["sign_flip"]["p"] is None and c["mean_diff"] is None
    assert any("manifest.json: missing" in w for w in res["warnings"])


def test_speed_table_shows_the_prefix_cached_share_per_build(tmp_path):
    from agent_host.config.records import EpisodeRecord
    run = tmp_path / "r"
    run.mkdir()
    shares = {"a": [0.9, 0.8], "b": [None, None]}
    recs = [EpisodeRecord(episode_id=f"{b}{i}", build=b, model="m", task=f"t{i}", phone="p", outcome="success",
                          steps=3, wall_s=2.0, cached_share=shares[b][i]) for b in "ab" for i in range(2)]
    (run / "episodes.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in recs))
    res = write_reports(run)["results"]
    assert res["builds"][0]["speed"]["cached_share"] == pytest.approx(0.85)
    assert res["builds"][1]["speed"]["cached_share"] is None
    md = (run / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| build | decode tok/s"))
    assert header.endswith("| prompt cached |")
    lines = md.splitlines()
    row_a = next(line for line in lines[lines.index(header):] if line.startswith("| a |"))   # the speed table's
    assert row_a.endswith("| 85 % |")
