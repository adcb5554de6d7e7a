"""Task instances: params, verify variants, infeasible tasks, lookup by id and key."""

import hashlib
import textwrap
from pathlib import Path

import pytest

from agent_host.config.steps import HomeStep, SettingStep, ShellStep, WaitStep
from agent_host.config.tasks import collect, expand, load_task_file, load_tasks
from agent_host.errors import ConfigError, UserError
from agent_host.config.scope import Scope
from agent_host.judge.checks import Judge

HEADER = "# yaml-language-server: $schema=./task.schema.json\n"

PARAMS_TASK = HEADER + textwrap.dedent("""\
    id: timer
    goal: Set the screen timeout to {label}.
    app: settings
    max_steps: 8
    params:
      - {label: 2 minutes, ms: 120000}
      - {label: 5 minutes, ms: 300000}
    setup:
      - setting: {namespace: system, key: screen_off_timeout, value: "30000"}
      - home
    goal_setup:
      - setting: {namespace: system, key: screen_off_timeout, value: "{ms}"}
    check:
      setting: {namespace: system, key: screen_off_timeout, matches: '{ms}|\\d{9}'}
    teardown:
      - wait: 0.5
    solution:
      - tap: {text: "{label}"}
      - task_complete: {reason: "{label} it is"}
    """)


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_params_give_one_instance_each_with_substitution(tmp_path):
    path = write(tmp_path, "timer.yaml", PARAMS_TASK)
    [task] = load_task_file(path)
    inst = expand(task, source=path, sha256="abc")
    assert [(i.id, i.key, i.variant) for i in inst] == [
        ("timer[0]", "timer[0]", "base"), ("timer[0]", "timer[0]@verify", "verify"),
        ("timer[1]", "timer[1]", "base"), ("timer[1]", "timer[1]@verify", "verify")]
    base0, verify0, base1, _ = inst
    assert base0.goal == "Set the screen timeout to 2 minutes."
    assert base1.goal == "Set the screen timeout to 5 minutes."
    assert base0.params == {"label": "2 minutes", "ms": 120000}
    # {ms} is replaced; the regex quantifier \d{9} is left alone
    assert base1.check.setting.matches == r"300000|\d{9}"
    assert base0.solution == [{"tap": {"text": "2 minutes"}}, {"task_complete": {"reason": "2 minutes it is"}}]
    # verify = setup + goal_setup, with the parameter substituted
    assert [type(s) for s in base0.setup] == [SettingStep, HomeStep]
    assert [type(s) for s in verify0.setup] == [SettingStep, HomeStep, SettingStep]
    assert verify0.setup[-1].setting.value == "120000"
    assert verify0.teardown == base0.teardown and isinstance(base0.teardown[0], WaitStep)
    assert all(i.task_id == "timer" and i.sha256 == "abc" and i.source == path for i in inst)


def test_instance_id_template_and_variant_filter(tmp_path):
    text = PARAMS_TASK.replace("id: timer\n", "id: timer\ninstance_id: timeout-{ms}\n")
    path = write(tmp_path, "timer.yaml", text)
    [task] = load_task_file(path)
    assert [i.key for i in expand(task, ("verify",))] == ["timeout-120000@verify", "timeout-300000@verify"]
    assert [i.key for i in expand(task, ("base",))] == ["timeout-120000", "timeout-300000"]
    with pytest.raises(UserError, match="unknown variant"):
        expand(task, ("bogus",))


def test_infeasible_and_opted_out_tasks_have_no_verify_variant():
    by_key = {t.key: t for t in load_tasks([], variants=("base", "verify"))}
    assert "screen-timeout-3min" in by_key and "screen-timeout-3min@verify" not in by_key
    fm = by_key["fm-radio-on"]
    assert fm.infeasible and fm.check is None
    assert Judge(fm.model_copy(update={"scope": Scope()})).evaluate(None).goal is False   # no phone needed
    assert fm.solution[-1] == {"task_infeasible": {"reason": "This phone has no FM radio setting"}}
    assert "contact-add" in by_key and "contact-add@verify" not in by_key
    assert "wifi-on@verify" in by_key


def test_shipped_instances_source_and_hash():
    tasks = load_tasks(["wifi-on"], variants=("base", "verify"))
    assert [t.key for t in tasks] == ["wifi-on", "wifi-on@verify"]
    src = tasks[0].source
    assert src.name == "wifi-on.yaml"
    assert tasks[0].sha256 == hashlib.sha256(src.read_bytes()).hexdigest()
    assert tasks[0].app == "settings" and tasks[0].variant == "base"
    assert [type(s) for s in tasks[1].setup[-2:]] == [ShellStep, WaitStep]   # goal_setup appended


def test_lookup_by_id_key_and_instance_id():
    assert [t.key for t in load_tasks(["dnd-on@verify"])] == ["dnd-on@verify"]
    assert [t.key for t in load_tasks(["alarm-set"], variants=("base",))] == ["alarm-set[0]", "alarm-set[1]", "alarm-set[2]"]
    assert [t.key for t in load_tasks(["alarm-set[1]"])] == ["alarm-set[1]", "alarm-set[1]@verify"]
    assert [t.key for t in load_tasks(["alarm-set[1]"], variants=("verify",))] == ["alarm-set[1]@verify"]
    assert [t.key for t in load_tasks(["screen-timeout-2min", "wifi-on", "wifi-on"], ("base",))] == [
        "screen-timeout-2min", "wifi-on"]
    with pytest.raises(UserError, match="'no-such-task'"):
        load_tasks(["wifi-on", "no-such-task"])


def test_files_and_directories_as_specs(tmp_path):
    write(tmp_path, "timer.yaml", PARAMS_TASK)
    write(tmp_path, "notes.txt", "not a task")
    assert len(load_tasks([str(tmp_path)], variants=("base",))) == 2
    assert len(load_tasks([str(tmp_path / "timer.yaml")])) == 4
    # the same file named twice, once through its directory: loaded once, no duplicate-id error
    assert len(load_tasks([str(tmp_path), str(tmp_path / ".." / tmp_path.name / "timer.yaml")])) == 4
    with pytest.raises(UserError, match="no such file"):
        load_tasks([str(tmp_path / "missing.yaml")])


def test_a_file_may_hold_a_list_of_tasks(tmp_path):
    one = PARAMS_TASK.removeprefix(HEADER)
    two = one.replace("id: timer", "id: timer-b")
    text = HEADER + "- " + one.replace("\n", "\n  ").rstrip() + "\n- " + two.replace("\n", "\n  ").rstrip() + "\n"
    tasks = load_task_file(write(tmp_path, "many.yaml", text))
    assert [t.id for t in tasks] == ["timer", "timer-b"]


def test_duplicate_ids_across_files_name_both_files(tmp_path):
    a = write(tmp_path, "a.yaml", PARAMS_TASK)
    b = write(tmp_path, "b.yaml", PARAMS_TASK)
    report = collect([tmp_path])
    assert len(report.errors) == 1
    assert str(b) in report.errors[0] and str(a) in report.errors[0] and "'timer'" in report.errors[0]
    with pytest.raises(ConfigError, match="duplicate task id"):
        load_tasks([str(tmp_path)])


def test_load_errors_list_every_problem_with_line_and_field(tmp_path):
    text = PARAMS_TASK.replace("max_steps: 8", "max_steps: 1").replace("{label}.", "{labl}.")
    text = text.replace("- home", "- homer")
    path = write(tmp_path, "t.yaml", text)
    with pytest.raises(ConfigError) as exc:
        load_task_file(path)
    assert str(exc.value).splitlines() == [f"{path}:11: setup[1]: unknown step 'homer' (expected one of: shell, "
                                           "setting, launch, home, force_stop, wait)"]
    path.write_text(text.replace("- homer", "- home"))
    with pytest.raises(ConfigError) as exc:
        load_task_file(path)
    assert str(exc.value).splitlines() == [
        f"{path}:3: goal: {{labl}} is not a parameter (label, ms)",
        f"{path}:5: max_steps: 1 is fewer than the solution's 2 steps",
    ]


def test_solution_items_are_checked(tmp_path):
    text = PARAMS_TASK.replace('  - tap: {text: "{label}"}\n',
                               '  - swipe: {direction: up, text: a, desc: b}\n  - tap: {text: a, desc: b}\n'
                               '  - type_text: {text: "x"}\n  - say: hello\n')
    path = write(tmp_path, "t.yaml", text)
    with pytest.raises(ConfigError) as exc:
        load_task_file(path)
    lines = [line.split(": ", 1)[1] for line in str(exc.value).splitlines()]
    assert lines == [
        "solution[0].swipe: give at most one of index, text, text_contains, resource_id, desc",
        "solution[1].tap: give exactly one of index, text, text_contains, resource_id, desc",
        "solution[2].type_text: give exactly one of index, text_contains, resource_id, desc",
        "solution[3]: unknown action 'say' (expected one of: tap, long_press, type_text, swipe, tap_xy, "
        "long_press_xy, swipe_xy, press_back, press_home, open_app, wait, answer, task_complete, task_infeasible)",
    ]


def test_unknown_app_aliases_are_reported(tmp_path):
    text = PARAMS_TASK.replace("app: settings", "app: setings").replace("  - home\n", "  - home\n  - launch: clok\n")
    text = text.replace("solution:\n", "solution:\n  - open_app: {name: com.example.app}\n")
    path = write(tmp_path, "t.yaml", text)
    with pytest.raises(ConfigError) as exc:
        load_task_file(path)
    lines = str(exc.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{path}:4: app: unknown app alias 'setings' (known: ")
    assert lines[1].startswith(f"{path}:12: setup[2].launch: unknown app alias 'clok'")


def test_a_parameter_that_breaks_a_value_is_reported_at_its_set(tmp_path):
    text = PARAMS_TASK.replace("{label: 5 minutes, ms: 300000}", "{label: 5 minutes, ms: '(300000'}")
    path = write(tmp_path, "t.yaml", text)
    with pytest.raises(ConfigError) as exc:
        load_task_file(path)
    [line] = str(exc.value).splitlines()
    assert line.startswith(f"{path}:8: params[1]: makes check.setting.matches invalid: invalid regular expression")
