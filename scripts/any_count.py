"""Count `Any` in function signatures per 1000 lines of agent_host/ and virtual_phone/ (issue 35's
measure), and list the parameters whose name says they are one of the project's own types
(phone, profile, task, endpoint, build, ...) yet are typed bare `Any`.

    .venv/bin/python scripts/any_count.py [--list]
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEAM_NAMES = {"phone", "profile", "task", "tasks", "endpoint", "build", "builds", "judge", "screen", "store"}


def _mentions_any(node: ast.AST | None) -> bool:
    return node is not None and any(isinstance(n, ast.Name) and n.id == "Any" or
                                    isinstance(n, ast.Attribute) and n.attr == "Any" for n in ast.walk(node))


def scan(roots: list[Path]) -> tuple[int, int, list[str]]:
    lines = signatures = 0
    seams: list[str] = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            lines += text.count("\n")
            for fn in ast.walk(ast.parse(text)):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs,
                        *filter(None, [fn.args.vararg, fn.args.kwarg])]
                if any(_mentions_any(a.annotation) for a in args) or _mentions_any(fn.returns):
                    signatures += 1
                for a in args:
                    bare = isinstance(a.annotation, ast.Name) and a.annotation.id == "Any"
                    if bare and a.arg.lower() in SEAM_NAMES:
                        seams.append(f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name}({a.arg}: Any)")
    return lines, signatures, seams


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--list", action="store_true", help="list the seam parameters typed bare Any")
    args = p.parse_args()
    lines, signatures, seams = scan([ROOT / "agent_host", ROOT / "virtual_phone"])
    print(f"{signatures} signatures with Any in {lines} lines: {1000 * signatures / lines:.1f} per 1000 lines; "
          f"{len(seams)} seam parameters typed bare Any")
    if args.list:
        print("\n".join(seams))


if __name__ == "__main__":
    main()
