"""`agent-host replay` on scripted builds: a run of a reference script on the virtual phone,
replayed on a script that differs from it at one known step (it must diverge exactly there and
nowhere else) and on the reference itself (every action the same); resumable, one writer,
episodes without requests.json refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_host.config.replay_log import LINES, ReplayLog
from agent_host.config.requests import REQUESTS
from agent_host.errors import UserError
from agent_host.runs.lock import RunLock
from fixtures_report import viewer_of

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WIFI = [
    {"open_app": {"name": "settings"}},
    {"tap": {"text": "Network & internet"}},
    {"tap": {"text": "Internet"}},
    {"tap": {"resource_id": "android:id/switch_widget"}},
    {"task_complete": {"reason": "Wi-Fi is on"}},
]
OTHER = [*WIFI[:2], {"tap": {"text": "Calls & SMS"}}, *WIFI[3:4], {"task_complete": {"reason": "another reason"}}]


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agent_host", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory, adb_server_port):
    from virtual_phone.phone import VirtualPhone

    tmp = tmp_path_factory.mktemp("replay")
    (tmp / "ref.yaml").write_text(json.dumps(WIFI))
    (tmp / "other.yaml").write_text(json.dumps(OTHER))
    hosts = tmp / "scripted.yaml"
    hosts.write_text(f"""\
id: scripted
description: two scripted builds that differ at step 3
hardware_class: x86-avx2
builds:
  - {{id: ref, weight_path: scripted, server: policy, script: {tmp / 'ref.yaml'}}}
  - {{id: other, weight_path: scripted, server: policy, script: {tmp / 'other.yaml'}}}
""")
    phone = VirtualPhone(adb_port=adb_server_port).start()
    try:
        out = cli("run", "--builds", "ref", "--host-profile", str(hosts), "--tasks", "wifi-on",
                  "--variants", "base", "--repeats", "2", "--phones", phone.serial, "--out", str(tmp / "run"),
                  "--quiet", "--no-report")
    finally:
        phone.stop()
    assert out.returncode == 0, out.stdout + out.stderr
    return tmp / "run", hosts


def test_builds_that_differ_at_one_step_diverge_exactly_there(scripted_run):
    run, hosts = scripted_run
    out = cli("replay", str(run), "--reference", "ref", "--builds", "other,ref", "--host-profile", str(hosts),
              "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    other, own = data["candidates"]["other"], data["candidates"]["ref"]
    assert [d["step"] for d in other["first_divergence"]] == [3, 3]
    assert {d["role"] for d in other["first_divergence"]} == {"navigation"}
    assert other["matches"] == {"same_action": 8, "same_tool": 2, "different": 0}
    # step 5's reason text differs, the action does not
    assert other["completion_agreement"]["k"] == other["completion_agreement"]["n"] == 2
    assert other["false_completion"]["k"] == 0 and other["false_completion"]["n"] == 8
    assert own["matches"]["same_action"] == own["requests"] == own["exact"] == 10
    assert [d["step"] for d in own["first_divergence"]] == [None, None]
    assert own["agreement"]["mean"] == 1.0
    assert (run / "replay" / "ref" / "replay.json").is_file()


def test_a_replay_resumes_after_a_torn_line_and_asks_nothing_twice(scripted_run):
    run, hosts = scripted_run
    path = run / "replay" / "ref" / LINES
    if not path.exists():
        assert cli("replay", str(run), "--reference", "ref", "--builds", "other", "--host-profile",
                   str(hosts)).returncode == 0
    lines = path.read_bytes().splitlines(keepends=True)
    kept = [ln for ln in lines if json.loads(ln)["pass"] != "other"]
    others = [ln for ln in lines if json.loads(ln)["pass"] == "other"]
    # as a kill -9 in mid-write leaves it: some answers, then half a line
    path.write_bytes(b"".join(kept + others[:3]) + others[3][:17])
    out = cli("replay", str(run), "--reference", "ref", "--builds", "other", "--host-profile", str(hosts), "--json")
    assert out.returncode == 0, out.stderr
    got = ReplayLog(path.parent).read()
    keys = [(x["pass"], x["episode_id"], x["index"]) for x in got]
    assert len(keys) == len(set(keys))
    assert sum(x["pass"] == "other" for x in got) == 10
    assert json.loads(out.stdout)["candidates"]["other"]["matches"]["same_tool"] == 2


def test_a_second_writer_is_refused(scripted_run):
    run, hosts = scripted_run
    with RunLock(run):
        out = cli("replay", str(run), "--reference", "ref", "--builds", "other", "--host-profile", str(hosts))
    assert out.returncode == 2
    assert out.stderr.startswith("error: ") and "in use by" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_an_episode_recorded_before_requests_json_is_refused_in_one_line(scripted_run, tmp_path):
    import shutil

    run, hosts = scripted_run
    old = tmp_path / "old"
    shutil.copytree(run, old, ignore=shutil.ignore_patterns("replay"))
    victim = sorted((old / "episodes").iterdir())[0] / REQUESTS
    victim.unlink()
    out = cli("replay", str(old), "--reference", "ref", "--builds", "other", "--host-profile", str(hosts))
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"error: {victim}: missing: this episode was recorded before agent-host kept its requests "
        "(requests.json); re-run it to replay it"]
    assert not (old / "replay").exists()


def test_the_report_shows_the_replay_and_the_viewer_each_candidate_answer(scripted_run, tmp_path):
    from agent_host.report import write_reports

    run, hosts = scripted_run
    if not (run / "replay" / "ref" / "replay.json").exists():
        assert cli("replay", str(run), "--reference", "ref", "--builds", "other,ref", "--host-profile",
                   str(hosts)).returncode == 0
    write_reports(run, out=tmp_path, screenshots=False)
    md = (tmp_path / "report.md").read_text()
    assert "## Replay of ref's steps" in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| other |"))
    assert "80% [" in row and "(8/10)" in row and "2/2 episodes" in row
    html = (tmp_path / "report.html").read_text()
    assert 'id="replay-ref"' in html and "Replayed on other builds" in html
    data = viewer_of(tmp_path / "report.html")
    ep = next(e for e in data["episodes"] if e["build"] == "ref")
    step3 = next(s for s in ep["steps"] if s["step"] == 3)
    assert {x["build"]: x["match"] for x in step3["replay"]} == {"other": "same_tool", "ref": "same_action"}
    replies = {x["build"]: json.loads(x["reply"])["tool_calls"][0]["function"] for x in step3["replay"]}
    assert replies["other"]["name"] == replies["ref"]["name"] == "tap"
    assert replies["other"]["arguments"] != replies["ref"]["arguments"]


def test_a_candidate_whose_server_fails_counts_its_requests_as_failed(scripted_run, tmp_path):
    import shutil

    from agent_host.cli.replay import resolve_builds
    from agent_host.config.manifest import load_manifest
    from agent_host.report.replay import write_summary
    from agent_host.runs.replay import replay_run

    run, hosts = scripted_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("replay"))
    manifest = load_manifest(copy / "manifest.json")
    ref, other = resolve_builds(manifest, ["ref", "other"], str(hosts))
    broken = other.model_copy(update={"script": str(tmp_path / "no-such-script.yaml"), "startup_timeout_s": 20})
    out = replay_run(copy, ref, [broken])
    data = write_summary(out)["candidates"]["other"]
    assert data["errors"] == data["requests"] == 10
    assert data["error_examples"][0].startswith("server: ")


def test_the_largest_gaps_are_a_table_in_both_reports_linking_to_their_step(scripted_run, tmp_path):
    """The gaps table (vLLM's log-probs fill it) is a spec in report/tables.py like every other
    table: a Markdown table in report.md, and in report.html links the viewer opens at the step."""
    import shutil

    from agent_host.report import write_reports

    run, hosts = scripted_run
    if not (run / "replay" / "ref" / "replay.json").exists():
        assert cli("replay", str(run), "--reference", "ref", "--builds", "other,ref", "--host-profile",
                   str(hosts)).returncode == 0
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    summary = copy / "replay" / "ref" / "replay.json"
    data = json.loads(summary.read_text())
    episode = sorted(p.name for p in (copy / "episodes").iterdir())[0]
    data["candidates"]["other"]["largest_gaps"] = [
        {"episode_id": episode, "step": 3, "role": "navigation", "gap": -1.25, "match": "same_tool"}]
    summary.write_text(json.dumps(data))
    write_reports(copy, out=tmp_path / "out", screenshots=False)
    md = (tmp_path / "out" / "report.md").read_text()
    assert f"| {episode} | 3 | navigation | -1.250 | same_tool |" in md.replace("\\_", "_"), md[-1500:]
    html = (tmp_path / "out" / "report.html").read_text()
    assert f'class="replay-link" data-episode="{episode}" data-step="3"' in html


def test_a_build_read_back_from_the_run_gets_its_env_values_as_a_resume_does(tmp_path):
    """`agent-host replay RUN --builds W4A16` started the server with the run's redacted env
    (VLLM_CPU_INT4_W4A8='<redacted>'), and vLLM died on it: no request of the candidate answered."""
    from agent_host.cli.replay import resolve_builds
    from agent_host.config.manifest import RunManifest
    from agent_host.config.secrets import REDACTED

    script = tmp_path / "s.yaml"
    script.write_text("- task_complete: {reason: done}\n")
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text("id: h\ndescription: d\nhardware_class: x86-avx2\nbuilds:\n"
                     f"  - {{id: w4, weight_path: scripted, server: policy, script: {script}, "
                     "env: {VLLM_CPU_INT4_W4A8: '0'}}\n")
    manifest = RunManifest.model_validate({"builds": [{"id": "w4", "weight_path": "scripted", "server": "policy",
                                                       "script": str(script), "env": {"VLLM_CPU_INT4_W4A8": REDACTED}}]})
    (w4,) = resolve_builds(manifest, ["w4"], str(hosts))
    assert w4.env == {"VLLM_CPU_INT4_W4A8": "0"}
    with pytest.raises(UserError, match="are not kept in a run"):
        resolve_builds(manifest, ["w4"], None)
