"""A vision build's run replayed: `agent-host run --observation som` with a scripted build that
taps by coordinates, then `agent-host replay` against a second build, which must receive the
reference's exact screenshots (each request's body hashes to what the reference sent)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_host.config.requests import body_sha256, load_request_log
from fixtures_report import viewer_of

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = [
    {"open_app": {"name": "settings"}},
    {"tap": {"text": "Network & internet"}},
    {"tap_xy": {"x": 135, "y": 300}},                 # somewhere on the page, in the 270x600 image
    {"task_complete": {"reason": "done"}},
]


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agent_host", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_a_som_run_replays_with_the_reference_screenshots(tmp_path, adb_server_port, policy_server):
    from virtual_phone.phone import VirtualPhone

    (tmp_path / "ref.yaml").write_text(json.dumps(SCRIPT))
    twin = policy_server(SCRIPT)      # the candidate: an endpoint this test can read
    hosts = tmp_path / "vision.yaml"
    hosts.write_text(f"""\
id: vision
description: a scripted set-of-marks build and a twin that sees what it is sent
hardware_class: x86-avx2
builds:
  - {{id: ref, weight_path: scripted, server: policy, script: {tmp_path / 'ref.yaml'},
     long_side: 600, history_images: 1}}
  - {{id: twin, weight_path: remote, server: openai, base_url: {twin.base_url}, model: policy}}
""")
    phone = VirtualPhone(adb_port=adb_server_port).start()
    try:
        # the build is a text build; the run's flag makes it see the screen, recorded in the manifest
        out = cli("run", "--builds", "ref", "--host-profile", str(hosts), "--tasks", "wifi-on", "--observation", "som",
                  "--phones", phone.serial, "--out", str(tmp_path / "run"), "--quiet", "--no-report")
    finally:
        phone.stop()
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["builds"][0]["observation"] == "som"
    (episode,) = (tmp_path / "run" / "episodes").iterdir()
    log = load_request_log(episode)
    assert log.history_images == 1 and len(log.requests) == 4
    assert len(list((episode / "images").iterdir())) == 4
    steps = [json.loads(line) for line in (episode / "steps.jsonl").read_text().splitlines()]
    assert steps[3]["action"]["name"] == "tap_xy" and steps[3]["action"]["point"] == [542, 1202]

    out = cli("replay", str(tmp_path / "run"), "--reference", "ref", "--builds", "twin",
              "--host-profile", str(hosts), "--json")
    assert out.returncode == 0, out.stderr
    asked = [r for r in twin.requests if "tools" in r]     # not the readiness probe
    assert len(asked) == 4
    for i, received in enumerate(asked):
        # the messages the reference sent, its screenshots byte for byte (replay sets its own model
        # and temperature, so the whole body's hash is not the reference's)
        assert received["messages"] == log.body(i)["messages"]
        assert body_sha256({**received, "model": log.model, "temperature": log.requests[i].options["temperature"]}) \
            == log.requests[i].sha256
    data = json.loads(out.stdout)
    assert data["candidates"]["twin"]["matches"]["same_tool"] + \
        data["candidates"]["twin"]["matches"]["same_action"] == 4

    # the viewer shows each step's sent image (270x600, marks and all) beside the phone's screenshot
    out = cli("report", str(tmp_path / "run"))
    assert out.returncode == 0, out.stderr
    (ep,) = viewer_of(tmp_path / "run" / "report.html")["episodes"]
    sent = [s["sent"]["shot"] for s in ep["steps"] if s.get("sent")]
    assert len(sent) == 4 and all((x["w"], x["h"]) == (270, 600) for x in sent)
    assert all(ep["shots"][x["i"]].startswith("data:image/") for x in sent)
    assert ep["steps"][3]["action"]["point"] == [542, 1202]
    md = (tmp_path / "run" / "report.md").read_text()
    assert "sees: som long side 600" in md          # the configured builds' facts
    assert "| prompt tok / step |" in md            # the speed table: a vision build's prompts carry images
