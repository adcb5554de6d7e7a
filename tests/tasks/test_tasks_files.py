"""The shipped task files and phone profiles: valid, complete, and using real Android commands."""

import json
import re
from pathlib import Path

import pytest
import yaml

from agent_host.config.phones import DEFAULT_APPS, PhoneProfile, load_phone_profile, resolve_app
from agent_host.config.steps import ForceStopStep, HomeStep, LaunchStep
from agent_host.config.tasks import SCHEMA_LINE, collect, has_verify, load_tasks, task_json_schema
from agent_host.errors import ConfigError, UserError
from agent_host.judge.checks import Facts, evaluate, shell_commands
from agent_host.phone.steps import run_steps, step_commands

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tasks"
FILES = sorted(TASKS.glob("*.yaml"))
REQUIRED = ["wifi-on", "wifi-off", "bluetooth-off", "airplane-mode-on", "dark-theme-on", "brightness-max",
            "screen-timeout-1min", "dnd-on", "location-off", "battery-saver-on", "alarm-set[2]", "contact-add"]
ALIASES = ["settings", "clock", "contacts", "phone", "messages", "chrome", "camera", "photos"]

# How real Android 13-15 is driven over `adb shell` (docs/android-state.md);
# a task command outside these would not run unchanged on a phone.
REAL_COMMANDS = re.compile(
    r"^(svc (wifi|bluetooth) (enable|disable)"
    r"|cmd connectivity airplane-mode (enable|disable)"
    r"|cmd uimode night (yes|no)"
    r"|cmd notification set_dnd (off|priority|alarms|none|on)"
    r"|cmd location set-location-enabled (true|false)"
    r"|cmd power set-mode [01]"
    r"|dumpsys battery (unplug|reset)"
    r"|pm clear com\.google\.android\.deskclock"
    r"|am start -a android\.intent\.action\.SET_ALARM .*"
    r"|content (query|delete) --uri content://com\.android\.contacts/.*"
    r"|cmd wifi set-wifi-enabled (enabled|disabled)"
    r"|getprop ro\.build\.version\.release"
    r"|cmd bluetooth_manager (enable|disable)"
    r"|content (query|insert|update|delete) --uri content://com\.android\.calendar/events .*"
    # toybox file tools on shared storage (Files, Markor); paths only under /sdcard
    r"|mkdir -p (\"?/sdcard/[^;&|]*)"
    r"|rm -r?f (\"?/sdcard/[^;&|]*)"
    r"|echo ('[^']*'|\w+) >>? \"?/sdcard/[^;&|]*"
    r"|mv /sdcard/[^;&|]*"
    r"|(ls|cat) (\"/sdcard/[^\"]*\"|/sdcard/\S*)( /sdcard/\S+)*( \| grep -c -i '[^']*')?"
    r"|stat -c %F \"?/sdcard/[^;&|]*"
    # Messages, Phone and Contacts tasks (sources in virtual_phone/shell_content.py)
    r"|pm clear com\.android\.providers\.contacts"
    r"|content (query|insert|delete) --uri content://(com\.android\.contacts/|sms\b|call_log/calls\b).*"
    r"|appops set com\.android\.shell WRITE_SMS (allow|default)"
    r"|dumpsys telephony\.registry \| grep -q 'mCallState=2' && input keyevent KEYCODE_ENDCALL"
    r"|am start -a android\.intent\.action\.SENDTO -d sms:\d+ --es sms_body .*"
    r"|dumpsys alarm \| grep .*"
    r"|dumpsys activity activities \| grep topResumedActivity"
    r"|settings (get|put) (global|system|secure) \S+( \S+)?)$")


@pytest.fixture(scope="module")
def report():
    return collect([TASKS])


@pytest.fixture(scope="module")
def instances():
    return load_tasks([str(TASKS)], variants=("base", "verify"))


def test_every_shipped_task_validates(report, instances):
    assert report.errors == []
    ids = {t.id for t in instances}   # instance ids: screen-timeout-1min is a parameter set
    assert set(REQUIRED) <= ids
    base = [t for t in instances if t.variant == "base"]
    assert len(base) >= 15
    assert sum(t.infeasible for t in base) >= 2
    assert any(t.params for t in base)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_file_layout(path):
    text = path.read_text()
    assert text.splitlines()[0] == SCHEMA_LINE
    data = yaml.safe_load(text)
    assert isinstance(data, dict) and data["id"] == path.stem   # one task per file, named by its id


def test_committed_schema_is_the_generated_one():
    committed = json.loads((TASKS / "task.schema.json").read_text())
    assert committed == task_json_schema(), "run: agent-host tasks schema > tasks/task.schema.json"


def test_task_files_validate_against_the_json_schema():
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(task_json_schema())
    for path in FILES:
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
        assert errors == [], path
    bad = yaml.safe_load((TASKS / "wifi-on.yaml").read_text())
    bad["setup"].append({"reboot": True})
    assert list(validator.iter_errors(bad))


def test_tasks_start_from_a_defined_screen_and_use_real_commands(report, instances):
    for task, path, _ in report.tasks:
        kinds = [type(s) for s in task.setup]
        assert HomeStep in kinds or LaunchStep in kinds, f"{path}: setup must end on a defined screen"
        assert task.teardown, f"{path}: no teardown"
        assert task.solution, f"{path}: no solution"
        assert task.max_steps >= len(task.solution) * 2, f"{path}: budget under 2x the solution"
        assert task.tags, path
        # a feasible task has a verify variant unless it opts out (verify: false) and says why in notes
        assert has_verify(task) == (not task.infeasible and task.verify), path
        assert task.verify or task.infeasible or task.notes, f"{path}: verify: false needs notes saying why"
        resolve_app(task.app)
        for step in task.setup + task.goal_setup + task.teardown:
            if isinstance(step, (LaunchStep, ForceStopStep)):
                resolve_app(step.launch if isinstance(step, LaunchStep) else step.force_stop)
    for t in instances:
        cmds = [c for s in t.setup + t.teardown for c in step_commands(s)] + shell_commands(t.check)
        for cmd in cmds:
            if cmd.startswith(("am force-stop ", "input keyevent ", "monkey -p ")):
                continue
            assert REAL_COMMANDS.match(cmd), f"{t.key}: {cmd!r} is not a known Android 13-15 command"
        for action in t.solution:
            if "open_app" in action:
                resolve_app(action["open_app"]["name"])


def test_phone_profiles():
    virtual = load_phone_profile("virtual")
    pixel = load_phone_profile("pixel-android14")
    assert load_phone_profile() == virtual
    assert load_phone_profile(ROOT / "device_profiles/phones/pixel-android14.yaml") == pixel
    for p in (virtual, pixel):
        assert isinstance(p, PhoneProfile) and p.android_version == 14
        assert set(ALIASES) <= set(p.apps)
        assert p.package("clock") == "com.google.android.deskclock"
        assert p.package("contacts") == "com.google.android.contacts"
        assert p.package("com.example.app") == "com.example.app"
        assert p.command("settings get global wifi_on") == "settings get global wifi_on"
    assert virtual.apps == pixel.apps == DEFAULT_APPS
    # Issue 22: one alias table; a profile names only where its phone differs.
    samsung = PhoneProfile(id="s", description="d", android_version=14, screen={"width": 1080, "height": 2340},
                           apps={"clock": "com.sec.android.app.clockpackage", "notes": "com.samsung.android.app.notes"})
    assert samsung.package("clock") == "com.sec.android.app.clockpackage"
    assert samsung.package("contacts") == DEFAULT_APPS["contacts"] and samsung.package("notes").startswith("com.samsung")
    with pytest.raises(UserError, match="unknown app alias 'radio'"):
        virtual.package("radio")
    with pytest.raises(ConfigError, match="unknown phone profile 'galaxy'"):
        load_phone_profile("galaxy")


def test_phone_profile_errors_name_the_field(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("id: p\ndescription: d\nandroid_version: 14\nscreen: {width: 1080}\napps: {}\n")
    with pytest.raises(ConfigError, match=r"p\.yaml:4: screen\.height: Field required"):
        load_phone_profile(bad)
    variants = tmp_path / "old.yaml"
    variants.write_text("id: old\ndescription: d\nandroid_version: 11\nscreen: {width: 1080, height: 2340}\n"
                        "apps: {settings: com.android.settings}\ncommand_variants:\n"
                        "  'dumpsys activity activities | grep topResumedActivity': "
                        "'dumpsys activity activities | grep mResumedActivity'\n")
    old = load_phone_profile(variants)
    assert old.command("dumpsys activity activities | grep topResumedActivity").endswith("mResumedActivity")


class _WorldPhone:
    """The steps' phone calls as the shell commands adb would send (no adb here)."""

    def __init__(self, world):
        self.world = world

    def shell(self, cmd):
        return self.world.shell(cmd)

    def launch(self, pkg):
        self.world.shell(f"monkey -p {pkg} -c android.intent.category.LAUNCHER 1")

    def force_stop(self, pkg):
        self.world.shell(f"am force-stop {pkg}")

    def home(self):
        self.world.shell("input keyevent KEYCODE_HOME")


def test_setup_and_goal_setup_reach_their_states_on_the_virtual_phone(instances):
    """Base instances start with the goal false; verify instances with it true (the virtual
    phone answers the same shell commands a real phone does)."""
    from virtual_phone.fs import VirtualFS
    from virtual_phone.world import World

    checked = 0
    for t in instances:
        if t.check is None:
            continue
        world = World(VirtualFS())
        run_steps(t.setup, _WorldPhone(world), sleep=lambda s: None)
        outputs = {}
        for cmd in shell_commands(t.check):
            res = world.shell(cmd)
            outputs[cmd] = (res.stdout.decode(), res.exit_code)
        assert evaluate(t.check, Facts(outputs)) is (t.variant == "verify"), (t.key, outputs)
        checked += 1
    assert checked >= 30
