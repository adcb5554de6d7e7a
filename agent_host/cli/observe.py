"""`agent-host observe FILE.xml`: what the model would see for a UI hierarchy dump."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agent_host.errors import UserError

DESCRIPTION = """\
Print the observation the model reads for a uiautomator hierarchy dump (the XML that
`uiautomator dump` or uiautomator2's dump_hierarchy writes): a header with the foreground
app and the screen size, then one line per UI element with the index that tap(index),
long_press(index), type_text(index, ...) and swipe(..., index) refer to.
"""

EPILOG = """\
line format:
  [index] Class "text" | "more text" desc="content-desc" hint="hint" id=short_resource_id
          checked=on|off selected disabled focused password  tap long-press type scroll slide
  Strings are JSON string literals. A row's text children are merged into the row; a switch
  without a label of its own carries its row's title (Switch "Wi-Fi" checked=on tap).
  `at=x,y` (the center) appears only on elements with no text, desc or id.

why a label is not shown:
  - the node has visible-to-user="false", zero area, or lies off the screen;
  - it is a wrapper with no text, no content-desc, no action and not checkable;
  - its text was merged into the clickable row that contains it (look at the row's line);
  - a content-desc equal to the element's text is not repeated; a text of only
    invisible characters (icon-font glyphs, zero-width spaces) or "null" counts as empty;
  - texts longer than 200 characters are cut with "…" (--json shows them whole).
  --why TEXT names, for each node holding TEXT, the element that shows it or the reason.
  --elements prints every kept element with its bounds, full resource id and flags.

examples:
  agent-host observe dump.xml
  agent-host observe dump.xml --elements
  agent-host observe dump.xml --why "Wi-Fi"
  agent-host observe dump.xml --json | jq '.elements[] | select(.checkable)'
  adb exec-out uiautomator dump /dev/tty | agent-host observe -
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "observe",
        help="print what the model sees for a UI hierarchy dump",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", metavar="FILE.xml", help="hierarchy dump; '-' reads standard input")
    p.add_argument("--json", action="store_true", help="print the parsed screen and its elements as JSON")
    p.add_argument(
        "--elements",
        action="store_true",
        help="after the observation, a table of every element with bounds, full resource id and flags",
    )
    p.add_argument(
        "--why",
        metavar="TEXT",
        help="explain every node whose text, content-desc or resource-id contains TEXT: which "
        "element shows it, or why it is not shown",
    )
    p.add_argument(
        "--screen",
        metavar="WxH",
        help="screen size in pixels when the dump holds only a dialog (default: inferred from the dump)",
    )
    p.set_defaults(func=_run)


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    f = Path(path)
    if f.is_dir():
        raise UserError(f"{path}: a directory, not a hierarchy dump (give the .xml file)")
    if not f.is_file():
        raise UserError(f"{path}: no such file")
    try:
        return f.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _screen_arg(value: str | None) -> tuple[int, int] | None:
    if not value:
        return None
    try:
        w, h = value.lower().split("x")
        size = int(w), int(h)
        if min(size) < 1:
            raise ValueError
        return size
    except ValueError:
        raise UserError(f"--screen: expected WIDTHxHEIGHT such as 1080x2400, got {value!r}") from None


def _run(args: argparse.Namespace) -> int:
    from agent_host.phone.parse import parse
    from agent_host.phone.render import render

    data = _read(args.file)
    try:
        screen = parse(data, screen=_screen_arg(args.screen))
    except ValueError as exc:
        raise UserError(f"{args.file}: {exc}") from None
    if args.json:
        sys.stdout.write(_json(screen.to_dict()) + "\n")
        return 0
    if args.why:
        from agent_host.phone.explain import explain

        lines = explain(data, args.why, screen=_screen_arg(args.screen))
        print("\n".join(lines) if lines else f"no node's text, content-desc or resource-id contains {args.why!r}")
        return 0 if lines else 1
    print(render(screen))
    if args.elements:
        _print_elements(screen)
    return 0


def _json(d: dict) -> str:
    """Valid JSON with one element per line (greppable, diffable)."""
    elements = d.pop("elements")
    head = json.dumps(d, ensure_ascii=False)[:-1]
    body = ",\n".join("  " + json.dumps(e, ensure_ascii=False) for e in elements)
    sep = ", " if d else ""
    return f'{head}{sep}"elements": [\n{body}\n]}}' if elements else f'{head}{sep}"elements": []}}'


def _print_elements(screen) -> None:

    from agent_host.cli.output import stdout_console
    from rich.table import Table

    t = Table(title="elements", show_lines=False)
    for col in ("#", "class", "bounds", "resource-id", "flags", "package"):
        t.add_column(col, no_wrap=col in ("#", "bounds"), overflow="fold")
    for e in screen.elements:
        flags = [f for f in ("checkable", "checked", "selected", "focused", "clickable", "long_clickable",
                             "scrollable", "editable", "password", "slider", "label_from_row", "list_item")
                 if getattr(e, f)]
        if not e.enabled:
            flags.append("disabled")
        t.add_row(str(e.index), e.cls, "[{},{}][{},{}]".format(*e.bounds).replace("[", r"\["),
                  " ".join(e.resource_ids), " ".join(flags), e.package)
    stdout_console().print(t)
