"""`agent-host report RUN_DIR`: per-build success report from a run directory alone."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agent_host.errors import UserError

EPILOG = """\
examples:
  agent-host report reports/runs/20260101-120000-ab12
  agent-host report RUN_DIR --baseline w4a16 --out /tmp/rep
  agent-host report RUN_DIR --json | jq '.comparisons[0].sign_flip.p'

writes report.md, report.html (self-contained: open it from disk), results.json and
episodes.csv into --out (default: RUN_DIR). How to read it: docs/reports.md.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write a run's report (Markdown, HTML, JSON, CSV)",
                       description="Write a per-build success report from a run directory alone.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", metavar="RUN_DIR", type=Path, help="a run directory (reports/runs/<run-id>)")
    p.add_argument("--baseline", metavar="BUILD",
                   help="build the others are compared with (default: the manifest's reference build, else the first)")
    p.add_argument("--out", metavar="DIR", type=Path, help="where to write the files (default: RUN_DIR)")
    p.add_argument("--detect", metavar="PP", type=float, default=10.0,
                   help="difference in success rate (percentage points) the report says how many tasks or "
                        "repeats would detect with 80%% power (default: 10)")
    p.add_argument("--json", action="store_true", help="print results.json to stdout instead of the summary")
    p.add_argument("--no-screenshots", action="store_true", help="leave screenshots out of report.html (smaller file)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_host.report import write_reports

    if not 0 < args.detect <= 100:
        raise UserError("--detect must be more than 0 and at most 100 (percentage points)")
    try:
        paths = write_reports(args.run_dir, baseline=args.baseline, out=args.out,
                              screenshots=not args.no_screenshots, target=args.detect / 100)
    except OSError as exc:  # a full or read-only disk: each file is whole or untouched
        raise UserError(f"cannot write the report into {args.out or args.run_dir} "
                        f"({exc.strerror or exc}); earlier report files are left as they were") from None
    results = paths["results"]
    if args.json:
        print(json.dumps(results, indent=2, ensure_ascii=False, default=str))
        return 0

    from agent_host.cli.output import stdout_console
    from rich.markup import escape

    from agent_host.report.summary import power_line, summary_tables
    console = stdout_console()
    for table in summary_tables(paths["model"]):
        console.print(table)
    if (line := power_line(paths["model"])) is not None:
        console.print(escape(line), highlight=False, soft_wrap=True)
    for w in results["warnings"]:
        console.print(f"[yellow]warning:[/] {escape(w)}", highlight=False, soft_wrap=True)
    for key in ("html", "md", "json", "csv"):
        console.print(f"{key:>4}: {escape(str(paths[key]))}", highlight=False, soft_wrap=True)
    return 0
