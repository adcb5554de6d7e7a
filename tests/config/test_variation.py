"""Seeded variations of an episode's phone (config/variation.py, config/phone_variation.py):
drawn from the seed alone, never the task's own subject, virtual-only kinds only on the
virtual phone, and a task's `vary: skip` honoured."""

from __future__ import annotations

import re

import pytest

from agent_host.config.phone_variation import Variation, apply, choose, setup_commands, teardown_commands
from agent_host.config.tasks import expand, load_task_file, load_tasks, with_values
from agent_host.config.variation import KINDS, LEVELS, VIRTUAL_ONLY, parse_vary
from agent_host.errors import ConfigError


@pytest.fixture(scope="module")
def suite():
    return load_tasks()


def test_vary_specs_parse_and_bad_ones_say_why():
    assert parse_vary("none") == ()
    assert parse_vary("full") == KINDS
    assert set(parse_vary("light")) < set(KINDS)
    assert parse_vary("dark+font_scale") == ("font_scale", "dark")      # in KINDS order
    for bad in ("loud", "dark+loud", "", "dark+"):
        with pytest.raises(ValueError, match="--vary"):
            parse_vary(bad)


def test_the_same_seed_chooses_the_same_phone_and_another_seed_another(suite):
    for task in suite:
        a, b = choose(task, "full", 11, simulated=True), choose(task, "full", 11, simulated=True)
        assert a == b and setup_commands(a, task) == setup_commands(b, task)
        c = choose(task, "full", 12, simulated=True)
        assert a.kinds == c.kinds
        assert setup_commands(a, task) != setup_commands(c, task), task.key


def test_a_kind_keeps_its_choice_whichever_others_are_on(suite):
    task = suite[0]
    alone = choose(task, "font_scale", 5, simulated=True)
    with_others = choose(task, "font_scale+dark+launcher", 5, simulated=False)
    # a condition's seed is its own (by its spec); within one, the phone kind changes nothing else
    light = choose(task, "light", 5, simulated=True)
    light_real = choose(task, "light", 5, simulated=False)
    assert light.font_scale == light_real.font_scale and light.density == light_real.density
    assert alone.kinds == ("font_scale",) and "launcher" not in with_others.kinds


def test_no_kind_varies_what_its_task_is_about(suite):
    dark_tasks = [t for t in suite if "uimode" in str(t.setup) + str(t.check)]
    assert dark_tasks, "the suite has dark-theme tasks"
    for t in dark_tasks:
        v = choose(t, "full", 3, simulated=True)
        assert "dark" not in v.kinds and v.dark is None
        assert not any("uimode" in c for c in setup_commands(v, t))


def test_virtual_only_kinds_stay_off_a_real_phone(suite):
    for t in suite[:40]:
        v = choose(t, "full", 1, simulated=False)
        assert not set(v.kinds) & VIRTUAL_ONLY
        assert not any(c.startswith("cmd vphone") for c in setup_commands(v, t) + teardown_commands(v))


def test_distractors_only_in_the_kinds_of_state_a_task_touches(suite):
    seen = set()
    for t in suite:
        v = choose(t, "full", 2, simulated=True)
        assert set(v.distractors) <= set(t.scope.kinds)
        seen |= set(v.distractors)
        if not v.distractors:
            assert "distractors" not in v.kinds
    assert seen == {"contacts", "sms", "calls", "calendar", "files"}


def _dates(cmds: list[str]) -> list[int]:
    return [int(d) for d in re.findall(r"date:l:(\d+)", " ".join(cmds))]


def test_distractor_texts_and_calls_go_among_a_tasks_rows_unless_it_asks_about_recency_or_an_answer(suite):
    by_key = {t.key: t for t in suite}
    old = 1740000000000           # 2025-02: every distractor before it is older than any task's own row
    # acts on rows: the distractors land among its own texts, so the rows it acts on move
    mark = by_key["sms-mark-read[0]"]
    own = _dates([s.shell for s in mark.setup if getattr(s, "shell", None)])
    for seed in range(5):
        ds = _dates(setup_commands(choose(mark, "distractors", seed, simulated=True), mark))
        assert ds and min(own) - 1_800_000 <= min(ds) and max(ds) <= max(own) + 1_800_000
        # one is newer than every row of the task: they all move down (a uniform draw left them
        # all below the target on some seeds, and a replayed index still hit it)
        assert max(ds) > max(own), seed
    # answers a question, or asks for the latest or last: older than anything it could ask about
    for key in ("sms-unread-count[0]", "sms-bank-code[0]", "sms-missed-caller[0]", "calllog-last-caller[0]"):
        t = by_key[key]
        ds = _dates(setup_commands(choose(t, "distractors", 3, simulated=True), t))
        assert ds and max(ds) < old, key


def test_suggestion_cards_are_a_light_virtual_only_kind(suite):
    t = suite[0]
    v = choose(t, "light", 5, simulated=True)
    assert "suggestions" in LEVELS["light"] and "suggestions" in VIRTUAL_ONLY
    n, seed = v.suggestions
    assert 1 <= n <= 3 and f"cmd vphone suggestions {n} {seed}" in setup_commands(v, t)
    assert "cmd vphone reset" in teardown_commands(v)
    assert choose(t, "light", 5, simulated=False).suggestions is None


def test_apply_adds_after_setup_and_undoes_before_teardown(suite):
    t = next(t for t in suite if t.teardown)
    v = choose(t, "light", 4, simulated=True)
    varied = apply(t, v)
    assert varied.setup[:len(t.setup)] == t.setup and len(varied.setup) > len(t.setup)
    assert varied.teardown[-len(t.teardown):] == t.teardown
    assert [s.shell for s in varied.teardown[:-len(t.teardown)]] == teardown_commands(v)
    assert apply(t, choose(t, "none", 4, simulated=True)) is t


def test_none_varies_nothing(suite):
    v = choose(suite[0], "none", 9, simulated=True)
    assert v == Variation(spec="none", seed=v.seed, kinds=())
    assert setup_commands(v, suite[0]) == [] and teardown_commands(v) == []


def test_a_task_can_skip_kinds_and_must_say_why(tmp_path):
    path = tmp_path / "t.yaml"
    body = ("id: skipper\ngoal: do it\napp: settings\nmax_steps: 3\nverify: false\n"
            "setup: [{shell: settings put system screen_off_timeout 30000}]\n"
            "check: {setting: {namespace: system, key: screen_off_timeout, equals: '60000'}}\n")
    path.write_text(body + "vary: {skip: [font_scale, launcher], why: the check reads pixel sizes}\n")
    [task] = load_task_file(path)
    inst = expand(task, ("base",), source=path)[0]
    v = choose(inst, "full", 1, simulated=True)
    assert "font_scale" not in v.kinds and "launcher" not in v.kinds and "dark" in v.kinds
    path.write_text(body + "vary: {skip: [font_scale]}\n")
    with pytest.raises(ConfigError, match="why"):
        load_task_file(path)
    path.write_text(body + "vary: {skip: [wallpaper], why: x}\n")
    with pytest.raises(ConfigError, match="skip"):
        load_task_file(path)


VALUED = ("id: valued\ngoal: What is the code? Answer with it.\napp: messages\nmax_steps: 4\nverify: false\n"
          "instance_id: valued\nparams: [{code: '111111'}]\n"
          "setup: [{shell: 'echo {code} > /sdcard/Download/code.txt'}]\n"
          "check: {answer: {expected: '{code}'}}\n"
          "solution: [{answer: {text: '{code}'}}, {task_complete: {reason: 'the code is {code}'}}]\n")


def test_values_overlays_replay_the_instance_with_other_data(tmp_path):
    path = tmp_path / "valued.yaml"
    path.write_text(VALUED + "vary: {values: [{code: '222222'}, {code: '333333'}]}\n")
    [task] = load_task_file(path)
    inst = expand(task, ("base",), source=path, sha256="x")[0]
    assert inst.id == "valued" and len(inst.vary_values) == 2
    picked = set()
    for seed in range(12):
        v = choose(inst, "full", seed, simulated=True)
        assert v.values in (1, 2) and "values" in v.kinds
        played = apply(inst, v)
        code = ("222222", "333333")[v.values - 1]
        assert played.id == inst.id and played.key == inst.key
        assert played.check.answer.expected == code and played.solution[0] == {"answer": {"text": code}}
        assert played.setup[0].shell == f"echo {code} > /sdcard/Download/code.txt"
        picked.add(v.values)
    assert picked == {1, 2}                                   # never the unvaried data, both overlays
    assert choose(inst, "light", 1, simulated=True).values is None      # a light phone keeps the task's data
    assert with_values(inst, 0) is inst
    # an overlay number past the task's (a header kept by a run of an older task file) wraps round
    assert with_values(inst, 3).check.answer.expected == "222222"


def test_values_overlays_are_checked_when_the_file_loads(tmp_path):
    path = tmp_path / "valued.yaml"
    for vary, says in (("{values: [{cod: '2'}]}", "'cod' is not a parameter"),
                       ("{values: [{code: '111111'}]}", "changes neither the setup nor the check"),
                       ("{skip: [dark]}", "why"), ("{}", "give skip (with why), values, feasible, distractors or full")):
        path.write_text(VALUED + f"vary: {vary}\n")
        with pytest.raises(ConfigError, match=re.escape(says)):
            load_task_file(path)
    path.write_text(VALUED.replace("instance_id: valued\nparams: [{code: '111111'}]\n", "")
                    .replace("{code}", "111111") + "vary: {values: [{code: '2'}]}\n")
    with pytest.raises(ConfigError, match="give the task params"):
        load_task_file(path)


def test_levels_name_only_kinds():
    assert set(LEVELS["full"]) == set(KINDS)
    assert not set(LEVELS["light"]) & {"interruption", "values"}


UNOFFERED = ("id: unoffered\ngoal: Set the timeout to {label}.\napp: settings\nmax_steps: 6\ninfeasible: true\n"
             "instance_id: unoffered-{short}\nparams: [{short: 3min, label: 3 minutes}]\n"
             "setup: [{setting: {namespace: system, key: screen_off_timeout, value: '30000'}}]\n"
             "solution: [{task_infeasible: {reason: 'no {label} option'}}]\n")
FEASIBLE = ("    - params: {label: 5 minutes}\n"
            "      change: {settings: {changed: 1}}\n"
            "      check: {setting: {namespace: system, key: screen_off_timeout, equals: '300000'}}\n"
            "      solution: [{tap: {text: '{label}'}}, {task_complete: {reason: 'it is {label}'}}]\n")


def test_an_infeasible_task_is_feasible_on_its_feasible_phones_and_infeasible_on_the_others(tmp_path):
    """Blind replay passed every varied episode of an infeasible task by giving up at once: its
    infeasibility did not depend on the phone."""
    path = tmp_path / "unoffered.yaml"
    path.write_text(UNOFFERED + "vary:\n  feasible:\n" + FEASIBLE
                    + FEASIBLE.replace("5 minutes", "30 minutes").replace("300000", "1800000"))
    [task] = load_task_file(path)
    inst = expand(task, ("base",), source=path, sha256="x")[0]
    assert inst.infeasible and inst.vary_feasible == 2
    played: dict[int, object] = {}
    for seed in range(30):
        v = choose(inst, "full", seed, simulated=True)
        assert "values" in v.kinds and v.values in (0, 1, 2)
        played[v.values] = apply(inst, v)
    assert set(played) == {0, 1, 2}                 # the infeasible phone stays among the draws
    assert played[0].infeasible and played[0].check is None and played[0].goal == "Set the timeout to 3 minutes."
    for k, label, ms in ((1, "5 minutes", "300000"), (2, "30 minutes", "1800000")):
        p = played[k]
        assert not p.infeasible and p.id == inst.id and p.key == inst.key
        assert p.goal == f"Set the timeout to {label}." and p.check.setting.equals == ms
        assert p.change.settings.changed == 1 and p.solution[-1] == {"task_complete": {"reason": f"it is {label}"}}
    assert choose(inst, "light", 1, simulated=True).values is None


def test_feasible_phones_are_checked_when_the_file_loads(tmp_path):
    path = tmp_path / "unoffered.yaml"
    for text, says in (
            (UNOFFERED + "vary:\n  feasible:\n" + FEASIBLE.replace("{label: 5 minutes}", "{labl: x}"),
             "vary.feasible[0].params: 'labl' is not a parameter"),
            (UNOFFERED + "vary:\n  feasible:\n" + FEASIBLE.replace("task_complete: {reason: 'it is {label}'}",
                                                                   "task_infeasible: {reason: x}"),
             "a solution ends with task_complete"),
            (UNOFFERED.replace("infeasible: true\n", "check: {setting: {namespace: system, key: k, equals: '1'}}\n"
                               "verify: false\n").replace("task_infeasible: {reason: 'no {label} option'}",
                                                          "task_complete: {reason: x}")
             + "vary:\n  feasible:\n" + FEASIBLE, "only an infeasible task has phones on which it is feasible")):
        path.write_text(text)
        with pytest.raises(ConfigError, match=re.escape(says)) as err:
            load_task_file(path)
        assert str(err.value).startswith(f"{path}:") and "\n" not in str(err.value).strip()


def test_a_task_says_where_its_distractors_go_where_the_derivation_is_too_coarse(suite, tmp_path):
    """'the latest text from Alan' has a recency word, so its distractors went older than all its
    rows, where a replayed index still hit Alan's thread; its file now puts them among them."""
    reply = {t.key: t for t in suite}["sms-reply[1]"]
    assert reply.vary_distractors == "among" and "latest" in reply.goal
    own = _dates([s.shell for s in reply.setup if getattr(s, "shell", None)])
    ds = _dates(setup_commands(choose(reply, "distractors", 0, simulated=True), reply))
    assert ds and max(ds) > max(own)
    path = tmp_path / "valued.yaml"
    path.write_text(VALUED + "vary: {distractors: among}\n")
    with pytest.raises(ConfigError, match="why: say why its distractors go where they do"):
        load_task_file(path)


def test_leaving_a_task_out_of_full_needs_a_reason(tmp_path):
    path = tmp_path / "valued.yaml"
    path.write_text(VALUED + "vary: {full: false}\n")
    with pytest.raises(ConfigError, match="why: say why no variation can make the task differ"):
        load_task_file(path)
    path.write_text(VALUED + "vary: {full: false, why: its answer is the phone's own}\n")
    [task] = load_task_file(path)
    assert not expand(task, ("base",), source=path, sha256="x")[0].vary_full
