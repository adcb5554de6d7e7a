"""manifest.json is a typed model (config/manifest.py, `RunManifest`), read the same way by a
resume and a report. A manifest written before the model (schema version 1, no
`schema_version` key) still loads, reports and resumes: data/run-manifest-v1 is a real run
made by the code of that time (one scripted build, wifi-on, 2 repeats, the first recorded).
A manifest with a wrong type is refused by a resume in one line naming manifest.json and the
field, with nothing written; before the model `request_timeout: "soon"` was taken and every
attempt then ended as an `error` (exit 0)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from fixtures_cli import agent_host, assert_user_error, tree

ROOT = Path(__file__).resolve().parents[2]
V1 = Path(__file__).parent / "data" / "run-manifest-v1"


def v1_run(tmp: Path) -> Path:
    """The version-1 run directory, its paths made this checkout's and this test's."""
    run = tmp / "run"
    shutil.copytree(V1, run)
    (tmp / "oracle.yaml").write_text(f"suite: [{ROOT / 'tasks'}]\n")
    (tmp / "scripted.yaml").write_text(f"id: scripted\ndescription: fixture\nhardware_class: x86-avx2\nbuilds:\n"
                                       f"  - {{id: oracle, weight_path: scripted, server: policy, "
                                       f"script: {tmp / 'oracle.yaml'}}}\n")
    for p in run.rglob("*"):
        if p.is_file():
            p.write_text(p.read_text().replace("{ROOT}", str(ROOT)).replace("{TMP}", str(tmp)))
    m = json.loads((run / "manifest.json").read_text())
    # the task file may have changed since the fixture was made; a resume refuses a changed one
    source = str(ROOT / "tasks" / "wifi-on.yaml")
    m["task_files"][source] = hashlib.sha256(Path(source).read_bytes()).hexdigest()
    (run / "manifest.json").write_text(json.dumps(m, indent=2))
    return run


def test_a_version_1_manifest_loads_as_the_model(tmp_path):
    from agent_host.config.manifest import SCHEMA_VERSION, RunManifest, load_manifest

    m = load_manifest(v1_run(tmp_path) / "manifest.json")
    assert isinstance(m, RunManifest) and m.schema_version == 1 and SCHEMA_VERSION == 2
    assert m.repeats == 2 and m.seed == 7 and m.request_timeout == 30.0 and m.max_attempts == 3
    assert [t.key for t in m.tasks] == ["wifi-on"] and m.builds[0]["id"] == "oracle"
    assert m.baseline == "oracle" and m.resumed_at == [] and m.git.revision
    # the model names every key of the version-1 format
    assert not m.model_extra, m.model_extra


def test_report_on_a_version_1_run(tmp_path):
    run = v1_run(tmp_path)
    out = agent_host("report", str(run), "--json", cwd=ROOT)
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)
    assert results["provenance"]["repeats"] == 2 and results["provenance"]["seed"] == 7


@pytest.mark.slow
def test_resume_of_a_version_1_run(tmp_path, virtual_phone):
    run = v1_run(tmp_path)
    out = agent_host("run", "--resume", str(run), "--phones", virtual_phone.serial, "--quiet", "--no-report",
                     cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = (run / "episodes.jsonl").read_text().splitlines()
    assert [json.loads(x)["episode_id"] for x in lines] == ["oracle__wifi-on__base__r0", "oracle__wifi-on__base__r1"]
    assert json.loads(lines[1])["outcome"] == "success"
    m = json.loads((run / "manifest.json").read_text())
    assert m["schema_version"] == 2 and len(m["resumed_at"]) == 1
    assert "phone_requirements" in m and m["repeats"] == 2, "the old manifest's keys survive the resume"
    assert agent_host("report", str(run), cwd=ROOT).returncode == 0


@pytest.mark.parametrize("field, value", [("repeats", "2"), ("resumed_at", 5), ("request_timeout", "soon"),
                                          ("seed", 7.5), ("max_attempts", True), ("tasks", [{"key": 3}]),
                                          ("phones", [{"model": "no serial"}])])
def test_resume_of_a_manifest_with_a_wrong_type_is_one_line(tmp_path, field, value):
    run = v1_run(tmp_path)
    m = json.loads((run / "manifest.json").read_text())
    m[field] = value
    (run / "manifest.json").write_text(json.dumps(m, indent=2))
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    out = agent_host("run", "--resume", str(run), cwd=ROOT)
    assert out.returncode == 2, out
    assert_user_error(out, "manifest.json", field)
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    assert ".lock" not in tree(run)


@pytest.mark.slow
def test_a_bad_timeout_is_refused_even_with_a_phone_to_run_on(tmp_path, virtual_phone):
    """Before: `request_timeout: "soon"` was taken, every attempt ended as an `error`, exit 0."""
    run = v1_run(tmp_path)
    m = json.loads((run / "manifest.json").read_text())
    m["request_timeout"] = "soon"
    (run / "manifest.json").write_text(json.dumps(m, indent=2))
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    out = agent_host("run", "--resume", str(run), "--phones", virtual_phone.serial, "--quiet", "--no-report",
                     cwd=ROOT, timeout=300)
    assert out.returncode == 2, out
    assert_user_error(out, "manifest.json", "request_timeout")
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


def test_a_report_leaves_out_a_field_of_the_wrong_type_and_says_so(tmp_path):
    from agent_host.report.load import load_run

    run = v1_run(tmp_path)
    m = json.loads((run / "manifest.json").read_text())
    m.update(resumed_at=5, some_later_key={"x": 1})
    (run / "manifest.json").write_text(json.dumps(m))
    loaded = load_run(run)
    assert loaded.manifest.resumed_at == [] and loaded.manifest.repeats == 2
    assert any("manifest.json: resumed_at:" in w and "left out" in w for w in loaded.warnings), loaded.warnings
    # a key the model does not name is kept (a newer agent-host's, a hand-added one)
    assert loaded.manifest.model_extra == {"some_later_key": {"x": 1}}


def test_a_manifest_from_a_newer_agent_host_is_refused_by_name(tmp_path):
    from agent_host.config.manifest import ManifestError, load_manifest

    run = v1_run(tmp_path)
    m = json.loads((run / "manifest.json").read_text())
    m["schema_version"] = 3
    (run / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ManifestError, match=r"manifest.json: schema_version: .*newer agent-host"):
        load_manifest(run / "manifest.json")
