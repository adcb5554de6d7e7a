"""phone/steps.py: setup and teardown steps run on the phone, with the phone profile's
command variants (as the judge's commands have always had them)."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from agent_host.config.phones import DEFAULT_APPS, PhoneProfile
from agent_host.config.steps import STEP_KINDS, Step
from agent_host.errors import UserError
from agent_host.phone.device import ShellResult
from agent_host.phone.steps import RUNNERS, StepFailed, run_steps


class FakePhone:
    def __init__(self, answers=None):
        self.calls = []
        self.answers = answers or {}   # command -> (output, exit code)

    def shell(self, cmd):
        self.calls.append(("shell", cmd))
        out, code = self.answers.get(cmd, ("", 0))
        return ShellResult(cmd, out, code)

    def launch(self, pkg):
        self.calls.append(("launch", pkg))

    def force_stop(self, pkg):
        self.calls.append(("force_stop", pkg))

    def home(self):
        self.calls.append(("home",))


def profile(**variants: str) -> PhoneProfile:
    return PhoneProfile(id="p", description="", android_version=14, screen={"width": 1080, "height": 2400},
                        apps=dict(DEFAULT_APPS, clock="com.sec.android.app.clockpackage"),
                        command_variants=variants)


STEPS = TypeAdapter(list[Step]).validate_python(
    [{"shell": "dumpsys battery unplug"}, {"launch": "clock"},
     {"setting": {"namespace": "global", "key": "k", "value": "a b"}}, {"wait": 2},
     {"force_stop": "com.example.app"}, "home"])


def test_every_step_kind_has_a_runner():
    assert set(RUNNERS) == set(STEP_KINDS)


def test_steps_use_the_phone_and_resolve_aliases():
    phone, slept = FakePhone(), []
    run_steps(STEPS, phone, profile(), sleep=slept.append)
    assert phone.calls == [
        ("shell", "dumpsys battery unplug"), ("launch", "com.sec.android.app.clockpackage"),
        ("shell", "settings put global k 'a b'"), ("force_stop", "com.example.app"), ("home",)]
    assert slept == [2.0]
    with pytest.raises(UserError, match="unknown app alias 'clock'"):
        run_steps(STEPS, FakePhone(), profile().model_copy(update={"apps": {"settings": "x.y"}}))


def test_steps_run_the_profiles_command_variants():
    p = profile(**{"dumpsys battery unplug": "cmd battery unplug",
                   "settings put global k 'a b'": "settings put --user 0 global k 'a b'"})
    phone = FakePhone()
    run_steps(STEPS, phone, p, sleep=lambda s: None)
    shells = [c[1] for c in phone.calls if c[0] == "shell"]
    assert shells == ["cmd battery unplug", "settings put --user 0 global k 'a b'"]


def test_no_profile_means_the_default_packages():
    phone = FakePhone()
    run_steps(STEPS[1:2], phone, None)
    assert phone.calls == [("launch", DEFAULT_APPS["clock"])]


def steps(*items):
    return TypeAdapter(list[Step]).validate_python(list(items))


def test_a_failing_command_fails_the_step_and_stops_the_setup():
    phone = FakePhone({"pm clear com.example": ("Failed\n", 1)})
    with pytest.raises(StepFailed, match=r"'pm clear com.example' exited 1"):
        run_steps(steps({"shell": "pm clear com.example"}, {"shell": "echo after"}), phone)
    assert [c[1] for c in phone.calls] == ["pm clear com.example"]      # nothing after it ran


def test_a_refused_provider_write_fails_even_with_exit_code_0():
    # the content tool on some Android versions prints the refusal and exits 0
    cmd = "content insert --uri content://com.android.calendar/events --bind calendar_id:i:9"
    phone = FakePhone({cmd: ("Error while accessing provider:com.android.calendar\n"
                             "java.lang.IllegalArgumentException: no calendar 9\n", 0)})
    with pytest.raises(StepFailed, match="exited 0"):
        run_steps(steps({"shell": cmd}), phone)


def test_may_fail_allows_a_failure_and_an_effect_must_hold():
    ok = FakePhone({"pm clear x.y": ("", 1), "pm path x.y": ("", 1)})
    run_steps(steps({"shell": {"command": "pm clear x.y", "may_fail": True}}), ok)
    effect = {"shell": "dumpsys telephony.registry", "matches": "mCallState=0"}
    idle = FakePhone({"end": ("", 1), "dumpsys telephony.registry": ("  mCallState=0\n", 0)})
    run_steps(steps({"shell": {"command": "end", "may_fail": True, "effect": effect}}), idle)
    busy = FakePhone({"end": ("", 1), "dumpsys telephony.registry": ("  mCallState=2\n", 0)})
    with pytest.raises(StepFailed, match="its effect does not hold"):
        run_steps(steps({"shell": {"command": "end", "may_fail": True, "effect": effect}}), busy)


def test_an_unbound_phone_placeholder_is_refused_before_it_reaches_the_phone():
    phone = FakePhone()
    with pytest.raises(StepFailed, match=r"\{phone.calendar_id\} not bound"):
        run_steps(steps({"shell": "content insert --bind calendar_id:i:{phone.calendar_id}"}), phone)
    assert phone.calls == []


def test_wait_steps_sleep_unless_the_profile_says_its_phone_needs_none():
    """The virtual phone's radios switch as the command returns: its `wait:` steps cost CI a
    second each for nothing (12 of them in the shipped tasks, hundreds of episodes)."""
    from agent_host.config.phones import load_phone_profile
    for p, want in [(profile(), [1.0]), (None, [1.0]), (load_phone_profile("virtual"), []),
                    (load_phone_profile("pixel-android14"), [1.0])]:
        slept: list[float] = []
        run_steps([TypeAdapter(Step).validate_python({"wait": 1})], FakePhone(), p, sleep=slept.append)
        assert slept == want, p
