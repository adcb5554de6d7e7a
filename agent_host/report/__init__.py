"""report layer (see docs/architecture.md): reads run directories only.

`write_reports(run_dir, baseline=None, out=None)` writes report.md, report.html,
results.json and episodes.csv and returns their paths (keys md, html, json, csv) and the
results dict (key results).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


# Any: render.write_reports' summary, whose type lives in report/render.py
def write_reports(run_dir: str | Path, baseline: str | None = None, out: str | Path | None = None, screenshots: bool = True,
                  target: float = 0.10) -> dict[str, Any]:
    from agent_host.report.render import write_reports as _write
    return _write(run_dir, baseline=baseline, out=out, screenshots=screenshots, target=target)


__all__ = ["write_reports"]
