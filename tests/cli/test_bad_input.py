"""Issue 11's bad inputs, each one: a one-line `error:` naming file:line: field, a non-zero
exit, no traceback, nothing half-written, and fast (no run directory, no phone needed).

Before, each of these ended in a traceback, a silent acceptance or a half-written state:
a NUL byte in a task file (yaml.reader.ReaderError), an alias bomb in `check.all` or in a
policy script (MemoryError after ~100 s), `--repeats 1000000000000` (MemoryError in plan()),
`run --resume` on a log with a garbage line (pydantic traceback, manifest already modified),
a policy build with no or a broken script (run directory created first), a phone profile
missing an alias the tasks need (3 errored attempts, exit 0), duplicate YAML keys (last
wins), `observe DIR` ("no such file")."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agent_host.config.loading import MAX_NODES, load_yaml
from agent_host.errors import ConfigError

from fixtures_cli import agent_host, assert_user_error, tree
from fixtures_report import make_run

ROOT = Path(__file__).resolve().parents[2]
WIFI = (ROOT / "tasks" / "wifi-on.yaml").read_text()


def bomb(key: str, indent: str = "") -> str:
    """~600 bytes that expand to 9**9 (387 million) values."""
    lines = [f'{indent}{key}0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 9):
        lines.append(f"{indent}{key}{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_duplicate_keys_name_both_lines(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text("id: x\ncheck:\n  setting: {key: a}\n  setting: {key: b}\n")
    with pytest.raises(ConfigError, match=r"t\.yaml:4: check\.setting: duplicate key \(first on line 3\)"):
        load_yaml(f)


@pytest.mark.parametrize("char", ["\x00", "\x01", "\x1b", "\x7f"])
def test_unreadable_characters_name_the_line(tmp_path, char):
    f = tmp_path / "t.yaml"
    f.write_text(f"id: x\ngoal: a{char}b\n")
    with pytest.raises(ConfigError, match=rf"t\.yaml:2: unreadable character U\+{ord(char):04X}"):
        load_yaml(f)


def test_alias_bomb_is_refused_quickly_and_plain_aliases_still_work(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text(bomb("k"))
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match=rf"expands to more than {MAX_NODES} values"):
        load_yaml(f)
    assert time.monotonic() - t0 < 2
    f.write_text("a: &x {k: 1}\nb: *x\nc:\n  <<: *x\n  j: 2\nd: &r [1]\n")
    assert load_yaml(f)[0] == {"a": {"k": 1}, "b": {"k": 1}, "c": {"k": 1, "j": 2}, "d": [1]}


def run_args(tmp_path: Path, *extra: str) -> list[str]:
    return ["run", "--builds", "embedded-default", "--phones", "127.0.0.1:1", "--out", str(tmp_path / "run"),
            "--no-report", *extra]


@pytest.mark.parametrize("case, names", [
    ("nul", ["wifi-on.yaml:", "unreadable character U+0000"]),
    ("dup", ["wifi-on.yaml:", "duplicate key"]),
    ("bomb", ["wifi-on.yaml:", "check", "expands to more than"]),
])
def test_run_with_a_bad_task_file(tmp_path, case, names):
    task = tmp_path / "wifi-on.yaml"
    if case == "nul":
        task.write_text(WIFI.replace("goal:", "goal: \x00", 1))
    elif case == "dup":
        task.write_text(WIFI + "max_steps: 9\n")
    else:
        # each check is `all` of nine copies of the one before it: 9**8 checks in 600 bytes
        levels = ["    - &c0 {setting: {namespace: global, key: wifi_on, equals: '1'}}"]
        levels += [f"    - &c{i} {{all: [{', '.join([f'*c{i - 1}'] * 9)}]}}" for i in range(1, 9)]
        head, tail = WIFI.split("check:", 1)
        rest = tail.split("\n", 1)[1]
        rest = "\n".join(ln for ln in rest.splitlines() if not ln.startswith((" ", "\t")) or not ln.strip())
        task.write_text(head + "check:\n  all:\n" + "\n".join(levels) + "\n" + rest + "\n")
    t0 = time.monotonic()
    out = agent_host(*run_args(tmp_path, "--tasks", str(task)), cwd=tmp_path)
    assert_user_error(out, *names)
    assert time.monotonic() - t0 < 30
    assert not (tmp_path / "run").exists()


def test_policy_script_alias_bomb(tmp_path):
    script = tmp_path / "p.yaml"
    script.write_text("x:\n" + bomb("b", "  ") + "actions:\n  - raw: {name: tap, arguments: *a8}\n")
    out = agent_host("policy", "serve", "--script", str(script), "--port", "0", cwd=tmp_path, timeout=30)
    assert_user_error(out, "p.yaml:", "expands to more than")


@pytest.mark.parametrize("flag, value", [("--repeats", "1000000000000"), ("--repeats", "0"),
                                         ("--max-attempts", "1000000"), ("--request-timeout", "0"),
                                         ("--episode-timeout", "-1"), ("--phone-wait", "1e12")])
def test_numeric_flags_are_bounded(tmp_path, flag, value):
    t0 = time.monotonic()
    out = agent_host(*run_args(tmp_path, "--tasks", "wifi-on", flag, value), cwd=tmp_path)
    assert_user_error(out, flag)
    assert time.monotonic() - t0 < 30
    assert not (tmp_path / "run").exists()


def test_too_many_phones(tmp_path):
    phones = ",".join(f"127.0.0.1:{p}" for p in range(20000, 20100))
    out = agent_host("run", "--builds", "embedded-default", "--tasks", "wifi-on", "--phones", phones,
                     "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert_user_error(out, "--phones", "at most")
    assert not (tmp_path / "run").exists()


HOST = """id: t
description: test host
hardware_class: x86-avx2
detect: never
builds:
  - {id: missing, weight_path: scripted, server: policy, script: nowhere.yaml}
  - {id: none, weight_path: scripted, server: policy}
  - {id: broken, weight_path: scripted, server: policy, script: broken.yaml}
"""


@pytest.mark.parametrize("build, names", [("missing", ["build missing", "nowhere.yaml", "no such file"]),
                                          ("none", ["build none", "script"]),
                                          ("broken", ["build broken", "broken.yaml:2", "unknown action"])])
def test_policy_build_without_a_usable_script_fails_before_the_run_dir(tmp_path, build, names):
    (tmp_path / "device_profiles" / "hosts").mkdir(parents=True)
    (tmp_path / "device_profiles" / "hosts" / "t.yaml").write_text(HOST)
    (tmp_path / "broken.yaml").write_text("- tap: {index: 1}\n- fly\n")
    args = ["run", "--builds", build, "--host-profile", "t", "--tasks", "wifi-on", "--phones", "127.0.0.1:1",
            "--out", str(tmp_path / "run")]
    assert_user_error(agent_host(*args, cwd=tmp_path), *names)
    assert not (tmp_path / "run").exists()
    # and the retry after fixing it is not told the directory "already holds a run"
    (tmp_path / "broken.yaml").write_text("- fly\n")
    assert "already holds a run" not in agent_host(*args, cwd=tmp_path).stderr


def test_phone_profile_missing_an_alias_the_tasks_need(tmp_path):
    prof = tmp_path / "prof.yaml"
    prof.write_text("id: p\ndescription: x\nandroid_version: 14\nscreen: {width: 1080, height: 2400, density: 420}\n"
                    "apps: {settings: null}\n")
    out = agent_host(*run_args(tmp_path, "--tasks", "wifi-on", "--phone-profile", str(prof)), cwd=tmp_path)
    assert_user_error(out, "wifi-on", "settings", "phone profile 'p'")
    assert not (tmp_path / "run").exists()


def test_resume_with_a_garbage_log_line_changes_nothing(tmp_path):
    run = make_run(tmp_path)
    log = run / "episodes.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines.insert(3, '{"episode_id": "x", "garbage": true}\n')
    log.write_text("".join(lines))
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    out = agent_host("run", "--resume", str(run), cwd=tmp_path)
    assert_user_error(out, "episodes.jsonl:4:")
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    assert ".lock" not in tree(run)


def test_observe_a_directory_says_so(tmp_path):
    out = agent_host("observe", str(tmp_path), cwd=tmp_path)
    assert_user_error(out, str(tmp_path), "a directory")


def test_one_phone_under_two_serials_is_refused(tmp_path, virtual_phone):
    """Before: `127.0.0.1:P,localhost:P` was accepted; two workers drove one phone and an
    episode was mislabelled."""
    port = virtual_phone.serial.rsplit(":", 1)[1]
    out = agent_host("run", "--builds", "embedded-default", "--tasks", "wifi-on", "--out", str(tmp_path / "run"),
                     "--phones", f"127.0.0.1:{port},localhost:{port}", cwd=tmp_path)
    assert_user_error(out, f"127.0.0.1:{port}", f"localhost:{port}", "same device")
    assert not (tmp_path / "run").exists()


def test_two_virtual_phones_are_two_devices(virtual_phone_factory):
    from agent_host.runs.run import _fingerprints
    a, b = virtual_phone_factory(), virtual_phone_factory()
    fps = _fingerprints([a.serial, b.serial])
    assert fps[0]["serialno"] != fps[1]["serialno"]


# -- issue 24: the last bad inputs -------------------------------------------------------------

ISSUE24_HOST = """id: t24
description: test host
hardware_class: x86-avx2
detect: never
builds:
  - {id: bad-url, weight_path: remote, server: openai, base_url: "ftp://[::1", model: m}
"""


def _fifo(tmp_path: Path, name: str) -> Path:
    import os
    path = tmp_path / name
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("args, names", [
    (["run", "--builds", "embedded-default", "--tasks", "wifi-on", "--phones", "127.0.0.1:1", "--out", ""],
     ["--out", "name a run directory"]),
    (["run", "--builds", "embedded-default", "--tasks", "", "--phones", "127.0.0.1:1", "--out", "RUN"],
     ["--tasks is empty"]),
    (["run", "--resume", "RUN", "--builds", "x", "--repeats", "5"], ["--builds, --repeats", "--resume"]),
    (["run", "--builds", "embedded-default", "--tasks", "wifi-on", "--phones", "127.0.0.1:1", "--out", "RUN",
      "--wait-for-phone", "-1"], ["--wait-for-phone"]),
    (["run", "--builds", "bad-url", "--host-profile", "t24", "--tasks", "wifi-on", "--phones", "127.0.0.1:1",
      "--out", "RUN"], ["base_url", "ftp://[::1", "not a URL"]),
    (["policy", "serve", "--script", "SCRIPT", "--port", "0", "--api-key", ""], ["--api-key is empty"]),
    (["policy", "serve", "--script", "SCRIPT", "--port", "0", "--log", "LOGDIR"], ["--log", "not a directory"]),
    (["phone", "start", "--faults", "drop_at=nan"], ["--faults", "drop_at=nan"]),
    (["run", "--builds", "embedded-default", "--tasks", "FIFO", "--phones", "127.0.0.1:1", "--out", "RUN"],
     ["fifo.yaml", "not a regular file"]),
    (["run", "--builds", "x", "--host-profile", "FIFO", "--tasks", "wifi-on", "--phones", "127.0.0.1:1",
      "--out", "RUN"], ["fifo.yaml", "not a regular file"]),
], ids=["out-empty", "tasks-empty", "resume-ignored-flags", "wait-negative", "base-url-invalid",
        "api-key-empty", "log-is-a-dir", "faults-nan", "fifo-task", "fifo-host-profile"])
def test_issue24_bad_inputs_are_one_line_errors(tmp_path, args, names):
    (tmp_path / "device_profiles" / "hosts").mkdir(parents=True)
    (tmp_path / "device_profiles" / "hosts" / "t24.yaml").write_text(ISSUE24_HOST)
    (tmp_path / "script.yaml").write_text("- wait: {seconds: 1}\n")
    (tmp_path / "logdir").mkdir()
    fifo = _fifo(tmp_path, "fifo.yaml")
    subst = {"RUN": str(tmp_path / "run"), "SCRIPT": str(tmp_path / "script.yaml"), "LOGDIR": str(tmp_path / "logdir"),
             "FIFO": str(fifo)}
    out = agent_host(*[subst.get(a, a) for a in args], cwd=tmp_path, timeout=60)
    assert_user_error(out, *names)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("body, message", [
    ('max_steps: true', "max_steps: Input should be a valid integer"),
    ('goal: "Turn Wi-Fi on\\0"', "control character U+0000"),
    ('goal: "Turn Wi-Fi on\\x07"', "control character U+0007"),
])
def test_issue24_task_values_validate_refuses(tmp_path, body, message):
    key = body.split(":", 1)[0]
    text = "\n".join(body if line.startswith(f"{key}:") else line for line in WIFI.splitlines()) + "\n"
    assert body in text
    (tmp_path / "wifi-on.yaml").write_text(text)
    out = agent_host("tasks", "validate", str(tmp_path / "wifi-on.yaml"), cwd=tmp_path)
    assert out.returncode != 0 and "Traceback" not in out.stderr + out.stdout
    assert message in out.stdout, out.stdout


def test_issue24_a_large_legal_file_is_not_an_alias_bomb(tmp_path):
    """Before: 60 000 plain tags were refused as "expands to more than 50000 values (YAML aliases)"."""
    text = WIFI.replace("\ntags:", "\ntags_unused:") if "\ntags:" in WIFI else WIFI
    tags = "tags: [" + ", ".join(f"t{i}" for i in range(60_000)) + "]\n"
    (tmp_path / "wifi-on.yaml").write_text(text.rstrip("\n") + "\n" + tags if "\ntags:" not in WIFI
                                           else WIFI.split("\ntags:")[0] + "\n" + tags)
    data, _ = load_yaml(tmp_path / "wifi-on.yaml")
    assert len(data["tags"]) == 60_000


def test_issue24_a_fifo_given_to_validate_is_refused_not_waited_on(tmp_path):
    fifo = _fifo(tmp_path, "fifo.yaml")
    out = agent_host("tasks", "validate", str(fifo), cwd=tmp_path, timeout=30)
    assert out.returncode != 0 and "not a regular file" in out.stdout + out.stderr


def test_issue24_json_into_a_closed_pipe_exits_quietly(tmp_path):
    """Before: `agent-host tasks list --json | head` ended in a BrokenPipeError traceback, exit 0."""
    import subprocess
    import sys
    # far more JSON than a pipe holds (64 KiB), so the writer is still writing when the reader leaves
    text = (ROOT / "tasks" / "screen-timeout.yaml").read_text()
    many = "".join(f'  - {{short: "{i}s", label: "{i} seconds", ms: "{i}000"}}\n' for i in range(1, 3001))
    head, rest = text.split("params:\n", 1)
    (tmp_path / "many.yaml").write_text(head + "params:\n" + many + rest[rest.index("setup:"):])
    proc = subprocess.Popen([sys.executable, "-m", "agent_host", "tasks", "list", "--json", str(tmp_path / "many.yaml")],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.read(10)
    proc.stdout.close()  # the reader leaves, as `head -c 10` does
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 141 and "Traceback" not in err, err


def test_issue24_observe_a_dump_nested_500_deep(tmp_path):
    dump = tmp_path / "deep.xml"
    dump.write_text("<hierarchy>" + '<node bounds="[0,0][10,10]">' * 500 + "</node>" * 500 + "</hierarchy>")
    out = agent_host("observe", str(dump), cwd=tmp_path)
    assert_user_error(out, "nested more than")


def test_issue24_an_unreadable_task_folder(tmp_path, monkeypatch):
    """Before: a PermissionError traceback from config/tasks.py."""
    import pathlib

    from agent_host.config.tasks import task_files
    from agent_host.errors import UserError

    folder = tmp_path / "tasks"
    folder.mkdir()
    real = pathlib.Path.iterdir

    def deny(self):  # chmod 000 does not stop root, which the tests may run as
        if self == folder:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)
    monkeypatch.setattr(pathlib.Path, "iterdir", deny)
    with pytest.raises(UserError, match=r"tasks: cannot list the task folder \(Permission denied\)"):
        task_files([folder])


def test_issue24_serve_on_a_port_another_server_holds(tmp_path):
    """Before: `serve --port P` with another OpenAI server on P reported that server's model ready."""
    import socket
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        out = agent_host("serve", "tiny-random", "--port", str(port), cwd=tmp_path, timeout=60)
    assert_user_error(out, f"--port {port}", "already in use")


def test_run_with_a_bad_taught_split(tmp_path):
    """`run --taught` names a split file: a missing or malformed one is one line, before a run."""
    out = agent_host(*run_args(tmp_path, "--tasks", "wifi-on", "--taught", str(tmp_path / "none.json")), cwd=tmp_path)
    assert_user_error(out, "none.json", "no such split file")
    bad = tmp_path / "split.json"
    bad.write_text('{"rule": "r", "seed": 0, "held_out_task_fraction": 0.2, "instances": {"wifi-on": "learnt"}}')
    out = agent_host(*run_args(tmp_path, "--tasks", "wifi-on", "--taught", str(bad)), cwd=tmp_path)
    assert_user_error(out, "split.json: instances.wifi-on")
    assert not (tmp_path / "run").exists()
