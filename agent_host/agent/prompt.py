"""The system prompt and the per-step user messages the model reads.

The tools are described here in text (their lines come from config/actions.py) as well as
passed as `tools`: the chat templates of many small models drop `tools`, and a model that never
hears of them cannot call them. Messages are only ever appended, so that the server's prefix
cache serves all but the newest turn; nothing here depends on later steps.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent_host.config.actions import prompt_lines

SYSTEM = """\
You operate an Android phone to achieve the user's goal. Each turn you see the screen and call \
exactly one tool; then you see the new screen.

Screen format: the first line gives the foreground app and the screen size; then one line per \
element: [index] Class "text" | "more text" desc="..." hint="..." id=... then states \
(checked=on/off, selected, disabled, focused) and what it does (tap, long-press, type, scroll, \
slide). `-- package --` starts another window. Indices change from screen to screen.

Tools:
{tools}

Rules: use as few steps as you can. If the goal already holds, call task_complete at once and \
change nothing. Do not undo your work: tapping a switch that is on turns it off. If what you \
need is not on screen, scroll or look elsewhere. Reply with one tool call; if you cannot make \
tool calls, reply with one JSON object {{"name": "<tool>", "arguments": {{...}}}}."""


def system_prompt(apps: Iterable[str], frame: str | None = None) -> str:
    """`frame`: the build's coordinate frame in words (None: no point actions, no line)."""
    return SYSTEM.format(tools="\n".join(prompt_lines(", ".join(sorted(set(apps))), frame)))


def first_message(goal: str, observation: str, max_steps: int) -> str:
    return (f"Goal: {goal}\n\nYou have at most {max_steps} steps.\n\n"
            f"Step 1. Current screen:\n{observation}")


def step_message(step: int, observation: str) -> str:
    return f"Step {step}. Current screen:\n{observation}"


def retry_message(error: str) -> str:
    return (f"Your reply was not a valid tool call: {error}. Reply with exactly one tool call "
            "for the current screen.")
