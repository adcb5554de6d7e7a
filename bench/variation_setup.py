"""What varying the phone costs: an episode's setup (clean start, the task's setup, the
variation's commands, the first screen and the judge's start snapshot: step 0's wall time)
with `--vary none`, `light` and `full`, side by side on the same phone, interleaved so drift on
a shared machine hits all three, on the plain virtual phone and on one answering with the
real-phone latency profile (virtual_phone/latency.py). Each episode is the task's setup and one
`task_complete`; the variation's teardown runs after it.

Prints per task and phone the median setup time of each condition and the ratios to `none`.
Run:  .venv/bin/python bench/variation_setup.py [--repeats 3] [--phones virtual real-phone]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TASKS = ("wifi-on", "contact-number-lookup[0]", "sms-unread-count[0]", "calendar-count-day", "files-count-pdf",
         "alarm-set[0]")
CONDITIONS = ("none", "light", "full")
DONE = [{"task_complete": {"reason": "bench"}}]


def _setup_s(task, phone, profile, vary: str, seed: int) -> float:
    from agent_host.agent.episode import run_episode
    from agent_host.config.records import EpisodeIdentity
    from agent_host.policy.script import PolicyScript
    from agent_host.policy.server import PolicyServer

    server = PolicyServer(PolicyScript.from_data(DONE, source="bench")).start()
    out = Path(tempfile.mkdtemp(prefix="bench-vary-"))
    try:
        rec = run_episode(task, phone, server.endpoint("bench"), out_dir=out, profile=profile, screenshots=False,
                          identity=EpisodeIdentity.of("bench", task, seed=seed, vary=vary))
    finally:
        server.stop()
    assert rec.outcome != "error", (task.key, vary, rec.error)
    return float(json.loads((out / "steps.jsonl").read_text().splitlines()[0])["wall_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="episodes per task, phone and condition")
    ap.add_argument("--tasks", nargs="*", default=list(TASKS), help="task instance keys")
    ap.add_argument("--phones", nargs="*", default=["virtual", "real-phone"], choices=["virtual", "real-phone"],
                    help="the plain virtual phone, and one with the real-phone latency profile")
    args = ap.parse_args()

    from virtual_phone.phone import free_port

    adb_port = free_port()   # never 5037 (a developer's adb server) nor an emulator's
    os.environ["ANDROID_ADB_SERVER_PORT"] = str(adb_port)
    from agent_host.config.machine import manifest_facts
    from agent_host.config.phones import load_phone_profile
    from agent_host.config.tasks import load_tasks
    from agent_host.phone.device import Phone
    from virtual_phone import adb_server
    from virtual_phone.phone import VirtualPhone

    tasks = {t.key: t for t in load_tasks([Path(__file__).resolve().parents[1] / "tasks"], ("base",))}
    profile = load_phone_profile("virtual")
    m = manifest_facts()
    print(f"machine: {m['cpu_model']} ({m['hardware_class']}), {m['cores']} cores; {args.repeats} episodes each; "
          "median setup (step 0) in ms")
    print(f"{'phone':10} {'task':26} " + " ".join(f"{c:>7}" for c in CONDITIONS) + "   light/none full/none")
    adb_server.ensure_server(adb_port)
    ratios: dict[str, list[float]] = {c: [] for c in CONDITIONS[1:]}
    try:
        for latency in (None if p == "virtual" else p for p in args.phones):
            with VirtualPhone(adb_port=adb_port, latency=latency, seed=0) as vp:
                phone = Phone.connect(vp.serial)
                for key in args.tasks:
                    runs: dict[str, list[float]] = {c: [] for c in CONDITIONS}
                    for r in range(args.repeats):        # interleaved
                        for c in CONDITIONS:
                            runs[c].append(_setup_s(tasks[key], phone, profile, c, seed=r))
                    med = {c: statistics.median(v) for c, v in runs.items()}
                    for c in CONDITIONS[1:]:
                        ratios[c].append(med[c] / med["none"])
                    print(f"{latency or 'virtual':10} {key:26} " + " ".join(f"{med[c] * 1000:7.0f}" for c in CONDITIONS)
                          + f"   {med['light'] / med['none']:10.2f} {med['full'] / med['none']:9.2f}", flush=True)
    finally:
        adb_server.kill_server(adb_port)
    print("median ratio to none: " + ", ".join(f"{c} {statistics.median(v):.2f}" for c, v in ratios.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
