"""Report-side faults (issue 32): each one a warning line, never a failed report."""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path

import pytest

from agent_host.report import write_reports
from fixtures_report import OTHER, make_run, viewer_of


def _png_header(path: Path, width: int, height: int) -> None:
    """A PNG whose header claims width x height pixels and holds no image data."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64))
                     + chunk(b"IEND", b""))


def test_a_decompression_bomb_screenshot_is_left_out_with_a_warning(tmp_path):
    run = make_run(tmp_path)
    bomb = run / "episodes" / f"{OTHER}__wifi-on__base__r0" / "step-001.png"
    _png_header(bomb, 30000, 30000)
    paths = write_reports(run)
    warnings = paths["results"]["warnings"]
    assert [w for w in warnings if str(bomb) in w and "pixels" in w], warnings
    assert str(bomb) in paths["md"].read_text()


def test_a_build_name_with_mathtext_is_plotted_literally(tmp_path):
    run = make_run(tmp_path)
    name = r"$\frac{x$"
    for p in [run / "episodes.jsonl", run / "manifest.json"]:
        p.write_text(p.read_text().replace(f'"{OTHER}"', json.dumps(name)))
    paths = write_reports(run)
    svg = paths["html"].read_text()
    assert "$\\frac{x$" in svg.split('id="outcome-bars"')[1].split("</svg>")[0]


def test_unreadable_episode_folders_are_named_and_the_rest_reports(tmp_path, monkeypatch):
    run = make_run(tmp_path)
    eps = sorted((run / "episodes").iterdir())
    locked, garbage = eps[:2], eps[2]
    (garbage / "steps.jsonl").write_bytes(b"\x00\xff not json\n{\n" * 5)
    # chmod 000 (root reads through it, so the refusal is made here as the kernel would)
    real = os.open

    def deny(path, flags, *args, **kwargs):
        if Path(path).parent in locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, flags, *args, **kwargs)
    monkeypatch.setattr(os, "open", deny)
    paths = write_reports(run)
    warnings = paths["results"]["warnings"]
    for f in [*locked, garbage]:
        named = [w for w in warnings if str(f) in w]
        assert len(named) == 1, (f, warnings)
        assert str(f) in paths["md"].read_text()
    assert len(viewer_of(paths["html"])["episodes"]) == 18


def test_pages_only_for_episodes_with_steps(tmp_path):
    run = make_run(tmp_path)
    gone = run / "episodes" / f"{OTHER}__wifi-on__base__r0"
    for p in gone.iterdir():
        p.unlink()
    gone.rmdir()
    paths = write_reports(run)
    assert len(list((run / "trajectories").iterdir())) == 17 + 1     # and index.js
    (ep,) = [e for e in viewer_of(paths["html"])["episodes"] if e["id"] == gone.name]
    assert ep["steps"] == []


def test_report_html_does_not_grow_with_the_episode_count(tmp_path):
    """Issue 32: report.html embedded a row per episode (123 MB at 200k); the rows are
    trajectories/index.js beside it now."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("report_scale", Path(__file__).parents[2] / "bench" / "report_scale.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    small = write_reports(bench.make_run(tmp_path, 200, with_steps=0.1), screenshots=False)["html"].stat().st_size
    large = write_reports(bench.make_run(tmp_path, 2000, with_steps=0.1), screenshots=False)["html"].stat().st_size
    assert large < 1.5 * small, (small, large)


def _bench():
    import importlib.util
    spec = importlib.util.spec_from_file_location("report_scale", Path(__file__).parents[2] / "bench" / "report_scale.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_a_run_s_steps_are_not_all_held_while_the_pages_are_written(tmp_path, monkeypatch):
    """Issue 32: every episode's steps were read into memory before the first page was
    written (1.9 GB at 200 000 episodes, a fifth with steps); they are read a few episodes at
    a time now. tracemalloc counts allocations, the same however busy the machine: the
    steps' share of the peak is their size on disk (and twice that in memory) when all are
    held, near nothing when a chunk of 2 episodes of 60 is."""
    import random
    import shutil
    import sys
    import tracemalloc
    import agent_host.report.render as render
    monkeypatch.setattr(render, "CHUNK", 2, raising=False)   # (the code before had none: all at once)
    bench = _bench()
    write_reports(bench.make_run(tmp_path / "warm", 10, with_steps=1.0), screenshots=False)  # imports, caches
    run = bench.make_run(tmp_path, 60, with_steps=1.0)
    rng = random.Random(0)
    for p in run.glob("episodes/*/steps.jsonl"):
        p.write_text(bench._steps(60, rng))
    on_disk = sum(p.stat().st_size for p in run.glob("episodes/*/steps.jsonl"))

    def peak() -> int:
        tracemalloc.start()
        try:
            write_reports(run, screenshots=False)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    with_steps = peak()
    shutil.rmtree(run / "episodes")
    without = peak()
    assert with_steps - without < 0.5 * on_disk, (with_steps, without, on_disk)
