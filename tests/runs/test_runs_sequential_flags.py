"""`run --until-decided` flags: bad ones fail in one line before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_cli import agent_host, assert_user_error

ROOT = Path(__file__).resolve().parents[2]


def _hosts(tmp: Path, n: int = 2) -> Path:
    (tmp / "oracle.yaml").write_text(f"suite: [{ROOT / 'tasks'}]\n")
    builds = "\n".join(f"  - {{id: b{i}, weight_path: scripted, server: policy, script: {tmp / 'oracle.yaml'}}}"
                       for i in range(n))
    path = tmp / "hosts.yaml"
    path.write_text(f"id: scripted\ndescription: test\nhardware_class: x86-avx2\nbuilds:\n{builds}\n")
    return path


@pytest.mark.parametrize("extra,names", [
    (["--budget", "ten"], ["--budget", "ten"]),
    (["--budget", "3"], ["--budget", "first pass"]),
    (["--detect", "150"], ["--detect"]),
])
def test_bad_sequential_flags(tmp_path, extra, names):
    out = agent_host("run", "--builds", "b0,b1", "--host-profile", str(_hosts(tmp_path)), "--tasks", "wifi-on,wifi-off",
                     "--phones", "127.0.0.1:1", "--until-decided", "--out", str(tmp_path / "run"), *extra, cwd=ROOT)
    assert_user_error(out, *names)
    assert not (tmp_path / "run").exists()


def test_until_decided_needs_two_builds_and_flags_need_it(tmp_path):
    hosts = str(_hosts(tmp_path, 3))
    out = agent_host("run", "--builds", "b0,b1,b2", "--host-profile", hosts, "--tasks", "wifi-on",
                     "--phones", "127.0.0.1:1", "--until-decided", cwd=ROOT)
    assert_user_error(out, "--until-decided", "two builds")
    out = agent_host("run", "--builds", "b0,b1", "--host-profile", hosts, "--tasks", "wifi-on",
                     "--phones", "127.0.0.1:1", "--detect", "5", cwd=ROOT)
    assert_user_error(out, "--detect", "--until-decided")


@pytest.mark.slow
def test_a_duration_budget_ends_the_run_undecided_after_the_round_in_hand(tmp_path, virtual_phone_factory):
    import json

    phone = virtual_phone_factory()
    run_dir = tmp_path / "run"
    out = agent_host("run", "--builds", "b0,b1", "--host-profile", str(_hosts(tmp_path)),
                     "--tasks", "wifi-on,bluetooth-on,dark-theme-on", "--until-decided", "--budget", "1s",
                     "--phones", phone.serial, "--out", str(run_dir), "--quiet", "--no-report", cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    st = json.loads((run_dir / "manifest.json").read_text())["sequential"]
    assert st["duration_s"] == 1.0 and len(st["rounds"]) == 1        # the first pass, then time was up
    d = st["rounds"][0]["decision"]
    assert d["final"] and d["outcome"] == "undecided" and d["why"].startswith("budget spent")
    assert "sequential: undecided" in out.stdout
