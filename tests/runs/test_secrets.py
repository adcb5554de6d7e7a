"""Secrets never on argv, in a lock file, in `devices`, or in a run's files. Before: `episode`
took the key only as --api-key (in /proc/PID/cmdline for every user), that argv went into the
phone lock file (mode 644) and `agent-host devices`' HELD BY; a build's `env:` values (an
HF_TOKEN) were copied into manifest.json, results.json, report.md and report.html. A secret
is planted each way and every file is grepped for it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agent_host.config.secrets import REDACTED, redact_argv, redact_env
from agent_host.runs.phone_lock import describe, holder, lock_path

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-planted-3f9a7c1e"
TOKEN = "hf_planted_b2d4e6f8"


def _grep(root: Path, *needles: str) -> list[str]:
    """Every file under root (hidden ones too) that holds one of the needles."""
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            hits += [f"{path}: {n}" for n in needles if n.encode() in data]
    return hits


def test_a_command_line_is_redacted():
    argv = ["agent-host", "episode", "--api-key", SECRET, "--max-tokens", "64",
            f"--api-key={SECRET}", f"HF_TOKEN={TOKEN}", "--model", "m"]
    assert redact_argv(argv) == ["agent-host", "episode", "--api-key", REDACTED, "--max-tokens", "64",
                                 f"--api-key={REDACTED}", f"HF_TOKEN={REDACTED}", "--model", "m"]
    assert redact_env({"HF_TOKEN": TOKEN, "VLLM_CPU_KVCACHE_SPACE": "4"}) == \
        {"HF_TOKEN": REDACTED, "VLLM_CPU_KVCACHE_SPACE": REDACTED}


def test_the_phone_lock_file_holds_no_key_and_is_private(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_HOST_LOCK_DIR", str(tmp_path / "locks"))
    code = ("import time; from agent_host.runs.phone_lock import PhoneLocks; "
            "PhoneLocks(['p1']).acquire(); print('held', flush=True); time.sleep(600)")
    # the holder's argv as `agent-host episode --api-key KEY` has it
    child = subprocess.Popen([sys.executable, "-c", code, "episode", "--api-key", SECRET, f"TOKEN={TOKEN}"],
                             cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        shown = describe(holder("p1"))                # what `agent-host devices` prints under HELD BY
        assert f"pid {child.pid}" in shown and "--api-key" in shown and REDACTED in shown
        assert SECRET not in shown and TOKEN not in shown
        assert _grep(tmp_path / "locks", SECRET, TOKEN) == []
        assert stat.S_IMODE(os.stat(lock_path("p1")).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(tmp_path / "locks").st_mode) == 0o700
    finally:
        child.kill()
        child.wait()


def test_episode_takes_its_key_from_the_environment_and_says_so():
    from agent_host.cli.episode import KEY_ENV, api_key
    from argparse import Namespace

    assert KEY_ENV == "AGENT_HOST_API_KEY"
    assert api_key(Namespace(api_key=None)) == os.environ.get(KEY_ENV, "").strip() or "none"
    os.environ[KEY_ENV] = SECRET
    try:
        assert api_key(Namespace(api_key=None)) == SECRET
        assert api_key(Namespace(api_key="flag")) == "flag"   # --api-key still works
    finally:
        del os.environ[KEY_ENV]
    out = subprocess.run([sys.executable, "-m", "agent_host", "episode", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert KEY_ENV in out.stdout and "environment is safer" in " ".join(out.stdout.split())


def _host_profile(tmp: Path) -> Path:
    (tmp / "oracle.yaml").write_text(f"suite: [{ROOT / 'tasks'}]\n")
    hosts = tmp / "secret-hosts.yaml"
    hosts.write_text(f"""\
id: secrets
description: a scripted build whose env holds a token
hardware_class: x86-avx2
builds:
  - id: oracle
    weight_path: scripted
    server: policy
    script: {tmp / 'oracle.yaml'}
    env: {{HF_TOKEN: {TOKEN}}}
""")
    return hosts


def test_no_secret_in_any_file_of_a_run_or_its_report(tmp_path, virtual_phone):
    run_dir = tmp_path / "run"
    env = {**os.environ, "AGENT_HOST_LOCK_DIR": str(tmp_path / "locks"), "AGENT_HOST_POLICY_API_KEY": SECRET}
    out = subprocess.run([sys.executable, "-m", "agent_host", "run", "--builds", "oracle",
                          "--host-profile", str(_host_profile(tmp_path)), "--tasks", "wifi-on",
                          "--variants", "base", "--repeats", "1", "--phones", virtual_phone.serial,
                          "--out", str(run_dir), "--quiet"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    for name in ("manifest.json", "results.json", "report.md", "report.html"):
        assert (run_dir / name).is_file(), name
    assert _grep(run_dir, SECRET, TOKEN) == []
    assert _grep(tmp_path / "locks", SECRET, TOKEN) == []
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["builds"][0]["env"] == {"HF_TOKEN": REDACTED}     # the name is kept
    assert "HF_TOKEN" in (run_dir / "report.md").read_text()
    # a resume takes the value from the host profile again (nothing left to run: exit 0)
    again = subprocess.run([sys.executable, "-m", "agent_host", "run", "--resume", str(run_dir), "--quiet",
                            "--phones", virtual_phone.serial],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _grep(run_dir, SECRET, TOKEN) == []


@pytest.mark.parametrize("how", ["flag", "env"])
def test_no_key_in_an_episode_folder(tmp_path, virtual_phone, policy_server, how):
    server = policy_server([{"task_complete": {"reason": "done"}}], api_key=SECRET)
    env = {**os.environ, "AGENT_HOST_LOCK_DIR": str(tmp_path / "locks")}
    key = ["--api-key", SECRET] if how == "flag" else []
    if how == "env":
        env["AGENT_HOST_API_KEY"] = SECRET
    out = subprocess.run([sys.executable, "-m", "agent_host", "episode", "--task", "wifi-on",
                          "--phone", virtual_phone.serial, "--base-url", server.base_url,
                          "--model", server.model, *key, "--out", str(tmp_path / "ep"), "--json"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["outcome"] != "error"   # the key reached the server
    assert _grep(tmp_path / "ep", SECRET) == [] and _grep(tmp_path / "locks", SECRET) == []


def test_a_report_of_a_run_an_older_version_wrote_redacts_it(tmp_path):
    """A manifest from before the fix holds the token and the key: the report shows neither."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fixtures_report import make_run

    from agent_host.report.render import write_reports

    run = make_run(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["builds"][0]["env"] = {"HF_TOKEN": TOKEN}
    manifest["command"] = ["agent-host", "run", "--api-key", SECRET]
    (run / "manifest.json").write_text(json.dumps(manifest))
    write_reports(run, screenshots=False)
    assert _grep(run, TOKEN, SECRET) == [f"{run / 'manifest.json'}: {n}" for n in (TOKEN, SECRET)]
    assert "HF_TOKEN" in (run / "report.md").read_text()
