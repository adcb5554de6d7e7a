"""Bad input on the command line: one `error:` line naming the file, line or field, a
non-zero exit, no traceback, and nothing half-written (no run directory, report, episode
folder or temporary directory left behind)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures_cli import agent_host, assert_user_error, tree
from fixtures_report import make_run


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    f = tmp_path / "a-file"
    f.write_text("not a directory\n")
    return f


# -- run ----------------------------------------------------------------------------------

@pytest.mark.parametrize("content", ["{not json", "[1, 2]", "{}", '{"builds": [{"id": "x"}], "tasks": []}'])
def test_run_resume_with_a_broken_manifest_names_it_and_changes_nothing(tmp_path, content):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text(content)
    out = agent_host("run", "--resume", str(run_dir), cwd=tmp_path)
    assert_user_error(out, str(run_dir / "manifest.json"))
    assert tree(run_dir) == ["manifest.json"]


@pytest.mark.parametrize("flag, value", [("--builds", "embedded-default,embedded-default"),
                                         ("--phones", "127.0.0.1:1,127.0.0.1:1")])
def test_run_rejects_a_build_or_phone_given_twice(tmp_path, flag, value):
    args = {"--builds": "embedded-default", "--phones": "127.0.0.1:1", flag: value}
    out = agent_host("run", "--tasks", "wifi-on", "--out", str(tmp_path / "run"), "--no-report",
                     *[x for kv in args.items() for x in kv], cwd=tmp_path)
    assert_user_error(out, flag)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("flag, value", [("--max-attempts", "0"), ("--startup-timeout", "0")])
def test_run_rejects_non_positive_attempts_and_timeouts(tmp_path, flag, value):
    out = agent_host("run", "--builds", "embedded-default", "--tasks", "wifi-on", "--phones", "127.0.0.1:1",
                     "--out", str(tmp_path / "run"), flag, value, cwd=tmp_path)
    assert_user_error(out, flag)
    assert not (tmp_path / "run").exists()


def test_run_out_under_a_file(tmp_path, a_file):
    for target in (a_file, a_file / "run"):
        out = agent_host("run", "--builds", "embedded-default", "--tasks", "wifi-on", "--phones", "127.0.0.1:1",
                         "--out", str(target), cwd=tmp_path)
        assert_user_error(out, "--out", str(a_file))
    assert a_file.read_text() == "not a directory\n"


def test_run_unreachable_phone_is_one_line_and_leaves_no_run_dir(tmp_path, adb_server_port):
    out = agent_host("run", "--builds", "embedded-default", "--tasks", "wifi-on", "--phones", "127.0.0.1:1",
                     "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert_user_error(out, "127.0.0.1:1")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("flag, value", [("--builds", ","), ("--variants", ",")])
def test_run_empty_list_option(tmp_path, flag, value):
    args = {"--builds": "embedded-default", "--variants": "base", flag: value}
    out = agent_host("run", "--tasks", "wifi-on", "--phones", "127.0.0.1:1", "--out", str(tmp_path / "run"),
                     *[x for kv in args.items() for x in kv], cwd=tmp_path)
    assert_user_error(out, flag)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("build, names", [("npu-w8a16", ["npu-w8a16", "not runnable"]),
                                          ("openai-example", ["openai-example", "AGENT_HOST_OPENAI_KEY"])])
def test_run_unusable_build_fails_before_the_run_dir(tmp_path, monkeypatch, virtual_phone, build, names):
    monkeypatch.delenv("AGENT_HOST_OPENAI_KEY", raising=False)
    out = agent_host("run", "--builds", build, "--tasks", "wifi-on", "--phones", virtual_phone.serial,
                     "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert_user_error(out, *names)
    assert not (tmp_path / "run").exists()


def test_host_profile_that_is_a_directory(tmp_path):
    out = agent_host("builds", "--host-profile", str(tmp_path), cwd=tmp_path)
    assert_user_error(out, str(tmp_path), "directory")


# -- report -------------------------------------------------------------------------------

def test_report_out_is_a_file(tmp_path, a_file):
    run_dir = make_run(tmp_path)
    before = tree(run_dir)
    for target in (a_file, a_file / "sub"):
        out = agent_host("report", str(run_dir), "--out", str(target), cwd=tmp_path)
        assert_user_error(out, "--out", str(a_file))
    assert tree(run_dir) == before
    assert a_file.read_text() == "not a directory\n"


def test_report_episode_log_that_is_a_directory(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "episodes.jsonl").mkdir(parents=True)
    out = agent_host("report", str(run_dir), cwd=tmp_path)
    assert_user_error(out, str(run_dir / "episodes.jsonl"))
    assert tree(run_dir) == ["episodes.jsonl"]


# -- demo ---------------------------------------------------------------------------------

@pytest.mark.parametrize("flag, value", [("--phones", "0"), ("--max-steps", "0"), ("--variants", "foo"),
                                         ("--startup-timeout", "0"), ("--phones", "100000"),
                                         ("--repeats", "1000000000000"), ("--max-steps", "1000000"),
                                         ("--fidelity-max-tokens", "0")])
def test_demo_bad_options_start_nothing(tmp_path, flag, value):
    out = agent_host("demo", "--out", str(tmp_path / "run"), flag, value, cwd=tmp_path)
    line = assert_user_error(out, flag)
    if flag == "--variants":
        assert "'foo'" in line
    assert out.stdout == ""
    assert not (tmp_path / "run").exists()


# -- episode ------------------------------------------------------------------------------

@pytest.mark.parametrize("extra, names", [
    (["--max-tokens", "0"], ["--max-tokens"]),
    (["--temperature", "-1"], ["--temperature"]),
    (["--base-url", "notaurl"], ["--base-url", "notaurl"]),
    (["--request-timeout", "0"], ["--request-timeout"]),
    (["--episode-timeout", "-5"], ["--episode-timeout"]),
])
def test_episode_bad_sampling_or_url(tmp_path, extra, names):
    args = ["episode", "--task", "wifi-on", "--phone", "127.0.0.1:1", "--base-url", "http://127.0.0.1:9/v1",
            "--model", "m", "--out", str(tmp_path / "ep"), *extra]
    out = agent_host(*args, cwd=tmp_path)
    assert_user_error(out, *names)
    assert not (tmp_path / "ep").exists()


def test_episode_out_is_a_file(tmp_path, a_file):
    out = agent_host("episode", "--task", "wifi-on", "--phone", "127.0.0.1:1", "--base-url",
                     "http://127.0.0.1:9/v1", "--model", "m", "--out", str(a_file), cwd=tmp_path)
    assert_user_error(out, "--out", str(a_file))


def test_episode_unreachable_phone_leaves_no_temporary_folder(tmp_path, adb_server_port):
    out = agent_host("episode", "--task", "wifi-on", "--phone", "127.0.0.1:1", "--base-url",
                     "http://127.0.0.1:9/v1", "--model", "m", cwd=tmp_path, tmpdir=tmp_path / "tmp")
    assert_user_error(out, "127.0.0.1:1")
    assert tree(tmp_path / "tmp") == []


# -- tasks check-solutions ----------------------------------------------------------------

def test_check_solutions_unreachable_phone(tmp_path, adb_server_port):
    out = agent_host("tasks", "check-solutions", "wifi-on", "--phone", "127.0.0.1:1",
                     cwd=tmp_path, tmpdir=tmp_path / "tmp")
    assert_user_error(out, "--phone", "127.0.0.1:1")
    assert tree(tmp_path / "tmp") == []


def test_check_solutions_out_is_a_file(tmp_path, a_file):
    out = agent_host("tasks", "check-solutions", "wifi-on", "--phone", "127.0.0.1:1", "--out", str(a_file),
                     cwd=tmp_path)
    assert_user_error(out, "--out", str(a_file))


# -- policy serve, serve, fidelity --------------------------------------------------------

def test_policy_serve_port_out_of_range(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- task_complete: {reason: done}\n")
    out = agent_host("policy", "serve", "--script", str(script), "--port", "99999", cwd=tmp_path)
    assert_user_error(out, "--port")


@pytest.mark.parametrize("extra, name", [(["--port", "99999"], "--port"),
                                         (["--startup-timeout", "0"], "--startup-timeout"),
                                         (["--log-dir", "LOGDIR"], "--log-dir")])
def test_serve_bad_options_fail_before_starting(tmp_path, a_file, extra, name):
    extra = [str(a_file / "logs") if x == "LOGDIR" else x for x in extra]
    out = agent_host("serve", "tiny-random", "--json", *extra, cwd=tmp_path)
    assert_user_error(out, name)
    assert out.stdout == ""


@pytest.mark.parametrize("extra, name", [(["--out", "OUT"], "--out"),
                                         (["--startup-timeout", "-1"], "--startup-timeout")])
def test_fidelity_bad_options(tmp_path, a_file, extra, name):
    extra = [str(a_file / "fid") if x == "OUT" else x for x in extra]
    out = agent_host("fidelity", "--builds", "tiny-random", "--reference", "tiny-random", *extra, cwd=tmp_path)
    assert_user_error(out, name)
    assert not (tmp_path / "reports").exists()



def test_observe_screen_must_be_positive(tmp_path):
    dump = tmp_path / "dump.xml"
    dump.write_text('<hierarchy rotation="0"><node bounds="[0,0][10,10]" class="a" text="x"/></hierarchy>')
    out = agent_host("observe", str(dump), "--screen", "0x0", cwd=tmp_path)
    assert_user_error(out, "--screen", "0x0")
    assert out.stdout == ""
