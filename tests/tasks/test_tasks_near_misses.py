"""One near-miss per task kind: what a careless model does, played as an episode on the virtual
phone through the real adb stack, must not be labelled a success (the reference solutions are)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_host.agent.episode import run_episode
from agent_host.config.phones import load_phone_profile
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone
from agent_host.policy.script import PolicyScript
from agent_host.policy.server import PolicyServer

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def _send(first: str, name: str, body: str) -> list[dict[str, Any]]:
    return [{"tap": {"text": "Start chat"}},
            {"type_text": {"resource_id": "recipient_text_view", "text": first, "submit": False}},
            {"tap": {"text": name}},
            {"type_text": {"resource_id": "compose_message_text", "text": body, "submit": False}},
            {"tap": {"desc": "Send SMS"}}, "press_back"]


DONE = {"task_complete": {"reason": "done"}}
OPEN_MESSAGES = {"open_app": {"name": "messages"}}

# kind -> (task key, near-miss script, what the model got wrong)
NEAR_MISSES = {
    "text-entry": ("sms-send-contact[0]", [
        OPEN_MESSAGES, *_send("Ada", "Ada Lovelace", "Running 10 minutes late")[:4], DONE],
        "typed the text but never tapped Send"),
    "text-entry-twice": ("sms-send-contact[1]", [
        OPEN_MESSAGES, *_send("Grace", "Grace Hopper", "The meeting moved to 3 PM")[:5],
        {"type_text": {"resource_id": "compose_message_text", "text": "The meeting moved to 3 PM", "submit": False}},
        {"tap": {"desc": "Send SMS"}}, DONE],
        "sent the message twice"),
    "multi-app": ("sms-share-contact-number[0]", [
        OPEN_MESSAGES, *_send("Grace", "Grace Hopper", "Alan Turing: (650) 555-0168"), DONE],
        "sent the number of another contact"),
    "retrieval": ("sms-bank-code[0]", [
        OPEN_MESSAGES, {"tap": {"text": "72622"}}, {"answer": {"text": "117304"}}, DONE],
        "answered the older, expired code"),
    "long-horizon": ("sms-send-three[0]", [
        OPEN_MESSAGES, *_send("Ada", "Ada Lovelace", "Dinner at 7 at the usual place"),
        *_send("Grace", "Grace Hopper", "Dinner at 7 at the usual place"), DONE],
        "stopped after two of the three recipients"),
    "infeasible": ("sms-unknown-contact[0]", [
        OPEN_MESSAGES, {"tap": {"text": "Start chat"}},
        {"type_text": {"resource_id": "recipient_text_view", "text": "6505550100", "submit": False}},
        {"tap": {"text_contains": "Send to"}},
        {"type_text": {"resource_id": "compose_message_text", "text": "See you at 6", "submit": False}},
        {"tap": {"desc": "Send SMS"}}, DONE],
        "texted a made-up number for a contact that does not exist"),
    "recognition": ("sms-new-number-once[0]@verify", [
        OPEN_MESSAGES, {"tap": {"text": "Grace Hopper"}},
        {"type_text": {"resource_id": "compose_message_text", "text": "My new number is 650-555-0199",
                       "submit": False}},
        {"tap": {"desc": "Send SMS"}}, DONE],
        "sent the number again although it had been sent already"),
    "long-horizon-calendar": ("calendar-add-event-dentist", [
        {"open_app": {"name": "calendar"}}, {"tap": {"desc": "Create new event"}},
        {"type_text": {"text_contains": "Add title", "text": "Dentist appointment"}},
        {"tap": {"desc": "Start date"}}, {"tap": {"desc": "Switch to text input mode"}},
        {"type_text": {"text_contains": "mm/dd/yyyy", "text": "12/15/2026"}}, {"tap": {"text": "OK"}},
        {"tap": {"desc": "Start time"}}, {"tap": {"text": "10"}}, {"tap": {"text": "00"}},
        {"tap": {"text": "AM"}}, {"tap": {"text": "OK"}},
        {"type_text": {"text_contains": "Add location", "text": "Smile Dental"}}, {"tap": {"text": "Save"}}, DONE],
        "never set the end time, so the event kept Calendar's default hour"),
    "recognition-settings": ("bluetooth-on-keep-wifi", [
        {"open_app": {"name": "settings"}}, {"tap": {"text": "Network & internet"}}, {"tap": {"text": "Internet"}},
        {"tap": {"text": "Wi-Fi"}}, "press_back", "press_back", {"tap": {"text": "Connected devices"}},
        {"tap": {"text": "Connection preferences"}}, {"tap": {"text": "Bluetooth"}}, {"tap": {"text": "Use Bluetooth"}},
        DONE],
        "toggled Wi-Fi, which was already on, on the way to Bluetooth"),
}


# The label each near miss earns: completing without the goal is premature (so is completing an
# impossible task); breaking a goal that held (the second copy, or the verify variant's
# already-sent message sent again) is undone.
WANT = {"text-entry": "premature", "text-entry-twice": "undone", "multi-app": "premature",
        "retrieval": "premature", "long-horizon": "premature", "infeasible": "premature", "recognition": "undone",
        "long-horizon-calendar": "premature", "recognition-settings": "premature"}


def _play(task: Any, script: list[Any], phone: Phone, out: Path) -> Any:
    server = PolicyServer(PolicyScript.from_data(script, source=f"{task.source}: near miss")).start()
    try:
        return run_episode(task, phone, server.endpoint("near-miss"), out_dir=out,
                           profile=load_phone_profile("virtual"), screenshots=False)
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(NEAR_MISSES))
def test_near_miss_is_not_a_success(kind: str, virtual_phone: Any, tmp_path: Path) -> None:
    key, script, why = NEAR_MISSES[kind]
    [task] = [t for t in load_tasks([TASKS]) if t.key == key]  # instance_id keys name no file
    phone = Phone.connect(virtual_phone.serial)
    miss = _play(task, script, phone, tmp_path / "miss")
    assert miss.error is None, miss.error  # the episode ran; only the model's work was wrong
    assert miss.outcome == WANT[kind], f"{key}: {why} was judged {miss.outcome}"
    if task.variant == "base":  # the same task played right succeeds: the check tells the two apart
        good = _play(task, task.solution, phone, tmp_path / "good")
        assert good.outcome == ("infeasible_claimed" if task.infeasible else "success"), good.error
