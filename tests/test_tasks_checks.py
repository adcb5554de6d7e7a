"""Check semantics: shell_commands() and evaluate() on hand-made outputs, no phone."""

import pytest
from pydantic import TypeAdapter

from agent_host.config.tasks import FOREGROUND_COMMAND, Check, UiCheck

CHECK = TypeAdapter(Check)


def check(data):
    return CHECK.validate_python(data)


WIFI = "settings get global wifi_on"


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
    assert c.shell_commands() == [WIFI]
    assert c.evaluate({WIFI: (out, code)}) is want


def test_numbers_in_yaml_are_compared_as_text():
    c = check({"setting": {"namespace": "global", "key": "wifi_on", "equals": 1}})
    assert c.evaluate({WIFI: ("1\n", 0)}) is True
    c = check({"setting": {"namespace": "system", "key": "screen_off_timeout", "in": [60000, "120000"]}})
    assert c.evaluate({"settings get system screen_off_timeout": ("60000", 0)}) is True


def test_shell_check_searches_output_and_needs_exit_zero():
    cmd = "content query --uri content://com.android.contacts/data/phones --projection display_name:number"
    c = check({"shell": {"command": cmd, "matches": r"^Row: \d+ display_name=Ada Lovelace, number=555-?0142$"}})
    assert c.shell_commands() == [cmd]
    two_rows = "Row: 0 display_name=Bob, number=1\nRow: 1 display_name=Ada Lovelace, number=5550142\n"
    assert c.evaluate({cmd: (two_rows, 0)}) is True          # multi-line search
    assert c.evaluate({cmd: ("No result found.\n", 0)}) is False
    assert c.evaluate({cmd: (two_rows, 127)}) is False         # exit 127: command not found
    bare = check({"shell": {"command": "pidof com.android.settings"}})
    assert bare.evaluate({"pidof com.android.settings": ("", 0)}) is True
    assert bare.evaluate({"pidof com.android.settings": ("", 1)}) is False


def test_composites_and_deduplicated_commands():
    on = {"setting": {"namespace": "global", "key": "wifi_on", "equals": "1"}}
    air = {"setting": {"namespace": "global", "key": "airplane_mode_on", "equals": "1"}}
    air_cmd = "settings get global airplane_mode_on"
    c = check({"all": [on, {"not": air}, {"any": [on, air]}]})
    assert c.shell_commands() == [WIFI, air_cmd]
    assert c.evaluate({WIFI: ("1", 0), air_cmd: ("0", 0)}) is True
    assert c.evaluate({WIFI: ("1", 0), air_cmd: ("1", 0)}) is False     # not fails
    assert c.evaluate({WIFI: ("0", 0), air_cmd: ("0", 0)}) is False     # all fails
    any_ = check({"any": [on, air]})
    assert any_.evaluate({WIFI: ("0", 0), air_cmd: ("1", 0)}) is True
    assert any_.evaluate({WIFI: ("0", 0), air_cmd: ("0", 0)}) is False
    assert any_.evaluate({WIFI: ("1", 127), air_cmd: ("1", 127)}) is False
    # `not` of a failed command is true: the state is not known to hold
    assert check({"not": on}).evaluate({WIFI: ("", 127)}) is True


def test_missing_output_is_a_caller_bug():
    c = check({"setting": {"namespace": "global", "key": "wifi_on", "equals": "1"}})
    with pytest.raises(KeyError, match="settings get global wifi_on"):
        c.evaluate({})


def test_ui_checks_go_to_the_matcher():
    c = check({"all": [{"ui": {"text": "Wi-Fi", "checked": True}},
                       {"not": {"ui": {"text_contains": "Error"}}}]})
    assert c.shell_commands() == []
    assert [u.ui.text or u.ui.text_contains for u in c.ui_checks()] == ["Wi-Fi", "Error"]
    screen = [dict(text="Wi-Fi", resource_id="android:id/title", class_name="android.widget.Switch", checked=True)]

    def matcher(u: UiCheck) -> bool:
        return any(u.ui.matches_element(**el) for el in screen)

    assert c.evaluate({}, matcher) is True
    screen[0]["checked"] = False
    assert c.evaluate({}, matcher) is False
    with pytest.raises(ValueError):
        c.evaluate({})   # a ui check needs a matcher


def test_ui_selector_matching():
    sel = check({"ui": {"resource_id": "switch_widget", "class_name": "Switch", "checked": False}}).ui
    assert sel.matches_element(resource_id="android:id/switch_widget", class_name="android.widget.Switch")
    assert not sel.matches_element(resource_id="android:id/switch_widget", class_name="android.widget.Switch",
                                   checked=True)
    assert not sel.matches_element(resource_id="android:id/title", class_name="android.widget.Switch")
    full = check({"ui": {"resource_id": "android:id/switch_widget"}}).ui
    assert full.matches_element(resource_id="android:id/switch_widget")
    assert not full.matches_element(resource_id="com.other:id/switch_widget")
    desc = check({"ui": {"desc_contains": "Add", "enabled": True}}).ui
    assert desc.matches_element(desc="Add alarm")
    assert not desc.matches_element(desc="Add alarm", enabled=False)


def test_foreground_check_resolves_aliases():
    out = "  topResumedActivity=ActivityRecord{a1b2c3 u0 com.google.android.deskclock/com.android.deskclock.DeskClock t42}\n"
    by_alias = check({"foreground": {"app": "clock"}})
    assert by_alias.shell_commands() == [FOREGROUND_COMMAND]
    assert by_alias.evaluate({FOREGROUND_COMMAND: (out, 0)}) is True
    assert by_alias.evaluate({FOREGROUND_COMMAND: (out, 0)}, apps={"clock": "com.sec.android.app.clockpackage"}) is False
    by_pkg = check({"foreground": {"package": "com.android.settings"}})
    assert by_pkg.evaluate({FOREGROUND_COMMAND: (out, 0)}) is False
    assert by_pkg.evaluate({FOREGROUND_COMMAND: ("", 1)}) is False
    # a package that only prefixes the foreground one does not match
    assert check({"foreground": {"package": "com.google.android.desk"}}).evaluate({FOREGROUND_COMMAND: (out, 0)}) is False
