"""phone/steps.py: setup and teardown steps run on the phone, with the phone profile's
command variants (as the judge's commands have always had them)."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from agent_host.config.phones import DEFAULT_APPS, PhoneProfile
from agent_host.config.steps import STEP_KINDS, Step
from agent_host.errors import UserError
from agent_host.phone.steps import RUNNERS, run_steps


class FakePhone:
    def __init__(self):
        self.calls = []

    def shell(self, cmd):
        self.calls.append(("shell", cmd))

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
