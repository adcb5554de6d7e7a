"""What a screenshot costs a vision build's request, side by side with the same request without it:
each build's server is started as the demo starts it (serving/server.start), then the same
agent-like request (system prompt, a goal, bounded tools, tool_choice required, one call) is
asked with and without a PNG screenshot of the virtual phone's launcher as an image_url part,
alternating, --repeats times after one warm-up of each. Printed per build: the server's
start-to-ready seconds, the prompt tokens of each kind (vLLM's usage: the image's tiles become
prompt tokens) and the median wall seconds of a request, with the ratio image / no image.

    .venv/bin/python bench/vision_request.py [--builds tiny-vlm,tiny-vlm-bf16] [--repeats 5] [--json]

On a shared machine the absolute figures move with the load; the ratios, measured seconds apart
on one server, are the result. State the machine with the figures (it is printed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOOLS = [
    {"type": "function", "function": {
        "name": "tap", "description": "Tap the element with this index.",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["index"],
                       "properties": {"index": {"type": "integer", "minimum": 0, "maximum": 40}}}}},
    {"type": "function", "function": {
        "name": "task_complete", "description": "The goal holds.",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["reason"],
                       "properties": {"reason": {"type": "string", "maxLength": 24}}}}},
]


def screenshot_url() -> str:
    from agent_host.config.requests import png_data_url
    from virtual_phone.fs import VirtualFS
    from virtual_phone.world import World

    return png_data_url(World(VirtualFS()).screenshot_png())


def messages(image: str | None) -> list[dict]:
    parts: list[dict] = [{"type": "image_url", "image_url": {"url": image}}] if image else []
    return [{"role": "system", "content": "You operate an Android phone. Call exactly one tool."},
            {"role": "user", "content": parts + [{"type": "text", "text": "Goal: open the clock."}]}]


def ask(client, model: str, image: str | None) -> tuple[float, int]:
    t0 = time.monotonic()
    r = client.chat.completions.create(model=model, messages=messages(image), tools=TOOLS, tool_choice="required",
                                       parallel_tool_calls=False, max_tokens=64, temperature=0)
    wall = time.monotonic() - t0
    if not r.choices[0].message.tool_calls:
        raise RuntimeError(f"no tool call parsed: {r.choices[0].message}")
    return wall, r.usage.prompt_tokens


def measure(build, repeats: int, image: str, logs: Path) -> dict:
    from openai import OpenAI

    from agent_host.serving.server import start

    t0 = time.monotonic()
    with start(build, log_dir=logs) as srv:
        ready = time.monotonic() - t0
        ep = srv.endpoint
        client = OpenAI(base_url=ep.base_url, api_key=ep.api_key, max_retries=0, timeout=300)
        first = {"text": ask(client, ep.model, None)[0], "image": ask(client, ep.model, image)[0]}
        walls: dict[str, list[float]] = {"text": [], "image": []}
        tokens: dict[str, int] = {}
        for _ in range(repeats):      # alternating: a drift in the load touches both kinds
            for kind, img in (("text", None), ("image", image)):
                wall, prompt = ask(client, ep.model, img)
                walls[kind].append(wall)
                tokens[kind] = prompt
    med = {k: statistics.median(v) for k, v in walls.items()}
    return {"start_to_ready_s": round(ready, 1), "first_request_s": {k: round(v, 3) for k, v in first.items()},
            "prompt_tokens": tokens, "median_s": {k: round(v, 3) for k, v in med.items()},
            "ratio_image_to_text": round(med["image"] / med["text"], 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--builds", default="tiny-vlm", help="comma-separated vision build ids (default tiny-vlm)")
    ap.add_argument("--repeats", type=int, default=5, help="timed requests of each kind per build (default 5)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")

    from agent_host.config.hosts import find_build
    from agent_host.config.machine import read_host_facts

    facts = read_host_facts()
    machine = f"{facts.cpu_model or 'CPU'}; {facts.usable_cores} cores"
    image = screenshot_url()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for bid in [b.strip() for b in args.builds.split(",") if b.strip()]:
            print(f"[bench] {bid}", file=sys.stderr, flush=True)
            rows[bid] = measure(find_build(bid), args.repeats, image, Path(tmp))
    if args.json:
        print(json.dumps({"machine": machine, "repeats": args.repeats, "builds": rows}, indent=2))
        return 0
    print(f"machine: {machine}; {args.repeats} timed requests of each kind, medians")
    print(f"{'build':<16} {'ready s':>8} {'tokens text':>12} {'tokens image':>13} {'s text':>8} {'s image':>8} "
          f"{'image/text':>10}")
    for bid, r in rows.items():
        print(f"{bid:<16} {r['start_to_ready_s']:>8} {r['prompt_tokens']['text']:>12} {r['prompt_tokens']['image']:>13} "
              f"{r['median_s']['text']:>8} {r['median_s']['image']:>8} {r['ratio_image_to_text']:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
