"""docs/policies.md: every example block runs against the virtual phone through a real policy
server and ends in the outcome the comment before it states (so the guide cannot rot)."""

from __future__ import annotations

import re
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent_host.agent.episode import run_episode
from agent_host.cli import build_parser
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone

DOC = Path(__file__).resolve().parents[2] / "docs" / "policies.md"
EXAMPLE = re.compile(r"<!-- example: (?P<spec>[^>]*?) -->\n```yaml\n(?P<yaml>.*?)```", re.S)


def examples() -> list[tuple[dict[str, list[str]], str]]:
    out = []
    for m in EXAMPLE.finditer(DOC.read_text(encoding="utf-8")):
        spec = dict(kv.split("=", 1) for kv in m["spec"].split())
        out.append(({k: v.split(",") for k, v in spec.items()}, m["yaml"]))
    return out


EXAMPLES = examples()


def test_the_guide_has_an_example_of_each_format():
    text = "\n".join(y for _, y in EXAMPLES)
    assert len(EXAMPLES) >= 6
    for needle in ("after:", "retries:", "retry_wait:", "say:", "raw:", "suite:", "flaws:"):
        assert needle in text, needle
    for spec, _ in EXAMPLES:
        tasks = spec.get("task") or spec["tasks"]
        assert len(tasks) == len(spec["outcome"]), spec


@contextmanager
def serve(script: Path):
    """`agent-host policy serve --script SCRIPT --port 0`, as a user starts it -> its base URL."""
    proc = subprocess.Popen([sys.executable, "-m", "agent_host", "policy", "serve", "--script", str(script),
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("policy server: http://127.0.0.1:"), (line, proc.stderr.read() if not line else "")
        yield line.split()[2]
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.parametrize("spec,script", EXAMPLES,
                         ids=[f"{i}-{','.join(s.get('task') or s['tasks'])}" for i, (s, _) in enumerate(EXAMPLES)])
def test_example_runs_on_the_virtual_phone(spec, script, virtual_phone, virtual_profile, tmp_path):
    from agent_host.serving.endpoint import Endpoint

    path = tmp_path / "script.yaml"
    path.write_text(script, encoding="utf-8")
    tasks = spec.get("task") or spec["tasks"]
    with serve(path) as base_url:
        endpoint = Endpoint(base_url, "none", "policy", "policy", None)
        for n, (task_id, outcome) in enumerate(zip(tasks, spec["outcome"])):
            task = load_tasks([task_id], variants=("base",))[0]
            rec = run_episode(task, Phone.connect(virtual_phone.serial), endpoint,
                              out_dir=tmp_path / f"ep{n}", profile=virtual_profile, screenshots=False)
            assert rec.outcome == outcome, (task_id, rec.outcome, rec.reason, rec.error)
            if "steps" in spec:
                assert rec.steps == int(spec["steps"][n]), (task_id, rec.steps)
            if "wasted" in spec:
                assert rec.wasted_steps == int(spec["wasted"][n]), (task_id, rec.wasted_steps)


def _help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)
    return " ".join(capsys.readouterr().out.split())


def test_help_points_to_the_guide(capsys):
    """Issue 14: `policy serve --help` pointed to the source code, and its --script help
    ("or a task file's solution: use tasks check-solutions") read as a contradiction."""
    serve = _help(["policy", "serve", "--help"], capsys)
    assert "docs/policies.md" in serve and ".py" not in serve
    script_help = serve.split("options:", 1)[1].split("--script SCRIPT", 1)[1].split("--port", 1)[0]
    for shape in ("list", "actions", "suite"):
        assert shape in script_help, script_help
    assert "check-solutions" in script_help and "not a script" in script_help
    assert "docs/policies.md" in _help(["run", "--help"], capsys)


def test_the_guide_names_every_tool():
    """The guide's list of tools holds every tool of the agent (a new one is documented here too)."""
    from agent_host.agent.tools import TOOL_NAMES

    text = DOC.read_text(encoding="utf-8")
    listed = text.split("The tools are the\nagent's:", 1)[1].split(".", 1)[0]
    assert set(TOOL_NAMES) <= set(re.findall(r"`(\w+)`", listed)), TOOL_NAMES
