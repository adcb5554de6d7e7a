"""`agent-host phone check` (alias `doctor`): every requirement read from a phone, with fixes;
`phone start --no-sim --no-calendar-account` starts a phone that lacks them, `--contact-sync`
one whose account syncs contacts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agent_host.config.requirements import REQUIREMENTS
from fixtures_cli import agent_host, assert_user_error

ROOT = Path(__file__).resolve().parents[2]


def test_every_row_is_met_on_the_virtual_phone(virtual_phone, tmp_path):
    out = agent_host("phone", "check", virtual_phone.serial, "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["name"] for r in rows] == list(REQUIREMENTS)
    assert all(r["met"] and r["fix"] and r["seen"] for r in rows)
    table = agent_host("phone", "doctor", virtual_phone.serial, cwd=tmp_path)
    assert table.returncode == 0 and f"{len(rows)} of {len(rows)} met" in table.stdout


def test_a_phone_started_without_sim_and_calendar_fails_those_rows_with_their_fixes(adb_server_port, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "agent_host", "phone", "start", "--no-sim",
                             "--no-calendar-account", "--adb-port", str(adb_server_port)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        serial = proc.stdout.readline().split("serial:")[1].strip()
        out = agent_host("phone", "check", serial, cwd=tmp_path)
        assert out.returncode == 1
        assert "not met: calendar_account, sim_sms, sim_call" in out.stdout
        assert REQUIREMENTS["sim_sms"].fix.split(";")[0] in " ".join(out.stdout.split())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_phone_whose_account_syncs_contacts_fails_that_row(adb_server_port, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "agent_host", "phone", "start", "--contact-sync",
                             "--adb-port", str(adb_server_port)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        serial = proc.stdout.readline().split("serial:")[1].strip()
        out = agent_host("phone", "check", serial, "--json", cwd=tmp_path)
        assert out.returncode == 1
        rows = {r["name"]: r for r in json.loads(out.stdout)}
        assert [n for n, r in rows.items() if not r["met"]] == ["no_contact_sync"]
        assert rows["no_contact_sync"]["seen"] == "contacts sync on: com.google (vphone.user@gmail.com)"
        assert rows["no_contact_sync"]["fix"] == REQUIREMENTS["no_contact_sync"].fix
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _profile_without_markor(tmp_path: Path) -> Path:
    """A phone profile whose Markor is a package the virtual phone does not have."""
    path = tmp_path / "other-markor.yaml"
    text = (ROOT / "device_profiles/phones/virtual.yaml").read_text().replace("id: virtual", "id: other-markor")
    path.write_text(text + "apps: {markor: org.example.markor}\n")
    return path


def test_check_names_the_apps_the_tasks_open_that_the_phone_lacks(virtual_phone, tmp_path):
    profile = _profile_without_markor(tmp_path)
    out = agent_host("phone", "check", virtual_phone.serial, "--phone-profile", str(profile), cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    text = " ".join(out.stdout.split())
    assert "not met: apps_installed" in text and "markor (org.example.markor)" in text
    assert "Markor: net.gsantner.markor" in text          # the fix
    only = agent_host("phone", "check", virtual_phone.serial, "--phone-profile", str(profile),
                      "--tasks", "dark-theme-on,wifi-on", "--json", cwd=tmp_path)
    assert only.returncode == 0, only.stdout      # these tasks open Settings only
    seen = {r["name"]: r["seen"] for r in json.loads(only.stdout)}
    assert seen["apps_installed"] == "all installed: settings"


def test_run_plan_with_phones_skips_the_tasks_whose_app_is_missing(virtual_phone, tmp_path):
    profile = _profile_without_markor(tmp_path)
    out = agent_host("run", "--plan", "--tasks", "markor-append-line,dark-theme-on", "--variants", "base",
                     "--phones", virtual_phone.serial, "--phone-profile", str(profile), cwd=ROOT)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert ("skipped 1 task instance(s) of 1 task(s), no phone has app:org.example.markor: "
            "markor-append-line") in text


def test_an_unknown_serial_is_one_line(tmp_path, adb_server_port):
    assert_user_error(agent_host("phone", "check", "127.0.0.1:1", cwd=tmp_path, timeout=120), "127.0.0.1:1")


def test_run_plan_with_phones_says_what_they_cannot_serve(virtual_phone_factory, tmp_path):
    bare = virtual_phone_factory(sim=False)
    out = agent_host("run", "--plan", "--tasks", "sms-send-number,dark-theme-on", "--variants", "base",
                     "--phones", bare.serial, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "skipped 3 task instance(s) of 1 task(s), no phone has sim_sms: sms-send-number" in text
    assert text.index("skipped") < text.index("1 task (1 base instance)")
