"""The layer map in docs/architecture.md holds: no import goes up a layer or sideways to a
peer (function-level imports included), and no module takes part in an import circle.

The map is the fenced ```layers block of docs/architecture.md: one line per layer, top first,
naming the packages (agent_host/<name>/) and top-level modules (agent_host/<name>.py) on it.
A module may import its own package and anything on a lower line. `agent_host/__init__.py`
and `__main__.py` are the entry points and may import anything.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "agent_host"
VPHONE = ROOT / "virtual_phone"
DOC = ROOT / "docs" / "architecture.md"
ENTRY = {"agent_host", "agent_host.__main__"}
# The root package holds only __version__: every layer may read it.
ROOT_PKG = "agent_host"

# Known breaks, each with the reason it is tolerated for now; both are empty and should stay so.
# A circle is allowed by the set of packages it spans.
KNOWN_CIRCLES: dict[frozenset[str], str] = {
}
KNOWN_UPWARD: dict[tuple[str, str], str] = {
}


def layer_map(text: str | None = None) -> list[list[str]]:
    text = DOC.read_text(encoding="utf-8") if text is None else text
    m = re.search(r"^```layers\n(.*?)^```", text, re.M | re.S)
    assert m, "docs/architecture.md has no ```layers block"
    return [line.split() for line in m.group(1).splitlines() if line.strip() and not line.startswith("#")]


def modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        rel = p.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = p
    return out


def imports(mods: dict[str, Path]) -> list[tuple[str, str, int, bool]]:
    """(importer, imported module, line, inside a function) for every project import."""
    out = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nested: set[int] = set()
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                nested |= {id(n) for n in ast.walk(fn) if n is not fn}
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".")
                    keep = len(parts) - node.level + (1 if path.name == "__init__.py" else 0)
                    base = ".".join(parts[:keep] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in dict.fromkeys(targets):
                # an enclosing package counts: its __init__ runs first, and may import this module
                if t in mods and t != name and t != ROOT_PKG:
                    out.append((name, t, node.lineno, id(node) in nested))
    return out


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def against_layers(edges, layers: list[list[str]]) -> list[str]:
    rank = {u: i for i, line in enumerate(layers) for u in line}
    bad = []
    for src, dst, line, nested in edges:
        if src in ENTRY:
            continue
        a, b = unit(src), unit(dst)
        missing = [u for u in (a, b) if u not in rank]
        if missing:
            bad.append(f"{src}: {missing[0]} is not in the layer map")
        elif a != b and rank[b] <= rank[a] and (a, b) not in KNOWN_UPWARD:
            how = "sideways to" if rank[b] == rank[a] else "up to"
            bad.append(f"{src}:{line} imports {dst}{' (in a function)' if nested else ''}: {how} {b}")
    return bad


def circles(edges) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for src, dst, _, _ in edges:
        graph[src].add(dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_every_package_is_on_the_map():
    placed = {u for line in layer_map() for u in line}
    units = {unit(m) for m in modules() if m not in ENTRY}
    assert units - placed == set(), "add these to the ```layers block of docs/architecture.md"
    assert placed - units == set(), "the layer map names packages that do not exist"


def test_no_import_goes_up_or_sideways():
    bad = against_layers(imports(modules()), layer_map())
    assert bad == [], "\n".join(bad)


def test_no_import_circles():
    found = [c for c in circles(imports(modules())) if frozenset(map(unit, c)) not in KNOWN_CIRCLES]
    assert found == [], "\n".join(" <-> ".join(c) for c in found)


def _project_imports(path: Path) -> set[str]:
    """Top-level names of the absolute imports in one file (relative ones stay in its package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_the_virtual_phone_imports_nothing_of_agent_host():
    bad = [str(p.relative_to(ROOT)) for p in VPHONE.rglob("*.py") if "agent_host" in _project_imports(p)]
    assert bad == [], "the virtual phone must stay importable without agent_host: " + ", ".join(bad)


def test_only_the_cli_imports_the_virtual_phone():
    bad = [name for name, path in modules().items()
           if unit(name) != "cli" and name not in ENTRY and "virtual_phone" in _project_imports(path)]
    assert bad == [], "only agent_host.cli (and tests, bench) may import virtual_phone: " + ", ".join(bad)


def test_the_checker_finds_what_it_should():
    """The checks themselves: an upward import, a function-level one, a circle."""
    layers = [["cli"], ["agent", "policy"], ["config"]]
    edges = [("agent_host.config.a", "agent_host.agent.b", 3, True),
             ("agent_host.agent.b", "agent_host.config.a", 1, False),
             ("agent_host.cli.x", "agent_host.config.a", 1, False),
             ("agent_host.policy.p", "agent_host.agent.b", 2, False)]
    assert against_layers(edges, layers) == [
        "agent_host.config.a:3 imports agent_host.agent.b (in a function): up to agent",
        "agent_host.policy.p:2 imports agent_host.agent.b: sideways to agent"]
    assert circles(edges) == [["agent_host.agent.b", "agent_host.config.a"]]
    assert layer_map("x\n```layers\ncli\n# comment\nruns report\n```\n") == [["cli"], ["runs", "report"]]
    mods = modules()
    found = {(s, d, nested) for s, d, _, nested in imports(mods)}
    assert ("agent_host.cli.run", "agent_host.config.tasks", True) in found   # a function-level import


def test_an_import_of_the_enclosing_package_is_an_edge(tmp_path):
    """Issue 22: kinds/vllm.py imported `key_env` from its own package, whose __init__ imports
    kinds/vllm.py: a circle the checker skipped because the target enclosed the importer."""
    pkg = tmp_path / "kinds"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from agent_host.serving.kinds import vllm\n")
    (pkg / "vllm.py").write_text("def plan():\n    from agent_host.serving.kinds import key_env\n")
    mods = {"agent_host.serving.kinds": pkg / "__init__.py", "agent_host.serving.kinds.vllm": pkg / "vllm.py"}
    assert circles(imports(mods)) == [["agent_host.serving.kinds", "agent_host.serving.kinds.vllm"]]


def test_the_module_map_lists_every_module():
    """Issue 22: docs/architecture.md's module map names every module, so a newcomer finds each
    one's job there; a module added without its row fails here."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Module map"):text.index("\n## ", text.index("## Module map") + 3)]
    named = set(re.findall(r"`([a-z0-9_]+(?:/[a-z0-9_]+)*\.py)`", section))
    mods = {p.relative_to(PKG).as_posix() for p in PKG.rglob("*.py")
            if p.name != "__init__.py" and p.parent.name != "amx_boot"}
    assert sorted(mods - named) == [], "add a row to the module map in docs/architecture.md"
    gone = [n for n in named - mods if not n.startswith(("bench/", "tests/", "scripts/")) and not (ROOT / n).exists()]
    assert sorted(gone) == [], \
        "the module map names modules that do not exist"


def test_the_report_reads_run_directories_only():
    """docs/architecture.md: the report reads run directories only, through config: it may
    import config, errors and text, nothing that drives a phone, a model or a judge
    (report/trivial.py once imported judge.outcome; the outcome rule now lives in config)."""
    allowed = {"report", "config", "errors", "text"}
    bad = [f"{src}:{line} imports {dst}" for src, dst, line, _ in imports(modules())
           if unit(src) == "report" and unit(dst) not in allowed]
    assert bad == [], "\n".join(bad)


# Where work may start beside the step: the one helper that carries the episode's context (its
# deadline, its round-trip tally) into the new thread, and the watchdog's own thread.
BESIDE_HELPERS = {("agent_host.phone.device", "submit_beside"), ("agent_host.watchdog", "call")}
STEP_UNITS = ("agent", "phone", "judge")


def thread_starts(mods: dict[str, Path]) -> list[str]:
    """Calls in agent/, phone/ and judge/ that start work on another thread outside the helpers
    above: `.submit(...)` or `.map(...)` on a pool, `Thread(...)`, `Timer(...)`,
    `start_new_thread(...)`, `run_in_executor(...)`."""
    starts = {"submit", "Thread", "Timer", "start_new_thread", "run_in_executor"}
    bad = []
    for mod, path in mods.items():
        if unit(mod) not in STEP_UNITS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        allowed = {id(n) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and (mod, fn.name) in BESIDE_HELPERS for n in ast.walk(fn)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or id(node) in allowed:
                continue
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in starts or (name == "map" and isinstance(f, ast.Attribute)
                                  and "pool" in ast.unparse(f.value).lower()):
                bad.append(f"{mod}:{node.lineno} {ast.unparse(f)}(...)")
    return sorted(bad)


def test_work_beside_the_step_carries_the_episodes_context():
    """Issue 35: the judge and the screenshots run on their own threads, and the episode's
    deadline and round-trip tally travel in context variables; a thread started without copying
    the context escapes both silently. So every thread in the step's layers starts through
    `phone.device.submit_beside`."""
    assert thread_starts(modules()) == [], "start it with agent_host.phone.device.submit_beside"


def test_the_thread_check_finds_a_bare_submit(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import threading\nfrom concurrent.futures import ThreadPoolExecutor\n"
                   "def f(pool):\n    pool.submit(print)\n    threading.Thread(target=print).start()\n")
    assert thread_starts({"agent_host.agent.m": src}) == [
        "agent_host.agent.m:4 pool.submit(...)", "agent_host.agent.m:5 threading.Thread(...)"]
    assert thread_starts({"agent_host.report.m": src}) == []    # other layers start their own
