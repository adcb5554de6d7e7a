"""Where a server start's time goes, per build, side by side in one run: each build's server is
started as the demo starts it (serving/server.start: the same command line, environment and
readiness checks), its log followed as it is written, and the start split into phases by the
time each of vLLM's log lines arrives:

  import    from the spawn to vLLM's first log line: the interpreter, then importing vLLM's
            API server (torch, transformers, the OpenAI types, FastAPI) and parsing its arguments
  engine process  from there to the engine core's first line: the model's config, then the
            engine core's own process, which vLLM's CPU platform always spawns (never forks),
            so it imports vLLM again from scratch
  engine init  to the start of loading the weights (threads bound to the cores, the model built)
  weights   loading the weights (vLLM's own "took" figure beside it)
  kv cache  the KV cache made and the model's warm-up inside vLLM ("init engine ... took")
  server    from there to the HTTP server listening ("Application startup complete")
  ready     from there to the first successful request (agent-host's readiness: /health,
            /v1/models, one short greedy chat completion)

A phase whose line was not seen is `-` (and its time falls into the next one seen). With
--importtime it also imports vLLM's API server alone in a fresh interpreter (`python -X
importtime`), with the servers' environment, and prints the import time by top-level package:
what the `import` phase is made of.

    .venv/bin/python bench/server_start.py [--builds embedded-bf16,embedded-w4a16] [--repeats 2]
                                           [--importtime] [--json] [--keep-logs DIR]

Default builds: the demo's on this CPU (`agent-host demo`'s default). On a shared machine the
absolute figures move with the load; the phases' shares and the builds' differences, measured
minutes apart in one invocation, are the result.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PHASES = ("import", "engine process", "engine init", "weights", "kv cache", "server", "ready")
# The line that ends each phase but the last, searched in order, each after the one before
# (vLLM 0.32's wording). A vLLM log line is "LEVEL MM-DD hh:mm:ss [file.py:line] text", behind a
# "(APIServer pid=N)" or "(EngineCore pid=N)" prefix: the process that wrote it.
VLLM_LINE = re.compile(r"^(\(([A-Za-z_0-9]+) pid=\d+\) )?(DEBUG|INFO|WARNING|ERROR) \d\d-\d\d ")
MARKS = {
    "import": VLLM_LINE,
    "engine process": re.compile(r"^\(EngineCore[A-Za-z_0-9]* pid=\d+\) "),
    "engine init": re.compile(r"Starting to load model"),
    "weights": re.compile(r"Loading weights took|Model loading took"),
    "kv cache": re.compile(r"init engine .* took"),
    "server": re.compile(r"Application startup complete"),
}
WEIGHTS_TOOK = re.compile(r"(?:Loading weights|Model loading) took ([0-9.]+) ?s")


class LogFollower:
    """Lines of a growing log file, each with the monotonic time it was first seen (polled
    every 20 ms: the server writes unbuffered, so that is when vLLM wrote it, within 20 ms)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        pos, part = 0, b""
        while True:
            stopping = self._stop.is_set()
            try:
                with open(self.path, "rb") as f:
                    f.seek(pos)
                    chunk = f.read()
                    pos += len(chunk)
            except FileNotFoundError:
                chunk = b""
            if chunk:
                now = time.monotonic()
                *whole, part = (part + chunk).split(b"\n")
                self.lines += [(now, ln.decode("utf-8", "replace")) for ln in whole]
            if stopping:
                return
            time.sleep(0.02)

    def __enter__(self) -> LogFollower:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def phases(t0: float, lines: list[tuple[float, str]], ready: float) -> dict:
    """Seconds per phase from the lines' arrival times; None for a phase whose line was not seen
    (its time then counts in the next phase seen)."""
    out, last, i = {}, t0, 0
    for name in PHASES:
        end = ready
        if name in MARKS:
            hit = next((k for k in range(i, len(lines)) if MARKS[name].search(lines[k][1])), None)
            if hit is None:
                out[name] = None
                continue
            end, i = lines[hit][0], hit
        out[name] = round(end - last, 2)
        last = end
    out["total"] = round(ready - t0, 2)
    out["weights_vllm_says"] = next((float(m.group(1)) for _, ln in lines if (m := WEIGHTS_TOOK.search(ln))), None)
    out["processes"] = sorted({m.group(2) for _, ln in lines if (m := VLLM_LINE.match(ln)) and m.group(2)})
    return out


def measure(build, logs: Path, n: int) -> dict:
    """One timed start of `build`'s server, stopped once ready; its log kept in `logs`."""
    from agent_host.serving.server import start

    log_dir = logs / f"{build.id}-{n}"
    with LogFollower(log_dir / f"{build.id}.server.log") as follow:
        t0 = time.monotonic()
        with start(build, log_dir=log_dir) as srv:
            ready = time.monotonic()
            timings = dict(srv.timings)
        time.sleep(0.1)
    row = phases(t0, follow.lines, ready)
    row["readiness"] = {k: round(v, 2) for k, v in timings.items() if k in ("health", "models", "warmup")}
    return row


def import_profile(build) -> dict:
    """`import vllm.entrypoints.openai.api_server` alone, in a fresh interpreter with the
    servers' environment: wall seconds, and self time summed by top-level package."""
    from agent_host.serving.launch import plan

    spec = plan(build, port=0, api_key="x", seed=0)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import vllm.entrypoints.openai.api_server"],
                          env=spec.env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    by_top: dict[str, float] = defaultdict(float)
    for ln in proc.stderr.splitlines():
        parts = ln.split("|")
        if ln.startswith("import time:") and len(parts) == 3 and parts[0].split(":")[1].strip().isdigit():
            by_top[parts[2].strip().split(".")[0]] += int(parts[0].split(":")[1]) / 1e6
    top = dict(sorted(by_top.items(), key=lambda kv: -kv[1])[:10])
    return {"wall_s": round(wall, 2), "ok": proc.returncode == 0,
            "self_s_by_package": {k: round(v, 2) for k, v in top.items()},
            "self_s_total": round(sum(by_top.values()), 2)}


def default_ids() -> str:
    from agent_host.cli.demo import default_builds

    return default_builds()[0]


def _median(rows: list[dict], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(vals), 2) if vals else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--builds", default=None, help="comma-separated build ids (default: the demo's on this CPU)")
    ap.add_argument("--repeats", type=int, default=1, help="starts per build, alternating builds (default 1)")
    ap.add_argument("--importtime", action="store_true",
                    help="also import vLLM's API server alone (python -X importtime), by package")
    ap.add_argument("--keep-logs", type=Path, help="keep the servers' logs here (default: a temporary folder)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")

    from agent_host.config.hosts import find_build
    from agent_host.config.machine import read_host_facts, tier_description, vllm_cpu_library

    builds = [find_build(b.strip()) for b in (args.builds or default_ids()).split(",") if b.strip()]
    facts = read_host_facts()
    lib = vllm_cpu_library(facts)
    machine = f"{facts.cpu_model or 'CPU'}; vLLM library {lib} ({tier_description(lib)}); {facts.usable_cores} cores"
    rows: dict[str, list[dict]] = {b.id: [] for b in builds}
    from agent_host.serving.launch import plan

    for b in builds:   # a model made on first use is not a start (seen: GPTQ's 90 s counted as "import")
        print(f"[bench] {b.id}: its model made or found (not timed)", file=sys.stderr, flush=True)
        plan(b, port=0, api_key="x", seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        logs = args.keep_logs or Path(tmp)
        for n in range(args.repeats):        # alternating: a drift in the load touches every build
            for b in builds:
                print(f"[bench] {b.id}: start {n + 1}/{args.repeats}", file=sys.stderr, flush=True)
                try:
                    rows[b.id].append(measure(b, logs, n))
                except Exception as exc:  # one build failing does not end the comparison
                    rows[b.id].append({"error": str(exc).splitlines()[0]})
                print(f"[bench] {b.id}: {rows[b.id][-1]}", file=sys.stderr, flush=True)
    imports = None
    if args.importtime:
        print("[bench] importing vLLM's API server alone", file=sys.stderr, flush=True)
        imports = import_profile(builds[0])
    if args.json:
        print(json.dumps({"machine": machine, "starts": rows, "import_alone": imports}, indent=2))
        return 0
    _print(machine, rows, imports, args.repeats)
    return 0


def _print(machine: str, rows: dict[str, list[dict]], imports: dict | None, repeats: int) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(width=140)
    t = Table(title=f"server start, seconds per phase (median of {repeats}); {machine}", title_justify="left")
    t.add_column("phase")
    for bid in rows:
        t.add_column(bid, justify="right")
    f = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
    ok = {bid: [r for r in rs if "error" not in r] for bid, rs in rows.items()}
    for key in (*PHASES, "total", "weights_vllm_says"):
        t.add_row(key if key != "weights_vllm_says" else "(weights, vLLM's own figure)",
                  *[f(_median(ok[bid], key)) for bid in rows])
    t.add_row("processes logging", *[", ".join(ok[bid][0]["processes"]) if ok[bid] else "-" for bid in rows])
    for bid, rs in rows.items():
        for r in rs:
            if "error" in r:
                con.print(f"[red]{bid}: {r['error'][:200]}[/red]")
    con.print(t)
    if imports:
        con.print(f"import vllm.entrypoints.openai.api_server alone: {imports['wall_s']:.1f} s wall, "
                  f"{imports['self_s_total']:.1f} s of imports; by package (self time): "
                  + ", ".join(f"{k} {v:.1f} s" for k, v in imports["self_s_by_package"].items()))


if __name__ == "__main__":
    sys.exit(main())
