"""What each observation mode costs a prompt, and what a screenshot costs a step, on the
suite's first screens (docs/builds.md "Vision builds", docs/latency.md).

For each task (its clean start and setup played on a virtual phone, the screen settled): the
first user message as each mode sends it (agent/prompt.py, agent/vision.py), in characters
and text tokens, plus the image's estimated tokens: a vision encoder that cuts the image into
`--patch` x `--patch` pixel tiles, one token per tile after its merge (Qwen2-VL/2.5-VL: 14 px
patches merged 2x2, i.e. one token per 28x28 pixels, the default here; SmolVLM/Idefics3:
512 px tiles of 64 tokens each would be `--patch 64` only roughly). The image is the screenshot
shrunk to `--max-pixels` (default Qwen2.5-VL UI agents' 1280x28x28) or `--long-side`.

Tokens: the embedded SmolLM2 tokenizer when agent-host's cache holds it (after `agent-host
demo`), else the approximation bench/observe.py states. Time per screen (median of --repeat):
the phone's screenshot (uiautomator2's capture over adb: what a vision step waits for before
it can ask the model), shrinking and PNG-encoding it, and the set-of-marks drawing, beside the
hierarchy dump every step already takes.

    .venv/bin/python bench/observation_tokens.py [--tasks wifi-on ...] [--limit 8] [--repeat 5]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _median_ms(fn, repeat: int) -> tuple[float, object]:
    out, times = None, []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="*", help="task instance keys (default: --limit of the suite's, spread over it)")
    ap.add_argument("--limit", type=int, default=8, help="how many of the suite's tasks (default 8)")
    ap.add_argument("--repeat", type=int, default=5, help="timed repeats per screen (default 5)")
    ap.add_argument("--patch", type=int, default=28, help="pixels per image token side (default 28)")
    ap.add_argument("--max-pixels", type=int, default=1280 * 28 * 28, help="image budget (default 1003520)")
    ap.add_argument("--long-side", type=int, default=None, help="or shrink the long side to this")
    args = ap.parse_args()

    from virtual_phone.phone import free_port

    adb_port = free_port()   # never 5037 (a developer's adb server) nor an emulator's
    os.environ["ANDROID_ADB_SERVER_PORT"] = str(adb_port)
    from observe import pick_tokenizer

    from agent_host.agent import prompt, vision
    from agent_host.agent.loop import observe_xml
    from agent_host.config.machine import manifest_facts
    from agent_host.config.observation import OBSERVATION_MODES, ObservationSpec, image_size
    from agent_host.config.phones import load_phone_profile
    from agent_host.config.tasks import load_tasks
    from agent_host.phone.device import Phone
    from agent_host.phone.requirements import bind_task
    from agent_host.phone.state import clean_start
    from agent_host.phone.steps import run_steps
    from virtual_phone import adb_server
    from virtual_phone.phone import VirtualPhone

    count, how = pick_tokenizer(None)
    tasks = load_tasks([ROOT / "tasks"], ("base",))
    if args.tasks:
        tasks = [t for t in tasks if t.key in set(args.tasks)]
    else:
        tasks = tasks[:: max(1, len(tasks) // args.limit)][: args.limit]   # spread over the suite's apps
    profile = load_phone_profile("virtual")
    m = manifest_facts()
    print(f"machine: {m['cpu_model']} ({m['hardware_class']}), {m['cores']} cores; tokens: {how}")
    print(f"image: max_pixels {args.max_pixels}, long_side {args.long_side}; one image token per "
          f"{args.patch}x{args.patch} px; times: median of {args.repeat}")
    specs = {mode: ObservationSpec(mode=mode, max_pixels=args.max_pixels, long_side=args.long_side)
             for mode in OBSERVATION_MODES}
    head = f"{'task':28} {'mode':16} {'chars':>6} {'text tok':>8} {'img tok':>7} {'total':>6} {'x text':>6}"
    print(head)
    totals: dict[str, list[float]] = {mode: [] for mode in OBSERVATION_MODES}
    times: dict[str, list[float]] = {k: [] for k in ("dump", "screenshot", "shrink+png", "som+png")}
    adb_server.ensure_server(adb_port)
    try:
        with VirtualPhone(adb_port=adb_port, seed=0) as vp:
            phone = Phone.connect(vp.serial)
            for task in tasks:
                task = bind_task(task, phone)     # {phone.*} facts, as an episode binds them
                run_steps(clean_start(task.scope) + list(task.setup), phone, profile)
                obs = observe_xml(phone.settle(3.0))
                ms, _ = _median_ms(phone.dump, args.repeat)
                times["dump"].append(ms)
                ms, shot = _median_ms(phone.screenshot, args.repeat)
                times["screenshot"].append(ms)
                for key, mode in (("shrink+png", "screenshot"), ("som+png", "som")):
                    ms, _ = _median_ms(lambda: vision.encode(vision.shown_image(shot, obs.screen, specs[mode])),
                                       args.repeat)
                    times[key].append(ms)
                text_total = None
                for mode, spec in specs.items():
                    w, h = image_size(obs.screen.width, obs.screen.height, spec)
                    seen = vision.observation_text(spec, obs.text, (w, h)) if spec.images else obs.text
                    msg = prompt.first_message(task.goal, seen, task.max_steps)
                    text_tok = count(msg)
                    img_tok = math.ceil(w / args.patch) * math.ceil(h / args.patch) if spec.images else 0
                    total = text_tok + img_tok
                    text_total = text_total or total
                    totals[mode].append(total / text_total)
                    print(f"{task.key[:28]:28} {mode:16} {len(msg):6} {text_tok:8} {img_tok:7} {total:6} "
                          f"{total / text_total:6.2f}", flush=True)
    finally:
        adb_server.kill_server(adb_port)
    print("median prompt size of the first screen, x text: "
          + ", ".join(f"{mode} {statistics.median(v):.2f}" for mode, v in totals.items()))
    print("median ms per screen: " + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in times.items())
          + f"; screenshot / dump {statistics.median(times['screenshot']) / statistics.median(times['dump']):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
