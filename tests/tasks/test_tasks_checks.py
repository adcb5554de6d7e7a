"""Check semantics (config/checks.py data, judge/checks.py evaluators) on hand-made outputs
and screens, no phone."""

import pytest
from pydantic import TypeAdapter

from agent_host.config.checks import CHECK_KINDS, Check
from agent_host.judge.checks import (COMMANDS, EVALUATORS, FOREGROUND_COMMAND, Facts, evaluate, shell_commands,
                                     ui_checks)
from agent_host.phone.screen import Element, Screen

CHECK = TypeAdapter(Check)


def check(data):
    return CHECK.validate_python(data)


def ev(c, outputs=None, screen=None, apps=None, answer=None):
    return evaluate(c, Facts(outputs=outputs or {}, screen=screen, apps=apps, answer=answer))


def el(index=0, cls="TextView", texts=(), descs=(), resource_id="", **flags):
    return Element(index=index, cls=cls, text=texts[0] if texts else "", desc=descs[0] if descs else "",
                   rid=resource_id.rsplit("/", 1)[-1], resource_id=resource_id, bounds=(0, 0, 10, 10),
                   center=(5, 5), package=flags.pop("package", "com.android.settings"), texts=list(texts),
                   descs=list(descs), resource_ids=[resource_id] if resource_id else [], **flags)


def screen(*elements):
    return Screen(elements=list(elements), package="com.android.settings", width=1080, height=2400)


WIFI = "settings get global wifi_on"


def test_every_check_kind_has_an_evaluator_and_its_commands():
    assert set(EVALUATORS) == set(CHECK_KINDS) == set(COMMANDS)


@pytest.mark.parametrize("op, out, code, want", [
    ({"equals": "1"}, "1\n", 0, True),
    ({"equals": "1"}, "  1  \r\n", 0, True),     # whitespace and CRLF around the value
    ({"equals": "1"}, "0\n", 0, False),
    ({"equals": "1"}, "11\n", 0, False),
    ({"equals": "1"}, "1\n", 1, False),           # the command failed
    ({"equals": "1"}, "", 127, False),            # not found
    ({"in": ["1", "2"]}, "2\n", 0, True),
    ({"in": ["1", "2"]}, "3\n", 0, False),
    ({"matches": "[12]"}, "2\n", 0, True),
    ({"matches": "[12]"}, "12\n", 0, False),      # matches the whole value
    ({"equals": "null"}, "null\n", 0, True),      # an unset key reads "null"
])
def test_setting_operators(op, out, code, want):
    c = check({"setting": {"namespace": "global", "key": "wifi_on", **op}})
    assert shell_commands(c) == [WIFI]
    assert ev(c, {WIFI: (out, code)}) is want


def test_numbers_in_yaml_are_compared_as_text():
    c = check({"setting": {"namespace": "global", "key": "wifi_on", "equals": 1}})
    assert ev(c, {WIFI: ("1\n", 0)}) is True
    c = check({"setting": {"namespace": "system", "key": "screen_off_timeout", "in": [60000, "120000"]}})
    assert ev(c, {"settings get system screen_off_timeout": ("60000", 0)}) is True


def test_shell_check_searches_output_and_needs_exit_zero():
    cmd = "content query --uri content://com.android.contacts/data/phones --projection display_name:number"
    c = check({"shell": {"command": cmd, "matches": r"^Row: \d+ display_name=Ada Lovelace, number=555-?0142$"}})
    assert shell_commands(c) == [cmd]
    two_rows = "Row: 0 display_name=Bob, number=1\nRow: 1 display_name=Ada Lovelace, number=5550142\n"
    assert ev(c, {cmd: (two_rows, 0)}) is True          # multi-line search
    assert ev(c, {cmd: ("No result found.\n", 0)}) is False
    assert ev(c, {cmd: (two_rows, 127)}) is False         # exit 127: command not found
    bare = check({"shell": {"command": "pidof com.android.settings"}})
    assert ev(bare, {"pidof com.android.settings": ("", 0)}) is True
    assert ev(bare, {"pidof com.android.settings": ("", 1)}) is False


def test_composites_and_deduplicated_commands():
    on = {"setting": {"namespace": "global", "key": "wifi_on", "equals": "1"}}
    air = {"setting": {"namespace": "global", "key": "airplane_mode_on", "equals": "1"}}
    air_cmd = "settings get global airplane_mode_on"
    c = check({"all": [on, {"not": air}, {"any": [on, air]}]})
    assert shell_commands(c) == [WIFI, air_cmd]
    assert ev(c, {WIFI: ("1", 0), air_cmd: ("0", 0)}) is True
    assert ev(c, {WIFI: ("1", 0), air_cmd: ("1", 0)}) is False     # not fails
    assert ev(c, {WIFI: ("0", 0), air_cmd: ("0", 0)}) is False     # all fails
    any_ = check({"any": [on, air]})
    assert ev(any_, {WIFI: ("0", 0), air_cmd: ("1", 0)}) is True
    assert ev(any_, {WIFI: ("0", 0), air_cmd: ("0", 0)}) is False
    assert ev(any_, {WIFI: ("1", 127), air_cmd: ("1", 127)}) is False
    # `not` of a failed command is true: the state is not known to hold
    assert ev(check({"not": on}), {WIFI: ("", 127)}) is True


def test_missing_output_is_a_caller_bug():
    c = check({"setting": {"namespace": "global", "key": "wifi_on", "equals": "1"}})
    with pytest.raises(KeyError, match="settings get global wifi_on"):
        ev(c, {})


def test_ui_checks_match_the_screen():
    c = check({"all": [{"ui": {"text": "Wi-Fi", "checked": True}},
                       {"not": {"ui": {"text_contains": "Error"}}}]})
    assert shell_commands(c) == []
    assert [u.ui.text or u.ui.text_contains for u in ui_checks(c)] == ["Wi-Fi", "Error"]
    on = el(cls="Switch", texts=["Wi-Fi"], resource_id="android:id/title", checkable=True, checked=True)
    assert ev(c, screen=screen(on)) is True
    on.checked = False
    assert ev(c, screen=screen(on)) is False
    assert ev(c, screen=screen(el(cls="Switch", texts=["Wi-Fi"], checkable=True, checked=True),
                               el(1, texts=["Error: no network"]))) is False
    with pytest.raises(ValueError):
        ev(c)   # a ui check needs the screen


def test_ui_selector_matching():
    def hit(sel, e):
        return ev(check({"ui": sel}), screen=screen(e))

    sw = dict(cls="Switch", resource_id="android:id/switch_widget", checkable=True)
    assert hit({"resource_id": "switch_widget", "class_name": "Switch", "checked": False}, el(**sw))
    assert hit({"resource_id": "switch_widget", "class_name": "android.widget.Switch"}, el(**sw))
    assert not hit({"resource_id": "switch_widget", "checked": False}, el(**sw, checked=True))
    assert not hit({"resource_id": "switch_widget"}, el(cls="Switch", resource_id="android:id/title"))
    assert hit({"resource_id": "android:id/switch_widget"}, el(**sw))
    assert not hit({"resource_id": "com.other:id/switch_widget"}, el(**sw))
    assert hit({"desc_contains": "Add", "enabled": True}, el(descs=["Add alarm"]))
    assert not hit({"desc_contains": "Add", "enabled": True}, el(descs=["Add alarm"], enabled=False))
    assert hit({"package": "com.android.systemui"}, el(package="com.android.systemui"))
    assert not hit({"package": "com.android.systemui"}, el())


def test_foreground_check_resolves_aliases():
    out = "  topResumedActivity=ActivityRecord{a1b2c3 u0 com.google.android.deskclock/com.android.deskclock.DeskClock t42}\n"
    by_alias = check({"foreground": {"app": "clock"}})
    assert shell_commands(by_alias) == [FOREGROUND_COMMAND]
    assert ev(by_alias, {FOREGROUND_COMMAND: (out, 0)}) is True
    assert ev(by_alias, {FOREGROUND_COMMAND: (out, 0)}, apps={"clock": "com.sec.android.app.clockpackage"}) is False
    by_pkg = check({"foreground": {"package": "com.android.settings"}})
    assert ev(by_pkg, {FOREGROUND_COMMAND: (out, 0)}) is False
    assert ev(by_pkg, {FOREGROUND_COMMAND: ("", 1)}) is False
    # a package that only prefixes the foreground one does not match
    assert ev(check({"foreground": {"package": "com.google.android.desk"}}), {FOREGROUND_COMMAND: (out, 0)}) is False


@pytest.mark.parametrize("given, want", [
    ("4821", True), (" 4,821. ", True), ("The code is 4821", False), ("4822", False), (None, False), ("", False),
])
def test_answer_check_with_an_expected_value(given, want):
    c = check({"answer": {"expected": 4821}})
    assert shell_commands(c) == []
    assert ev(c, answer=given) is want


def test_answer_check_compares_case_spaces_and_punctuation_away():
    c = check({"answer": {"expected": "Ada Lovelace"}})
    assert ev(c, answer="ada lovelace") and ev(c, answer="Ada  Lovelace.") and ev(c, answer="Ada\u00a0Lovelace")
    assert not ev(c, answer="Ada Byron")


def test_answer_check_reads_the_expected_value_from_phone_state():
    cmd = "content query --uri content://sms/inbox --projection body"
    c = check({"answer": {"shell": cmd, "pattern": r"code (\d+)"}})
    assert shell_commands(c) == [cmd]
    out = "Row: 0 body=Your code 4821 expires\nRow: 1 body=code 1111\n"
    assert ev(c, {cmd: (out, 0)}, answer="4821") is True       # the first match
    assert ev(c, {cmd: (out, 0)}, answer="1111") is False
    assert ev(c, {cmd: ("No result found.\n", 0)}, answer="4821") is False
    assert ev(c, {cmd: (out, 1)}, answer="4821") is False
    whole = check({"answer": {"shell": "getprop ro.product.model"}})
    assert ev(whole, {"getprop ro.product.model": ("Pixel 8\n", 0)}, answer="pixel 8") is True


@pytest.mark.parametrize("spec", [{}, {"expected": "1", "shell": "x"}, {"expected": "1", "pattern": "(x)"},
                                  {"shell": "x", "pattern": "("}])
def test_answer_check_specs_are_validated(spec):
    with pytest.raises(ValueError):
        check({"answer": spec})
