"""What judging the whole state costs: the same reference-solution episodes played with the
whole-state judge (the task's scope read every step, a clean start) and with the check alone
(no scope: the judge before it), side by side, on the virtual phone and on one answering with
the real-phone latency profile (virtual_phone/latency.py).

Prints per task and phone: the judge's time per step (median), the step's wall time (median),
setup time, and the ratios whole/check-only. The judge runs beside the next model request, so
its time reaches a step's wall time only where it outlasts the model; the target is a step no
more than 10% slower. Run:  .venv/bin/python bench/judge_state.py [--repeats 3]
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

TASKS = ("sms-send-contact[0]", "calendar-add-event-dentist", "markor-delete-note", "wifi-on", "call-number[0]",
         "contacts-add-two-and-text")
TARGET_STEP_RATIO = 1.10



def _episode(task, phone, profile, whole: bool) -> dict[str, float]:
    from agent_host.agent.episode import run_episode
    from agent_host.config.scope import Scope
    from agent_host.policy.script import PolicyScript
    from agent_host.policy.server import PolicyServer

    if not whole:
        task = task.model_copy(update={"scope": Scope()})
    server = PolicyServer(PolicyScript.from_data(task.solution, source="bench")).start()
    out = Path(tempfile.mkdtemp(prefix="bench-judge-"))
    try:
        rec = run_episode(task, phone, server.endpoint("bench"), out_dir=out, profile=profile, screenshots=False)
    finally:
        server.stop()
    assert rec.outcome == "success", (task.key, rec.outcome, rec.error)
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    return {"judge": statistics.median(s["times"]["judge"] for s in steps[1:]),
            "step": statistics.median(s["wall_s"] for s in steps[1:]),
            "setup": steps[0]["wall_s"], "episode": rec.wall_s}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="episodes per task, phone and judge")
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
          "times as check-only->whole-state")
    print(f"{'phone':10} {'task':28} {'judge ms':>17} {'step ms':>17} {'setup ms':>17} {'step ratio':>10}")
    adb_server.ensure_server(adb_port)
    worst = 0.0
    try:
        for latency in (None if p == "virtual" else p for p in args.phones):
            with VirtualPhone(adb_port=adb_port, latency=latency, seed=0) as vp:
                phone = Phone.connect(vp.serial)
                for key in args.tasks:
                    runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
                    for _ in range(args.repeats):      # interleaved, so drift on a shared machine hits both
                        for w in (False, True):
                            runs[w].append(_episode(tasks[key], phone, profile, w))
                    med = {w: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for w, rs in runs.items()}
                    ratio = med[True]["step"] / med[False]["step"]
                    worst = max(worst, ratio)
                    print(f"{latency or 'virtual':10} {key:28} "
                          + " ".join(f"{med[False][k] * 1000:7.0f}->{med[True][k] * 1000:<7.0f}"
                                     for k in ("judge", "step", "setup"))
                          + f" {ratio:10.3f}{'' if ratio <= TARGET_STEP_RATIO else '  OVER'}", flush=True)
    finally:
        adb_server.kill_server(adb_port)
    print(f"worst step ratio whole-state/check-only: {worst:.3f} (target <= {TARGET_STEP_RATIO})")
    return 0 if worst <= TARGET_STEP_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
