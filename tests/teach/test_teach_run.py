"""`run --taught SPLIT.json`: the split reaches the manifest and the report breaks each build's
success down by taught and held-out instances."""

from __future__ import annotations

import json

import pytest

from agent_host.cli import main
from agent_host.config.tasks import load_tasks
from agent_host.teach.split import choose_split
from fixtures_policy import write_suite_builds

pytestmark = pytest.mark.slow


def test_a_run_names_its_split_and_the_report_says_which_instances_were_taught(virtual_phone, tmp_path):
    split = choose_split(load_tasks(["wifi-on", "alarm-set"], ("base", "verify")), seed=0)
    path = tmp_path / "split.json"
    path.write_text(split.model_dump_json())
    hosts = write_suite_builds(tmp_path, {}, "the taught run test")
    run = tmp_path / "run"
    assert main(["run", "--builds", "oracle", "--host-profile", str(hosts), "--tasks", "wifi-on,alarm-set",
                 "--phones", virtual_phone.serial, "--out", str(run), "--vary", "none", "--taught", str(path)]) == 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["taught"]["instances"] == split.instances
    results = json.loads((run / "results.json").read_text())
    rows = {r["group"]: r for r in results["breakdown"] if r["by"] == "taught"}
    assert set(rows) == {"taught", "held-out-params"}
    assert rows["held-out-params"]["instances"] == ["alarm-set[0]"]
    assert rows["taught"]["instances"] == ["alarm-set[1]", "alarm-set[2]", "wifi-on"]
    assert rows["taught"]["builds"]["oracle"]["mean"] == 1.0
