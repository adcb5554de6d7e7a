"""The virtual phone's parts: no import circle, no late imports, and an app is one registration."""

from __future__ import annotations

import ast
from pathlib import Path

from agent_host.virtual_phone.apps.registry import installed
from agent_host.virtual_phone.apps.stub import StubApp
from agent_host.virtual_phone.core import App, AppHost, Intent
from agent_host.virtual_phone.fs import VirtualFS
from agent_host.virtual_phone.world import World

ROOT = Path(__file__).resolve().parents[1] / "agent_host" / "virtual_phone"
PKG = "agent_host.virtual_phone"


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, top_level_only: bool) -> set[str]:
    """Project modules `path` imports (TYPE_CHECKING blocks included: they hide circles too)."""
    mod = _module(path)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    if top_level_only:  # look inside `if TYPE_CHECKING:` at module level, not inside functions
        nodes = [n for top in tree.body for n in (ast.walk(top) if isinstance(top, ast.If) else [top])]
    found: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.ImportFrom):
            base = pkg.split(".")[: len(pkg.split(".")) - (n.level - 1)] if n.level else []
            target = ".".join(base + ([n.module] if n.module else [])) if n.level else (n.module or "")
            for alias in n.names:
                found.add(f"{target}.{alias.name}" if (ROOT.parent.parent / (f"{target}.{alias.name}".replace(
                    ".", "/") + ".py")).exists() else target)
        elif isinstance(n, ast.Import):
            found.update(a.name for a in n.names)
    return {m for m in found if m.startswith(PKG)}


def test_no_function_level_imports_of_project_modules():
    late = []
    for path in sorted(ROOT.rglob("*.py")):
        everywhere, top = _imports(path, False), _imports(path, True)
        late += [f"{path.name}: {m}" for m in sorted(everywhere - top)]
    assert late == []


def test_no_import_circle():
    graph = {_module(p): _imports(p, False) for p in ROOT.rglob("*.py")}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for dep in sorted(graph.get(m, ())):
            if state.get(dep) == 1:
                cycles.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, path + [dep])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


def test_a_new_app_is_one_registration():
    opened: list[str] = []

    def view(w: AppHost, intent: Intent) -> bool:
        opened.append(intent.data)
        return w.launch("org.example.notes")

    notes = App(pkg="org.example.notes", label="Notes", activity="org.example.notes.Main",
                root=lambda: StubApp("org.example.notes", "org.example.notes.Main", "Notes"),
                intents={"android.intent.action.VIEW": view})
    w = World(VirtualFS(), [*installed(), notes])
    assert w.rpc("exist", [{"text": "Notes", "mask": 1}])  # a launcher icon, no launcher edit
    assert "package:org.example.notes" in w.shell("pm list packages notes").stdout.decode()
    out = w.shell("am start -a android.intent.action.VIEW -d content://notes/1").stdout.decode()
    assert "Error" not in out and opened == ["content://notes/1"] and w.fg == "org.example.notes"
    w.shell("am start -n org.example.notes/.Main")
    assert w.fg == "org.example.notes"
