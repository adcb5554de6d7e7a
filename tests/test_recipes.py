"""Each "Adding things" recipe of docs/architecture.md, followed to the letter in a copy of the
repository: a throwaway check kind, action, server kind, virtual-phone app and report table are
added by exactly the edits the recipe names, and then used for real in a fresh interpreter.
If anything else needed editing (a hand-written union, a name compared elsewhere, a doc a test
checks), the copy fails here and the recipe is not true as written.

Every edit goes through `_insert`, which refuses an anchor that is not in the file exactly once,
so a recipe test breaks loudly when the code it edits moves, never silently passes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PARTS = ("agent_host", "virtual_phone", "tasks", "device_profiles", "docs", "tests", "pyproject.toml")

pytestmark = pytest.mark.slow


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of the repository's code, data, docs and tests."""
    dst = tmp_path / "repo"
    dst.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in PARTS:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=skip)
        else:
            shutil.copy2(src, dst / name)
    return dst


def _insert(path: Path, anchor: str, text: str, *, before: bool = False) -> None:
    """Put `text` right after (or before) `anchor`, which must occur exactly once."""
    body = path.read_text(encoding="utf-8")
    assert body.count(anchor) == 1, f"{path.name}: the recipe's anchor {anchor!r} moved"
    new = text + anchor if before else anchor + text
    path.write_text(body.replace(anchor, new, 1), encoding="utf-8")


def _python(root: Path, code: str) -> str:
    """Run `code` in a fresh interpreter that imports the copy; fail with its output."""
    env = {**os.environ, "PYTHONPATH": str(root), "AGENT_HOST_CACHE": str(root / ".cache")}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _pytest(root: Path, *ids: str) -> None:
    """The copy's own consistency tests (the ones a recipe names) must pass in it."""
    _python(root, f"import sys, pytest; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', *{list(ids)!r}]))")


def _regenerate_schema(root: Path) -> None:
    schema = _python(root, "from agent_host.cli import main; main(['tasks', 'schema'])")
    (root / "tasks" / "task.schema.json").write_text(schema, encoding="utf-8")


def test_a_check_kind_is_its_model_its_evaluator_and_its_docs(repo: Path):
    _insert(repo / "agent_host/config/checks.py", "\n\nCHECK_KINDS: dict[str, type[BaseModel]] = {", '''

class FileExistsSpec(Strict):
    path: str = Field(min_length=1)


class FileExistsCheck(Strict):
    file_exists: FileExistsSpec''', before=True)
    _insert(repo / "agent_host/config/checks.py", '"answer": AnswerCheck,', ' "file_exists": FileExistsCheck,')
    _insert(repo / "agent_host/judge/checks.py", '    "answer": _answer,\n',
            '    "file_exists": lambda c, facts: facts.outputs.get(f"test -e {c.file_exists.path}", ("", 1))[1] == 0,\n')
    _insert(repo / "agent_host/judge/checks.py", '    "answer": lambda c: [c.answer.shell] if c.answer.shell else [],\n',
            '    "file_exists": lambda c: [f"test -e {c.file_exists.path}"],\n')
    _insert(repo / "docs/tasks.md", "| `all` | `all: [check, check]`",
            "| `file_exists` | `file_exists: {path: /sdcard/a.txt}` | the path exists |\n", before=True)
    _regenerate_schema(repo)

    (repo / "probe.yaml").write_text(textwrap.dedent("""\
        id: file-made
        app: files
        goal: Make a file.
        max_steps: 5
        verify: false
        check:
          all:
            - file_exists: {path: /sdcard/Download/a.txt}
            - setting: {namespace: global, key: wifi_on, equals: "1"}
        """), encoding="utf-8")
    _python(repo, """
        from agent_host.config.tasks import load_tasks
        from agent_host.judge.checks import Facts, evaluate, shell_commands
        task = load_tasks(["probe.yaml"], variants=("base",))[0]
        cmds = shell_commands(task.check)
        assert cmds[0] == "test -e /sdcard/Download/a.txt", cmds
        ok = Facts(outputs={cmds[0]: ("", 0), cmds[1]: ("1", 0)})
        missing = Facts(outputs={cmds[0]: ("", 1), cmds[1]: ("1", 0)})
        assert evaluate(task.check, ok) and not evaluate(task.check, missing)
    """)
    _pytest(repo, "tests/tasks/test_tasks_checks.py::test_every_check_kind_has_an_evaluator_and_its_commands",
            "tests/tasks/test_tasks_files.py", "tests/tasks/test_tasks_docs.py", "tests/test_layers.py")


def test_an_action_is_its_row_its_perform_row_and_its_docs(repo: Path):
    _insert(repo / "agent_host/config/actions.py",
            '    ActionKind("long_press", IndexArgs, "Touch and hold element [index].", None, element=True),\n',
            '    ActionKind("double_tap", IndexArgs, "Tap element [index] twice.", "double_tap(index)", element=True),\n')
    _insert(repo / "agent_host/agent/perform.py", '    "long_press": (_long_press, _on_element("long_press")),\n',
            '    "double_tap": (_tap, _on_element("double_tap")),\n')
    _insert(repo / "docs/tasks.md", "`swipe` (`direction`, optional selector)",
            "`double_tap` (as `tap`), ", before=True)
    _insert(repo / "docs/policies.md", "The tools are the\nagent's:", " `double_tap`,")
    _regenerate_schema(repo)

    _python(repo, """
        from agent_host.agent.prompt import system_prompt
        from agent_host.agent.reply import parse_reply
        from agent_host.agent.tools import tool_schemas
        from agent_host.config.actions import ACTIONS
        from agent_host.policy.script import parse_item

        assert "double_tap" in [t["function"]["name"] for t in tool_schemas(["clock"])]
        assert "double_tap(index)" in system_prompt(["clock"])
        call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "double_tap", "arguments": '{"index": 3}'}}]}
        p = parse_reply(call, indices=[3], apps=["clock"])
        assert p.error is None and p.name == "double_tap" and p.args == {"index": 3}, p
        assert parse_reply(call, indices=[4], apps=["clock"]).error       # not on screen
        item = parse_item({"double_tap": {"text": "Alarm"}})     # a solution's selector form
        assert item.kind == "double_tap", item
    """)
    _pytest(repo, "tests/agent/test_agent_tools.py", "tests/policy/test_policies_doc.py::test_the_guide_names_every_tool",
            "tests/tasks/test_tasks_docs.py", "tests/tasks/test_tasks_files.py", "tests/test_layers.py")


def test_a_server_kind_is_its_row_its_module_and_its_line(repo: Path):
    _insert(repo / "agent_host/config/builds.py", '    "openai": ServerTraits(',
            '    "echo": ServerTraits(managed=True, local_model=False, scripted=True, prompt_logprobs=False),\n',
            before=True)
    (repo / "agent_host/serving/kinds/echo.py").write_text(textwrap.dedent('''\
        """`server: echo`: a throwaway kind (tests/test_recipes.py)."""

        from __future__ import annotations

        import sys

        from agent_host.config.builds import SERVER_KINDS, Build
        from agent_host.serving.endpoint import Endpoint
        from agent_host.serving.ready import Readiness
        from agent_host.serving.spec import LaunchSpec

        KIND = "echo"
        MANAGED = SERVER_KINDS[KIND].managed
        LOCAL_MODEL = SERVER_KINDS[KIND].local_model
        KEY_ENV: tuple[str, ...] = ("ECHO_KEY",)


        def plan(build: Build, *, port: int | None, api_key: str, seed: int) -> LaunchSpec:
            return LaunchSpec(argv=[sys.executable, "-m", "http.server", str(port)], env={}, env_set={"ECHO_KEY": api_key},
                              endpoint=Endpoint(f"http://127.0.0.1:{port}/v1", api_key, build.id, build.id, None),
                              readiness=Readiness(health=False, models=True, warmup=False))
        '''), encoding="utf-8")
    _insert(repo / "agent_host/serving/kinds/__init__.py", "from agent_host.serving.kinds import llama_cpp, openai, policy, vllm",
            "\nfrom agent_host.serving.kinds import echo")
    _insert(repo / "agent_host/serving/kinds/__init__.py", "_MODULES: tuple[ServerKind, ...] = (vllm, llama_cpp, policy, openai", ", echo")
    _insert(repo / "docs/architecture.md", "| `serving/kinds/llama_cpp.py` |",
            "| `serving/kinds/echo.py` | `server: echo`: a throwaway kind |\n", before=True)
    _insert(repo / "docs/builds.md", "`policy` (scripted policy server), ", "`echo` (a throwaway), ")

    _python(repo, """
        from agent_host.config.builds import Build
        from agent_host.serving.kinds import kind
        b = Build.model_validate({"id": "e", "weight_path": "none", "server": "echo", "model": "m"})
        assert b.traits.scripted and b.traits.managed
        spec = kind(b).plan(b, port=1234, api_key="k", seed=0)
        assert spec.argv[-1] == "1234" and "k" not in spec.argv and spec.endpoint.base_url.endswith("/v1")
    """)
    _pytest(repo, "tests/serving/test_serving_unit.py::test_server_kind_registry_matches_the_config_names",
            "tests/serving/test_serving_unit.py::test_no_caller_compares_a_server_kind_by_name",
            "tests/serving/test_serving_unit.py::test_the_builds_guide_names_every_server_kind",
            "tests/test_layers.py")


def test_a_virtual_phone_app_is_its_module_and_its_registration(repo: Path):
    (repo / "virtual_phone/apps/notes.py").write_text(textwrap.dedent('''\
        """A throwaway app (tests/test_recipes.py)."""

        from __future__ import annotations

        from ..core import App
        from .stub import StubApp

        PKG = "org.example.notes"
        APP = App(pkg=PKG, label="Notes", activity=f"{PKG}.Main", root=lambda: StubApp(PKG, f"{PKG}.Main", "Notes"))
        '''), encoding="utf-8")
    _insert(repo / "virtual_phone/apps/registry.py", "from . import calendar,", " notes,")
    _insert(repo / "virtual_phone/apps/registry.py", "        markor.APP,\n", "        notes.APP,\n")
    _insert(repo / "agent_host/config/phones.py", "DEFAULT_APPS: dict[str, str] = {\n",
            '    "notes": "org.example.notes",\n')

    _python(repo, """
        from agent_host.config.phones import load_phone_profile
        from virtual_phone.fs import VirtualFS
        from virtual_phone.world import World
        w = World(VirtualFS())
        assert w.rpc("exist", [{"text": "Notes", "mask": 1}])            # its launcher icon
        assert "package:org.example.notes" in w.shell("pm list packages notes").stdout.decode()
        w.shell("monkey -p " + load_phone_profile("virtual").package("notes") + " 1")
        assert w.fg == "org.example.notes", w.fg
    """)
    _pytest(repo, "tests/vphone/test_vphone_registry.py", "tests/test_layers.py")


def test_a_report_table_is_its_spec_its_name_and_its_two_placements(repo: Path):
    _insert(repo / "agent_host/report/tables.py", "\n\ndef provenance_table(results: Results) -> Table:", '''

def steps_table(results: Results) -> Table:
    """A throwaway table (tests/test_recipes.py): counted episodes per build."""
    cols = [Column("build (steps probe)", lambda b: Cell(b.build, cls="")),
            Column("counted episodes", lambda b: Cell(str(b.episodes)))]
    return Table.of(cols, results.builds)''', before=True)
    _insert(repo / "agent_host/report/render.py", '"sequential": sequential_table(results)',
            ', "steps": steps_table(results)')
    _insert(repo / "agent_host/report/render.py", "from agent_host.report.tables import (", "steps_table, ")
    _insert(repo / "agent_host/report/templates/report.md.j2", "{{ tables.builds.markdown() }}\n",
            "{{ tables.steps.markdown() }}\n")
    _insert(repo / "agent_host/report/templates/report.html.j2", "{{ table(tables.builds) }}\n",
            "{{ table(tables.steps) }}\n")

    out = _python(repo, """
        import sys, tempfile
        from pathlib import Path
        sys.path.insert(0, "tests")
        from fixtures_report import make_run
        from agent_host.report.render import write_reports
        run = make_run(Path(tempfile.mkdtemp()))
        write_reports(run, screenshots=False)
        md, html = (run / "report.md").read_text(), (run / "report.html").read_text()
        for text in (md, html):
            assert "build (steps probe)" in text and "counted episodes" in text
        print(md.split("build (steps probe)", 1)[1].split("\\n\\n", 1)[0])
    """)
    assert "|---|---|" in out      # rendered as the Markdown table its spec makes
    _pytest(repo, "tests/report/test_report_tables.py", "tests/test_layers.py")
