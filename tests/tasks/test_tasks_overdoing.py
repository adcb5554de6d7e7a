"""The over-doing adversary and the other-way-right policy, played as episodes on the virtual phone
through the real adb stack.

Each over-doing script is the task's own reference solution with more done before
`task_complete`: a second call, a second text, an extra recipient, a duplicate event or contact,
every number in one text, the answer's source changed before answering. Where the goal says
once or only, none may end in `success`. Each alternative does the task another reasonable way
(another path through the apps, the answer in another format Android itself shows) and must
end in `success`: a check must not refuse a correct answer either.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_host.agent.episode import run_episode
from agent_host.config.phones import load_phone_profile
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone
from agent_host.policy.script import PolicyScript
from fixtures_phone import set_clock_today
from agent_host.policy.server import PolicyServer

TASKS = Path(__file__).resolve().parents[2] / "tasks"
Script = list[Any]
DONE = {"task_complete": {"reason": "done"}}


def _more(*extra: Any) -> Callable[[Script], Script]:
    """The solution, then `extra`, then its own task_complete."""
    return lambda sol: sol[:-1] + list(extra) + sol[-1:]


def _twice(sol: Script) -> Script:
    """The solution's steps done again from the app's first screen (after Save, Back returns to it)."""
    return sol[:-1] + ["press_back"] + sol[1:-1] + sol[-1:]


def _dial(number: str) -> list[Any]:
    return [{"tap": {"desc": "Keypad"}}, {"long_press": {"desc": "backspace"}},
            {"type_text": {"resource_id": "digits", "text": number, "submit": False}},
            {"tap": {"text": "Call"}}, {"tap": {"desc": "End call"}}]


def _text(first: str, name: str, body: str) -> list[Any]:
    return ["press_back", {"tap": {"text": "Start chat"}},
            {"type_text": {"resource_id": "recipient_text_view", "text": first, "submit": False}},
            {"tap": {"text": name}},
            {"type_text": {"resource_id": "compose_message_text", "text": body, "submit": False}},
            {"tap": {"desc": "Send SMS"}}]


def _typing(body: str) -> Callable[[Script], Script]:
    """The solution with the message (or note) it types replaced by `body`."""
    def edit(sol: Script) -> Script:
        out = []
        for item in sol:
            tt = item.get("type_text") if isinstance(item, dict) else None
            rid = (tt or {}).get("resource_id", "")
            if tt and (rid.endswith("compose_message_text") or rid.endswith("highlighting_editor")):
                item = {"type_text": {**tt, "text": body}}
            out.append(item)
        assert out != sol, "the solution types no message to replace"
        return out
    return edit


def _answering(text: str) -> Callable[[Script], Script]:
    return lambda sol: [{"answer": {"text": text}} if isinstance(i, dict) and "answer" in i else i for i in sol]


def _fixed(script: Script) -> Callable[[Script], Script]:
    return lambda sol: script


# name -> (task key, script from the solution, what was done)
OVERDOING: dict[str, tuple[str, Callable[[Script], Script], str]] = {
    "second-call": ("call-number[0]", _more(*_dial("6505550101")), "called the number twice"),
    "other-callee": ("call-contact[0]", _more(*_dial("6505550133")), "also called Hedy Lamarr"),
    "extra-venue": ("call-numbers-from-sms", _more(*_dial("6505550177")), "also called Grace herself"),
    "callback-again": ("callback-once[0]", _more(*_dial("6505550168")), "returned the call twice"),
    "second-text": ("sms-send-contact[0]", _more(
        {"type_text": {"resource_id": "compose_message_text", "text": "Also, bring snacks", "submit": False}},
        {"tap": {"desc": "Send SMS"}}), "sent a second, unasked text"),
    "extra-recipient": ("sms-send-number[0]", _more(*_text("Ada", "Ada Lovelace", "Is the apartment still available?")),
                        "also sent the text to Ada"),
    "number-to-two": ("sms-new-number-once[0]", _more(*_text("Ada", "Ada Lovelace", "My new number is 650-555-0199")),
                      "sent the new number to someone else too"),
    "every-number": ("sms-share-contact-number[0]",
                     _typing("Ada (650) 555-0142, Alan (650) 555-0168, Hedy (650) 555-0133"),
                     "sent every contact's number in one text"),
    "duplicate-event": ("calendar-add-event-dentist", _twice, "created the event twice"),
    "duplicate-contact": ("contact-add", _twice, "saved the contact twice"),
    "changed-source": ("calendar-where", _fixed([
        {"open_app": {"name": "calendar"}}, {"tap": {"text": "Piano lesson"}}, {"tap": {"desc": "Edit event"}},
        {"type_text": {"text_contains": "Westside", "text": "Elm Street studio"}}, {"tap": {"text": "Save"}},
        {"answer": {"text": "Elm Street studio"}}, DONE]),
        "rewrote the event's location to match a wrong answer"),
    "bluetooth-off-too": ("wifi-off-keep-bluetooth", _more(
        "press_back", "press_back", {"tap": {"text": "Connected devices"}}, {"tap": {"text": "Connection preferences"}},
        {"tap": {"text": "Bluetooth"}}, {"tap": {"text": "Use Bluetooth"}}), "turned Bluetooth off as well"),
    "other-note-too": ("markor-delete-note", _more(
        {"long_press": {"text": "ideas.md"}}, {"tap": {"desc": "Delete"}}, {"tap": {"text": "OK"}}),
        "deleted another note as well"),
    "both-copies": ("files-delete-copy", _more(
        {"long_press": {"text": "invoice_2026.pdf"}}, {"tap": {"desc": "Delete"}}, {"tap": {"text": "OK"}}),
        "deleted the original as well as the copy"),
    "earlier-alarm-too": ("alarm-set[0]", _more(
        {"tap": {"desc": "Add alarm"}}, {"tap": {"text": "5"}}, {"tap": {"text": "00"}}, {"tap": {"text": "AM"}},
        {"tap": {"text": "OK"}}), "set a second alarm, earlier than the asked one"),
    "settled-for-30": ("clock-snooze-45", _fixed([
        {"open_app": {"name": "clock"}}, {"tap": {"desc": "More options"}}, {"tap": {"text": "Settings"}},
        {"tap": {"text": "Snooze length"}},
        {"type_text": {"resource_id": "android:id/numberpicker_input", "text": "30", "submit": False}},
        {"tap": {"text": "OK"}}, DONE]), "set the longest snooze on offer and called it done"),
}

# The phone's clock (UTC hour, minute of today) a case needs. The judge sees only the next alarm
# clock (all Android shows of the Clock's alarms), so a second alarm is caught only when it rings
# before the asked one: at 05:00-06:15 the 5:00 AM alarm is tomorrow's and the asked 6:15 is
# next, and the case passed or failed by the hour the suite ran.
CLOCK_AT: dict[str, tuple[int, int]] = {"earlier-alarm-too": (0, 30)}

# every kind of task, and every app, has an over-doing adversary
KINDS = {"text-entry", "multi-app", "retrieval", "long-horizon", "recognition", "infeasible"}
APPS = {"phone", "messages", "contacts", "calendar", "files", "markor", "clock", "settings"}

ALTERNATIVES: dict[str, tuple[str, Callable[[Script], Script], str]] = {
    "phone-with-country-code": ("contact-number-lookup[0]", _answering("+1 650-555-0133"), "answered +1 650-555-0133"),
    "time-24-hour": ("clock-earliest-alarm", _answering("05:40"), "answered as a 24-hour phone shows it"),
    "time-pm-24-hour": ("calendar-when-dentist", _answering("15:15"), "answered 15:15 for 3:15 PM"),
    "count-in-words": ("calendar-count-day", _answering("3 events"), "answered '3 events'"),
    "version-with-name": ("android-version", _answering("Android 14"), "answered 'Android 14'"),
    "note-as-list": ("calendar-to-markor", _typing("# December 18\n\n- Coffee with Ann\n- Haircut\n- Choir practice"),
                     "wrote a heading and a bulleted list"),
    "dialled-with-dashes": ("call-number[0]", lambda sol: [
        {**i, "type_text": {**i["type_text"], "text": "650-555-0101"}} if isinstance(i, dict) and "type_text" in i
        else i for i in sol], "typed the number with dashes"),
    "callback-from-keypad": ("callback-once[0]", _fixed([{"open_app": {"name": "phone"}}, *_dial("6505550168"), DONE]),
                             "dialled the number instead of tapping the call log"),
    "reply-from-new-chat": ("sms-reply[0]", _fixed([{"open_app": {"name": "messages"}}, *_text(
        "Grace", "Grace Hopper", "Yes, count me in")[1:], DONE]), "found the thread through Start chat"),
    "number-only": ("sms-share-contact-number[0]", _typing("+1 650-555-0142"), "sent the number alone, with +1"),
    "title-in-lower-case": ("calendar-add-event-dentist", lambda sol: [
        {"type_text": {**i["type_text"], "text": "dentist appointment"}}
        if isinstance(i, dict) and i.get("type_text", {}).get("text_contains") == "Add title" else i for i in sol],
        "typed the title in lower case"),
}


def _task(key: str) -> Any:
    [task] = [t for t in load_tasks([TASKS]) if t.key == key]
    return task


def _play(task: Any, script: Script, phone: Phone, out: Path) -> Any:
    server = PolicyServer(PolicyScript.from_data(script, source=f"{task.source}: adversary")).start()
    try:
        return run_episode(task, phone, server.endpoint("adversary"), out_dir=out,
                           profile=load_phone_profile("virtual"), screenshots=False)
    finally:
        server.stop()


def test_every_script_is_built_from_a_shipped_task() -> None:
    """Fast: the keys exist and every builder yields a script ending in task_complete."""
    for name, (key, build, _why) in {**OVERDOING, **ALTERNATIVES}.items():
        script = build(list(_task(key).solution))
        assert isinstance(script[-1], dict) and "task_complete" in script[-1], name
        PolicyScript.from_data(script, source=name)


def test_every_kind_and_app_has_an_over_doing_adversary() -> None:
    tasks = [_task(key) for key, _b, _w in OVERDOING.values()]
    assert KINDS <= {tag for t in tasks for tag in t.tags} | {"infeasible" for t in tasks if t.infeasible}
    assert APPS <= {t.app for t in tasks} | {tag for t in tasks for tag in t.tags}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(OVERDOING))
def test_doing_more_than_asked_is_not_a_success(name: str, virtual_phone: Any, tmp_path: Path) -> None:
    key, build, why = OVERDOING[name]
    task = _task(key)
    if name in CLOCK_AT:
        set_clock_today(virtual_phone, *CLOCK_AT[name])
    phone = Phone.connect(virtual_phone.serial)
    ep = _play(task, build(list(task.solution)), phone, tmp_path)
    assert ep.error is None, ep.error     # the episode ran; the model did too much
    assert ep.outcome in ("premature", "undone", "collateral"), f"{key}: {why} was judged {ep.outcome}"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ALTERNATIVES))
def test_another_right_way_is_a_success(name: str, virtual_phone: Any, tmp_path: Path) -> None:
    key, build, why = ALTERNATIVES[name]
    task = _task(key)
    phone = Phone.connect(virtual_phone.serial)
    ep = _play(task, build(list(task.solution)), phone, tmp_path)
    assert ep.error is None, ep.error
    assert ep.outcome == "success", f"{key}: {why} was judged {ep.outcome}"
