"""agent_host.judge.checks: one batched shell call per evaluation, UI checks on the given screen."""

from __future__ import annotations

from agent_host.config.tasks import _CHECK, load_tasks
from agent_host.config.scope import Scope
from agent_host.judge.checks import Judge
from agent_host.phone.parse import parse
from agent_host.phone.device import Phone, ShellResult

XML = """<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy rotation="0">
 <node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.android.settings"
  content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false"
  focused="false" scrollable="false" long-clickable="false" password="false" selected="false"
  bounds="[0,0][1080,2400]">
  <node index="0" text="" resource-id="" class="android.widget.LinearLayout" package="com.android.settings"
   content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true"
   focused="false" scrollable="false" long-clickable="false" password="false" selected="false"
   bounds="[0,300][1080,500]">
   <node index="0" text="Wi-Fi" resource-id="android:id/title" class="android.widget.TextView"
    package="com.android.settings" content-desc="" checkable="false" checked="false" clickable="false"
    enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false"
    password="false" selected="false" bounds="[40,320][600,380]" />
   <node index="1" text="" resource-id="android:id/switch_widget" class="android.widget.Switch"
    package="com.android.settings" content-desc="" checkable="true" checked="true" clickable="false"
    enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false"
    password="false" selected="false" bounds="[900,340][1040,460]" />
  </node>
 </node>
</hierarchy>"""


class FakePhone:
    def __init__(self, outputs):
        self.outputs = outputs
        self.calls = []

    def shell_batch(self, cmds):
        self.calls.append(list(cmds))
        return [ShellResult(c, *self.outputs[c]) for c in cmds]


def _instance(check: dict, base: str = "wifi-on"):
    """The check alone: no scope, so the batch holds only the check's commands (the whole-state
    half of the goal is tested on a virtual phone, tests/judge/test_judge_state.py)."""
    task = load_tasks([base])[0]
    return task.model_copy(update={"check": _CHECK.validate_python(check), "scope": Scope()})


def test_all_commands_in_one_batch():
    task = _instance({"all": [
        {"setting": {"namespace": "global", "key": "wifi_on", "equals": "1"}},
        {"shell": {"command": "cmd wifi status", "matches": "Wifi is enabled"}},
        {"not": {"setting": {"namespace": "global", "key": "airplane_mode_on", "equals": "1"}}},
    ]})
    phone = FakePhone({"settings get global wifi_on": ("1\n", 0), "cmd wifi status": ("Wifi is enabled\n", 0),
                       "settings get global airplane_mode_on": ("0\n", 0)})
    v = Judge(task).evaluate(phone)
    assert v.goal is True
    assert len(phone.calls) == 1 and len(phone.calls[0]) == 3
    assert v.detail["shell"]["cmd wifi status"] == {"out": "Wifi is enabled", "rc": 0}
    phone.outputs["settings get global airplane_mode_on"] = ("1\n", 0)
    assert Judge(task).evaluate(phone).goal is False


def test_failed_command_makes_its_leaf_false():
    task = _instance({"setting": {"namespace": "global", "key": "wifi_on", "equals": "1"}})
    assert Judge(task).evaluate(FakePhone({"settings get global wifi_on": ("1", 1)})).goal is False


def test_profile_command_variants_are_run_and_filed_under_the_original():
    class Profile:
        apps = {"settings": "com.android.settings"}

        def command(self, c):
            return "cmd wifi status | head -1" if c == "cmd wifi status" else c

    task = _instance({"shell": {"command": "cmd wifi status", "matches": "enabled"}})
    phone = FakePhone({"cmd wifi status | head -1": ("Wifi is enabled", 0)})
    v = Judge(task, Profile()).evaluate(phone)
    assert v.goal and phone.calls == [["cmd wifi status | head -1"]]
    assert "cmd wifi status" in v.detail["shell"]


def test_ui_check_uses_the_given_screen_without_a_dump():
    screen = parse(XML)
    on = _instance({"ui": {"text": "Wi-Fi", "checked": True}})
    off = _instance({"ui": {"text": "Wi-Fi", "checked": False}})
    rid = _instance({"ui": {"resource_id": "switch_widget", "class_name": "Switch"}})
    phone = FakePhone({})
    assert Judge(on).evaluate(phone, screen).goal is True
    assert Judge(off).evaluate(phone, screen).goal is False
    assert Judge(rid).evaluate(phone, screen).goal is True
    assert phone.calls == []          # a UI-only check costs no shell call
    mixed = _instance({"all": [{"ui": {"text": "Wi-Fi", "checked": True}},
                               {"setting": {"namespace": "global", "key": "wifi_on", "equals": "1"}}]})
    v = Judge(mixed).evaluate(FakePhone({"settings get global wifi_on": ("0", 0)}), screen)
    assert v.goal is False and v.detail["ui"] == {"text=Wi-Fi,checked=True": True}


def test_infeasible_task_never_holds():
    task = load_tasks(["fm-radio-on"])[0].model_copy(update={"scope": Scope()})
    phone = FakePhone({})
    assert Judge(task).evaluate(phone).goal is False and phone.calls == []
    # with its scope (the settings, its app's state), the judge reads it, and still never holds
    task = load_tasks(["fm-radio-on"])[0]
    phone = FakePhone({f"settings list {ns}": ("", 0) for ns in ("global", "system", "secure")})
    v = Judge(task).evaluate(phone)
    assert v.goal is False and v.asked is None and v.clean is True


def test_on_the_virtual_phone_one_adb_shell_call(virtual_phone, monkeypatch):
    """One adb shell call for the whole check, and the verdict follows the phone's real state
    (before: `in: ["0", "1"]` checks that held whatever the phone answered)."""
    task = _instance({"all": [
        {"setting": {"namespace": "global", "key": "wifi_on", "equals": "1"}},
        {"setting": {"namespace": "global", "key": "bluetooth_on", "equals": "0"}},
        {"setting": {"namespace": "system", "key": "screen_off_timeout", "equals": "60000"}},
    ]})
    phone = Phone.connect(virtual_phone.serial)
    phone.shell_batch(["svc wifi enable", "settings put global bluetooth_on 0",
                       "settings put system screen_off_timeout 60000"])
    calls = []
    real = phone.adb.shell
    monkeypatch.setattr(phone.adb, "shell", lambda *a, **kw: (calls.append(a[0]), real(*a, **kw))[1])
    v = Judge(task).evaluate(phone)
    assert v.goal is True and len(calls) == 1
    assert v.detail["shell"] == {"settings get global wifi_on": {"out": "1", "rc": 0},
                                 "settings get global bluetooth_on": {"out": "0", "rc": 0},
                                 "settings get system screen_off_timeout": {"out": "60000", "rc": 0}}
    real("settings put system screen_off_timeout 30000")
    calls.clear()
    v = Judge(task).evaluate(phone)
    assert v.goal is False and len(calls) == 1
    assert v.detail["shell"]["settings get system screen_off_timeout"]["out"] == "30000"
