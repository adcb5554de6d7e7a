"""A hostile run directory: the report reads nothing outside it, and no CSV cell becomes a
spreadsheet formula.

Before: an episode id `../../outside` and screenshot paths `/abs/secret.png` or
`../../../secret.png` made report.html embed 3 images and a steps file from outside the run
directory; an episode reason starting with `=` was written as a formula."""

from __future__ import annotations

import base64
import csv
import json
import re
from pathlib import Path

import pytest
from PIL import Image

from agent_host.config.records import EpisodeRecord, StepRecord
from agent_host.errors import UserError
from agent_host.report import write_reports
from agent_host.report.render import csv_safe

from fixtures_report import make_run, viewer_of

SECRET_COLOUR = (250, 1, 2)


def _secret_png(path):
    Image.new("RGB", (108, 240), SECRET_COLOUR).save(path)


def _embedded_colours(html_path) -> list[tuple[int, int, int]]:
    import io
    out = []
    for src in [s for ep in viewer_of(html_path)["episodes"] for s in ep["shots"]]:
        raw = base64.b64decode(src.split(",", 1)[1])
        out.append(Image.open(io.BytesIO(raw)).convert("RGB").getpixel((5, 5)))
    return out


def test_paths_outside_the_run_are_refused_with_a_warning(tmp_path):
    run = make_run(tmp_path / "in")
    outside = tmp_path / "outside"          # what episode id ../../outside reaches
    outside.mkdir()
    _secret_png(tmp_path / "secret.png")
    _secret_png(outside / "step-001.png")
    step = StepRecord(step=1, observation="SECRET-STEP", screenshot="step-001.png", goal=False)
    (outside / "steps.jsonl").write_text(step.model_dump_json() + "\n")
    # screenshots named by absolute and by climbing paths, in an honest episode
    eid = "w4a16__wifi-on__base__r0"
    steps_file = run / "episodes" / eid / "steps.jsonl"
    steps = [StepRecord.model_validate_json(x) for x in steps_file.read_text().splitlines()]
    steps[0] = steps[0].model_copy(update={"screenshot": str(tmp_path / "secret.png")})
    steps[1] = steps[1].model_copy(update={"screenshot": "../../../secret.png"})
    steps_file.write_text("".join(s.model_dump_json() + "\n" for s in steps))
    # and a symlinked screenshot that points out
    (run / "episodes" / eid / "step-003.png").unlink()
    (run / "episodes" / eid / "step-003.png").symlink_to(tmp_path / "secret.png")
    rec = EpisodeRecord(episode_id="../../outside", build="w4a16", model="m", task="wifi-on", phone="p",
                        outcome="success", variant="base", repeat=5, goal_final=True, complete_step=1)
    with open(run / "episodes.jsonl", "a") as f:
        f.write(rec.model_dump_json() + "\n")

    paths = write_reports(run)
    written = [paths["html"], *sorted((paths["html"].parent / "trajectories").iterdir())]
    assert not any("SECRET-STEP" in p.read_text() for p in written)
    assert SECRET_COLOUR not in _embedded_colours(paths["html"])
    warnings = paths["results"]["warnings"]
    assert sum("outside the run directory" in w for w in warnings) >= 3, warnings


def test_csv_cells_that_would_be_formulas_are_neutralised(tmp_path):
    run = make_run(tmp_path, xss=False)
    rec = EpisodeRecord(episode_id="w4a16__x__base__r0", build="w4a16", model="m", task="x", phone="p",
                        outcome="premature", complete_step=1, reason='=HYPERLINK("http://x","y")')
    with open(run / "episodes.jsonl", "a") as f:
        f.write(rec.model_dump_json() + "\n")
    rows = list(csv.DictReader(write_reports(run)["csv"].open()))
    reasons = [r["reason"] for r in rows if r["episode_id"] == "w4a16__x__base__r0"]
    assert reasons == ["'=HYPERLINK(\"http://x\",\"y\")"]
    for cell in ("+1", "-cmd", "@SUM(A1)", "\tx"):
        assert csv_safe(cell) == "'" + cell
    # a bare CR is not quoted by the writer and a spreadsheet splits the row there (issue 24)
    assert csv_safe("\rx") == "'\nx" and csv_safe("ok\r=1+1") == "ok\n=1+1" and csv_safe("a\x00b") == "ab"
    assert csv_safe(-1.5) == -1.5 and csv_safe("ok") == "ok" and csv_safe(None) is None


def _unshare_works() -> bool:
    import subprocess
    try:
        return subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"],
                              capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False



@pytest.mark.skipif(not _unshare_works(), reason="needs a private mount namespace to mount a small tmpfs")
def test_report_onto_a_full_disk_is_one_line_and_leaves_no_temporary_file(tmp_path):
    """Before: a traceback while writing the report on a full disk."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    run = make_run(tmp_path)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    root = Path(__file__).resolve().parents[2]
    cmd = f"{sys.executable} -m agent_host report {run} --out {mnt}/out"
    script = f"mount -t tmpfs -o size=48k tmpfs {mnt} || exit 99; {cmd}; rc=$?; ls -A {mnt}/out; exit $rc"
    out = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(root)}, timeout=120)
    assert out.returncode not in (0, 99), out
    assert "Traceback" not in out.stderr and out.stderr.startswith("error: cannot write the report"), out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert ".tmp" not in out.stdout, out.stdout          # no temporary file left behind


def test_a_bare_cr_in_a_reason_stays_inside_its_quoted_cell(tmp_path):
    """Before: `done\r=1+1` was written unquoted, and a spreadsheet read `=1+1` as a live cell."""
    run = make_run(tmp_path, xss=False)
    rec = EpisodeRecord(episode_id="w4a16__x__base__r0", build="w4a16", model="m", task="x", phone="p",
                        outcome="premature", complete_step=1, reason="done\r=1+1\x00")
    with open(run / "episodes.jsonl", "a") as f:
        f.write(rec.model_dump_json() + "\n")
    text = write_reports(run)["csv"].read_text()
    assert "\r" not in text and "\x00" not in text and '"done\n=1+1"' in text


@pytest.mark.parametrize("name", ["manifest.json", "episodes.jsonl"])
def test_a_symlink_leaving_the_run_directory_is_not_read(tmp_path, name):
    run = make_run(tmp_path, xss=False)
    outside = tmp_path / f"outside-{name}"
    outside.write_bytes((run / name).read_bytes().replace(b"run-fixture", b"OUTSIDE-SECRET"))
    (run / name).unlink()
    (run / name).symlink_to(outside)
    if name == "episodes.jsonl":
        with pytest.raises(UserError, match="a symlink leading outside the run directory"):
            write_reports(run)
        return
    paths = write_reports(run)
    for key in ("html", "md", "json", "csv"):
        assert "OUTSIDE-SECRET" not in paths[key].read_text()
    assert any("symlink leading outside" in w for w in paths["results"]["warnings"])


def test_an_unreadable_episode_log_is_a_read_error_not_a_write_error(tmp_path, monkeypatch):
    """Before: `report` said "cannot write the report" (the PermissionError of the read)."""
    import os

    run = make_run(tmp_path, xss=False)
    log = run / "episodes.jsonl"
    real_open = os.open

    def deny(path, *a, **kw):  # chmod 000 does not stop root, which the tests may run as
        if Path(path) == log:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **kw)
    monkeypatch.setattr(os, "open", deny)
    with pytest.raises(UserError, match=r"episodes\.jsonl: cannot read \(Permission denied\)"):
        write_reports(run)
