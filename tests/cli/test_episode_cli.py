"""`agent-host episode`, `agent-host policy serve` and `tasks check-solutions`, as a user runs them."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_host.cli import main
from agent_host.cli.tasks_check import run as check_solutions

WIFI_ON = """\
- open_app: {name: settings}
- tap: {text: "Network & internet"}
- tap: {text: "Internet"}
- tap: {text: "Wi-Fi"}
- task_complete: {reason: "Wi-Fi is on"}
"""


@pytest.fixture
def served_script(tmp_path):
    """served_script(yaml_text) -> base URL of `agent-host policy serve --port 0` (a subprocess)."""
    procs = []

    def serve(text: str, *extra: str) -> str:
        path = tmp_path / f"script{len(procs)}.yaml"
        path.write_text(text)
        proc = subprocess.Popen([sys.executable, "-m", "agent_host", "policy", "serve", "--script", str(path),
                                 "--port", "0", *extra], stdout=subprocess.PIPE, text=True, env=os.environ.copy())
        procs.append(proc)
        line = proc.stdout.readline()
        assert line.startswith("policy server: "), line
        return line.split()[2]

    yield serve
    for p in procs:
        p.terminate()
        p.wait(10)


def test_episode_json_success(virtual_phone, served_script, tmp_path, capsys):
    base = served_script(WIFI_ON, "--api-key", "k1")
    code = main(["episode", "--task", "wifi-on", "--phone", virtual_phone.serial, "--base-url", base,
                 "--model", "policy", "--api-key", "k1", "--out", str(tmp_path / "ep"), "--json",
                 "--seed", "5", "--no-screenshots"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["outcome"] == "success"
    assert (out["goal_first_step"], out["goal_lost_step"], out["complete_step"], out["steps"]) == (4, None, 5, 5)
    assert out["seed"] == 5 and out["episode_dir"] == str(tmp_path / "ep")
    assert (tmp_path / "ep" / "episode.json").exists()


def test_episode_verify_variant_readable_summary(virtual_phone, served_script, tmp_path, capsys):
    base = served_script("- task_complete: {reason: already on}\n")
    code = main(["episode", "--task", "wifi-on", "--variant", "verify", "--phone", virtual_phone.serial,
                 "--base-url", base.removesuffix("/v1"), "--model", "policy", "--out", str(tmp_path / "v"),
                 "--no-screenshots"])
    assert code == 0
    text = capsys.readouterr().out
    assert "wifi-on (verify)" in text and "SUCCESS" in text and "task_complete at step 1" in text


def test_episode_undone_via_cli(virtual_phone, served_script, tmp_path, capsys):
    script = WIFI_ON.replace("- task_complete", '- tap: {text: "Wi-Fi"}\n- task_complete')
    base = served_script(script)
    assert main(["episode", "--task", "wifi-on", "--phone", virtual_phone.serial, "--base-url", base,
                 "--model", "policy", "--out", str(tmp_path / "u"), "--json", "--no-screenshots"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["outcome"] == "undone" and out["goal_lost_step"] == 5


def test_episode_bad_phone_is_a_user_error(served_script, capsys):
    base = served_script(WIFI_ON)
    code = main(["episode", "--task", "wifi-on", "--phone", "127.0.0.1:1", "--base-url", base,
                 "--model", "policy"])
    assert code == 2 and "error: phone 127.0.0.1:1" in capsys.readouterr().err


def test_episode_unknown_task_is_a_user_error(capsys):
    code = main(["episode", "--task", "no-such-task", "--phone", "x", "--base-url", "http://x/v1", "--model", "m"])
    assert code == 2 and "no-such-task" in capsys.readouterr().err


def test_check_solutions_passes_and_fails(virtual_phone, tmp_path, capsys):
    args = argparse.Namespace(phone=virtual_phone.serial, tasks=["wifi-on", "fm-radio-on"], out=str(tmp_path / "ok"))
    assert check_solutions(args) == 0
    out = capsys.readouterr().out
    assert "wifi-on@verify" in out and "infeasible_claimed" in out and "all solutions succeed" in out

    broken = (Path(__file__).resolve().parents[2] / "tasks" / "wifi-on.yaml").read_text().replace('- tap: {text: "Internet"}', '- tap: {text: "Interweb"}')
    broken = broken.replace("id: wifi-on", "id: wifi-on-broken").replace("$schema=./", "$schema=../tasks/")
    path = tmp_path / "broken.yaml"
    path.write_text(broken)
    args = argparse.Namespace(phone=virtual_phone.serial, tasks=[str(path)], out=str(tmp_path / "bad"))
    assert check_solutions(args) == 1
    out = capsys.readouterr().out
    assert "wifi-on-broken" in out and "1 of 2 failed" in out and "Interweb" in out
