"""`agent-host tasks`: malformed files fail with file, line and field, one line per error."""

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from agent_host.cli import main

from fixtures_cli import GOOD  # noqa: E402  (one task file every CLI test starts from)

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"

# file name -> (content, the error lines expected: (line, field path, message fragment))
BAD = {
    "unknown-step.yaml": (GOOD.format(id="unknown-step").replace("- home", "- reboot: now"),
                          [(8, "setup[1]", "unknown step 'reboot'")]),
    "missing-key.yaml": (GOOD.format(id="missing-key").replace("key: wifi_on, ", ""),
                         [(12, "check.setting.key", "Field required")]),
    "bad-operator.yaml": (GOOD.format(id="bad-operator").replace("equals:", "greater_than:"),
                          [(12, "check.setting", "unknown field or operator 'greater_than'")]),
    "invalid-yaml.yaml": (GOOD.format(id="invalid-yaml").replace("goal: Turn on Wi-Fi.", "goal: [Turn on"),
                          [(4, None, "invalid YAML")]),
    "two-errors.yaml": (GOOD.format(id="two-errors").replace("max_steps: 10", "max_steps: zero")
                        .replace("open_app: {name: settings}", "open_app: {nme: settings}"),
                        [(5, "max_steps", "valid integer"), (14, "solution[0].open_app.name", "Field required"),
                         (14, "solution[0].open_app.nme", "Extra inputs")]),
    "dup-a.yaml": (GOOD.format(id="dup"), []),
    "dup-b.yaml": (GOOD.format(id="dup"), [(2, "id", "duplicate task id 'dup' (also in")]),
}

LINE = re.compile(r"^(?P<file>[^:]+\.yaml)(?::(?P<line>\d+))?: (?P<rest>.*)$")


def write_bad(tmp_path: Path) -> Path:
    d = tmp_path / "tasks"
    d.mkdir()
    for name, (text, _) in BAD.items():
        (d / name).write_text(text)
    return d


def test_validate_lists_every_error_with_file_line_and_field(tmp_path):
    d = write_bad(tmp_path)
    out = subprocess.run([sys.executable, "-m", "agent_host", "tasks", "validate", str(d)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    expected = [(name, *e) for name, (_, errs) in BAD.items() for e in errs]
    assert len(lines) == len(expected), out.stdout
    for name, line, field, fragment in expected:
        hits = [m for m in map(LINE.match, lines) if m and Path(m["file"]).name == name]
        assert hits, f"no error line for {name}:\n{out.stdout}"
        assert any((line is None or m["line"] == str(line))
                   and (field is None or m["rest"].startswith(f"{field}: "))
                   and fragment in m["rest"] for m in hits), (name, line, field, fragment, out.stdout)
    dup = next(x for x in lines if "duplicate task id" in x)
    assert str(d / "dup-a.yaml") in dup and str(d / "dup-b.yaml") in dup
    with_errors = sum(1 for _, errs in BAD.values() if errs)
    assert f"{len(expected)} error(s) in {with_errors} file(s) ({len(BAD)} file(s) checked)" in out.stderr


def test_validate_counts_the_files_that_have_errors(tmp_path, capsys):
    """Issue 14: five errors in one file of two read "5 error(s) in 2 file(s)"."""
    (tmp_path / "good.yaml").write_text(GOOD.format(id="good"))
    (tmp_path / "bad.yaml").write_text(GOOD.format(id="bad").replace("max_steps: 10", "max_steps: zero")
                                       .replace("app: settings", "app: [settings]"))
    assert main(["tasks", "validate", str(tmp_path)]) == 1
    out = capsys.readouterr()
    n = len(out.out.splitlines())
    assert n == 2 and all(line.startswith(str(tmp_path / "bad.yaml")) for line in out.out.splitlines())
    assert out.err.strip() == f"{n} error(s) in 1 file(s) (2 file(s) checked)"


def test_validate_ok_prints_a_count(tmp_path, capsys):
    (tmp_path / "a.yaml").write_text(GOOD.format(id="a"))
    (tmp_path / "b.yaml").write_text(GOOD.format(id="b"))
    assert main(["tasks", "validate", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == "ok: 2 task(s) in 2 file(s), 4 instance(s) with variants"
    assert main(["tasks", "validate", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")]) == 0


def test_validate_default_is_the_shipped_tasks(capsys):
    assert main(["tasks", "validate"]) == 0
    assert re.match(r"ok: \d+ task\(s\) in \d+ file\(s\)", capsys.readouterr().out)


def test_validate_missing_path_is_a_user_error(tmp_path, capsys):
    assert main(["tasks", "validate", str(tmp_path / "nope.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_list_json_and_table(capsys):
    assert main(["tasks", "list", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["wifi-on"]["variants"] == ["base", "verify"]
    assert rows["wifi-on"]["app"] == "settings" and rows["wifi-on"]["max_steps"] >= 5
    assert rows["fm-radio-on"]["infeasible"] is True and rows["fm-radio-on"]["variants"] == ["base"]
    assert "connectivity" in rows["wifi-on"]["tags"]
    assert main(["tasks", "list"]) == 0
    table = capsys.readouterr().out
    assert "alarm-set[1]" in table and "base,verify" in table


def test_schema_prints_json(capsys):
    assert main(["tasks", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$defs"]["Task"]["additionalProperties"] is False


def test_check_solutions_cli_on_the_virtual_phone(virtual_phone, tmp_path, capsys):
    """The verb as a user types it: task ids, --phone and --out reach the real check (before:
    a fake tasks_check module stood in, and the verb could neither pick tasks nor an out dir)."""
    out = tmp_path / "episodes"
    assert main(["tasks", "check-solutions", "wifi-on", "--phone", virtual_phone.serial, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "all solutions succeed" in text and "2 episodes" in text and virtual_phone.serial in text
    assert sorted(p.name for p in out.iterdir()) == ["wifi-on", "wifi-on_verify"]
    assert (out / "wifi-on" / "episode.json").is_file()


def test_check_solutions_names_each_failure_in_its_closing_line(virtual_phone, tmp_path, capsys):
    """CI keeps only the tail of a failing test's output: the closing line must say which
    instance failed and how (before: '1 of 2 failed', with the failing row far above)."""
    text = (TASKS_DIR / "wifi-on.yaml").read_text(encoding="utf-8")
    broken = tmp_path / "wifi-on-broken.yaml"
    broken.write_text(text.replace("id: wifi-on", "id: wifi-on-broken")
                      .replace('  - tap: {text: "Wi-Fi"}\n', ""), encoding="utf-8")
    code = main(["tasks", "check-solutions", str(broken), "--phone", virtual_phone.serial,
                 "--out", str(tmp_path / "episodes")])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert code == 1
    assert "1 of 2 failed: wifi-on-broken (premature:" in last, last
