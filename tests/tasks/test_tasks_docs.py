"""docs/tasks.md lists what a task file may say: every check kind in its Checks table and every
action in its Tools paragraph, so a kind or an action added to the tables is documented too
(docs/architecture.md, "Adding things")."""

from __future__ import annotations

import re
from pathlib import Path

from agent_host.config.actions import ACTION_NAMES
from agent_host.config.checks import CHECK_KINDS

DOC = Path(__file__).resolve().parents[2] / "docs" / "tasks.md"


def _section(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def test_the_checks_table_names_every_check_kind():
    table = _section(DOC.read_text(encoding="utf-8"), "## Checks", "\n## ")
    rows = set(re.findall(r"^\| `(\w+)`", table, re.M))
    assert rows == set(CHECK_KINDS), "add a row to docs/tasks.md's Checks table"


def test_the_tools_paragraph_names_every_action():
    tools = _section(DOC.read_text(encoding="utf-8"), "\nTools: ", "The actions and")
    assert set(ACTION_NAMES) <= set(re.findall(r"`(\w+)`", tools)), "name it in docs/tasks.md's Tools paragraph"
