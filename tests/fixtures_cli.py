"""Helpers of the CLI tests: run `agent-host` as a user would, and read what it left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def waiter_profile(tmp: Path) -> Path:
    """A host profile whose one build, `waiter`, is a scripted policy that does nothing and
    waits a second per step: a run still going when a test signals it or breaks its files."""
    script = tmp / "slow.yaml"
    script.write_text("actions: []\nafter: wait\nwait_seconds: 1\n")
    hosts = tmp / "h.yaml"
    hosts.write_text(f"id: h\ndescription: d\nhardware_class: x86-avx2\nbuilds:\n"
                     f"  - {{id: waiter, weight_path: scripted, server: policy, script: {script}}}\n")
    return hosts

# A valid task file every malformed-file test starts from ({id} is filled in).
GOOD = textwrap.dedent("""\
    # yaml-language-server: $schema=./task.schema.json
    id: {id}
    goal: Turn on Wi-Fi.
    app: settings
    max_steps: 10
    setup:
      - shell: svc wifi disable
      - home
    goal_setup:
      - shell: svc wifi enable
    check:
      setting: {{namespace: global, key: wifi_on, equals: "1"}}
    solution:
      - open_app: {{name: settings}}
      - task_complete: {{reason: done}}
    """)


def agent_host(*args: str, cwd: Path, tmpdir: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    # this checkout's agent_host, whatever the cwd (an editable install may point at another worktree)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    if tmpdir is not None:
        tmpdir.mkdir(exist_ok=True)
        env["TMPDIR"] = str(tmpdir)
    return subprocess.run([sys.executable, "-m", "agent_host", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def assert_user_error(out: subprocess.CompletedProcess, *names: str) -> str:
    assert out.returncode != 0, out
    assert "Traceback" not in out.stderr, out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))
