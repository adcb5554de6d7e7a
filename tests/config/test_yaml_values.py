"""Issue 32, item 5: a YAML scalar that reads as a date or an integer but cannot be made
(`2026-02-30`, an integer of 5 000 digits) ended in a ValueError traceback from the YAML
constructor, in every kind of file agent-host loads. Now it is one ConfigError line naming
the file and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_host.config.hosts import load_host_profile
from agent_host.config.phones import load_phone_profile
from agent_host.config.tasks import load_tasks
from agent_host.errors import ConfigError
from agent_host.policy.script import PolicyScript
from agent_host.serving.fidelity import DEFAULT_PROMPTS, load_prompts

from fixtures_cli import agent_host, assert_user_error

ROOT = Path(__file__).resolve().parents[2]

KINDS = {   # what loads it, and a valid file of that kind
    "task": (lambda p: load_tasks([p]), (ROOT / "tasks" / "wifi-on.yaml").read_text()),
    "host-profile": (load_host_profile, (ROOT / "device_profiles" / "hosts" / "x86-avx2.yaml").read_text()),
    "phone-profile": (load_phone_profile, (ROOT / "device_profiles" / "phones" / "virtual.yaml").read_text()),
    "policy-script": (PolicyScript.load, "actions: []\nafter: wait\nwait_seconds: 1\n"),
    "prompts": (load_prompts, DEFAULT_PROMPTS.read_text()),
}
VALUES = {"date": ("2026-02-30", "not a valid date"), "digits": ("9" * 5000, "not a valid number")}


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("kind", KINDS)
def test_an_impossible_value_is_one_line_naming_file_and_line(tmp_path, kind, value):
    load, text = KINDS[kind]
    path = tmp_path / f"{kind}.yaml"
    text = text.rstrip("\n") + "\n"
    line = text.count("\n") + 1
    raw, words = VALUES[value]
    path.write_text(text + f"notes_extra: {raw}\n")
    with pytest.raises(ConfigError) as err:
        load(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}:{line}: "), message
    assert words in message and len(message) < 300, message


def test_the_cli_says_it_in_one_line(tmp_path):
    path = tmp_path / "h.yaml"
    path.write_text(KINDS["host-profile"][1] + "\nwhen: 2026-02-30\n")
    out = agent_host("builds", "--host-profile", str(path), cwd=tmp_path)
    assert_user_error(out, f"{path}:", "2026-02-30", "not a valid date")
