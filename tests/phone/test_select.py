"""The one selector engine (phone/select.py): checks and solutions match text the same way."""

from __future__ import annotations

import pytest

from agent_host.config.scope import Scope
from agent_host.config.tasks import _CHECK, load_tasks
from agent_host.judge.checks import Judge
from agent_host.phone.parse import parse
from agent_host.phone.select import find

NODE = ('<node index="0" text="{text}" resource-id="android:id/title" class="android.widget.TextView" '
        'package="com.android.settings" content-desc="{desc}" checkable="false" checked="false" clickable="true" '
        'enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false" '
        'password="false" selected="false" bounds="[0,{top}][1080,{bottom}]" />')


def screen(*texts: str, desc: str = ""):
    nodes = "".join(NODE.format(text=t, desc=desc, top=300 + 200 * i, bottom=480 + 200 * i)
                    for i, t in enumerate(texts))
    xml = ('<hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" '
           'package="com.android.settings" content-desc="" checkable="false" checked="false" clickable="false" '
           'enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" '
           f'password="false" selected="false" bounds="[0,0][1080,2400]">{nodes}</node></hierarchy>')
    return parse(xml)


# Android writes "Wi‑Fi" with U+2011 and puts U+202F before AM/PM; task authors write ASCII.
SHOWN = ["Wi\u2011Fi", "7:30\u202fAM", "Do\u00a0Not Disturb", "\u22125 dB", "Mon\u2013Fri", "BLUETOOTH"]
WRITTEN = ["Wi-Fi", "7:30 AM", "Do Not Disturb", "-5 dB", "Mon-Fri", "Bluetooth"]


@pytest.mark.parametrize("shown, written", list(zip(SHOWN, WRITTEN)))
def test_solutions_find_text_after_normalisation(shown, written):
    s = screen("Other", shown)
    hit = find(s.elements, text=written)
    assert hit is not None and hit.index == 1
    assert find(s.elements, text_contains=written.split()[0]).index == 1


@pytest.mark.parametrize("shown, written", list(zip(SHOWN, WRITTEN)))
def test_checks_match_text_after_normalisation(shown, written):
    task = load_tasks(["wifi-on"])[0]
    task = task.model_copy(update={"check": _CHECK.validate_python({"ui": {"text": written}}), "scope": Scope()})
    assert Judge(task).evaluate(None, screen("Other", shown)).goal is True
    assert Judge(task).evaluate(None, screen("Other")).goal is False


def test_policy_scripts_resolve_against_the_rendered_text_the_same_way():
    import json

    from agent_host.phone.render import render
    from agent_host.policy.script import PolicyScript, play

    obs = render(screen("Network and internet", "Wi\u2011Fi"))
    script = PolicyScript.from_data([{"tap": {"text": "wi-fi"}}], source="t")
    reply = play(script, [{"role": "user", "content": obs}])
    assert json.loads(reply["tool_calls"][0]["function"]["arguments"]) == {"index": 1}
