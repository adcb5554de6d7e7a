"""A whole run as a user makes one: two scripted builds x 10 tasks x 3 repeats on two virtual
phones, killed with SIGKILL mid-run, resumed, then reported.

The builds are suite policies (agent_host.policy.suite): `oracle` plays every task's
reference solution; `flawed` makes seeded mistakes. A mistake is a pure function of the
episode's seed and goal, so every episode's outcome is known in advance: the test predicts
all 60 and checks the resumed run's log and the report against that prediction and against
statistics computed here by hand.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures_policy import write_suite_builds
from scipy import stats

from agent_host.policy.suite import flaw_for
from agent_host.config.tasks import load_tasks
from agent_host.runs.plan import derive_seed
from agent_host.runs.store import read_records

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TASKS = ["wifi-on", "wifi-off", "bluetooth-on", "bluetooth-off", "airplane-mode-on", "dark-theme-on",
         "dark-theme-off", "location-off", "auto-rotate-off", "fm-radio-on"]
FLAWS = {"premature": 0.25, "undo": 0.15, "unrecognised": 0.1, "wander": 0.1}
REPEATS = 3
SEED = 11
# What each mistake does to a toggle task (the solution's last action flips a switch) and to
# an infeasible one (fm-radio-on).
TOGGLE = {None: "success", "premature": "premature", "undo": "undone", "unrecognised": "unrecognised",
          "wander": "nav_fail"}
INFEASIBLE = {None: "infeasible_claimed", "premature": "premature", "undo": "infeasible_claimed",
              "unrecognised": "nav_fail", "wander": "nav_fail"}


def predicted() -> dict[str, str]:
    out = {}
    for task in load_tasks(TASKS, variants=("base",)):
        table = INFEASIBLE if task.infeasible else TOGGLE
        for r in range(REPEATS):
            seed = derive_seed(SEED, task.key, r)
            out[f"oracle__{task.id}__base__r{r}"] = table[None]
            out[f"flawed__{task.id}__base__r{r}"] = table[flaw_for(seed, task.goal, FLAWS)]
    return out


def write_builds(tmp: Path) -> Path:
    return write_suite_builds(tmp, FLAWS, "the run test")


def agent_host(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "agent_host", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, **kw)


def test_two_builds_killed_resumed_and_reported(tmp_path, virtual_phone_factory):
    expect = predicted()
    assert set(expect.values()) >= {"success", "premature", "undone", "nav_fail"}, \
        "the seeds should exercise several outcomes; pick another SEED"
    phones = [virtual_phone_factory(), virtual_phone_factory()]
    hosts = write_builds(tmp_path)
    run_dir = tmp_path / "run"
    common = ["--quiet", "--no-report"]

    proc = agent_host("run", "--builds", "oracle,flawed", "--host-profile", str(hosts),
                      "--tasks", ",".join(TASKS), "--variants", "base", "--repeats", str(REPEATS),
                      "--seed", str(SEED), "--phones", ",".join(p.serial for p in phones),
                      "--out", str(run_dir), *common)
    log = run_dir / "episodes.jsonl"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and len(log.read_bytes().splitlines()) >= 25:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.stdout.read()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    before = read_records(log)
    assert 25 <= len(before) < 60

    proc = agent_host("run", "--resume", str(run_dir), *common)
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out

    records = read_records(log)
    finished = [r for r in records if r.outcome != "error"]
    ids = [r.episode_id for r in finished]
    assert len(ids) == len(set(ids)) == 60, "every planned episode exactly once"
    assert {r.episode_id: r.outcome for r in finished} == expect
    assert [r.episode_id for r in records[:len(before)]] == [r.episode_id for r in before], \
        "resume only appends"

    import numpy as np

    from agent_host.report import intervals, write_reports
    results = write_reports(run_dir, baseline="oracle")["results"]
    builds = {b["build"]: b for b in results["builds"]}

    for build in ("oracle", "flawed"):
        per_task = {}
        for t in TASKS:
            outs = [expect[f"{build}__{t}__base__r{r}"] for r in range(REPEATS)]
            per_task[t] = sum(o in ("success", "infeasible_claimed") for o in outs) / REPEATS
        rates = list(per_task.values())
        got = builds[build]["rates"]["success"]
        assert got["mean"] == pytest.approx(statistics.mean(rates))
        # the Korn-Graubard interval of these per-task rates (docs/reports.md); never a point
        _, lo, hi = intervals.korn_graubard(np.array(rates), np.full(len(rates), float(REPEATS)))
        assert (got["low"], got["high"]) == (pytest.approx(float(lo)), pytest.approx(float(hi)))
        assert got["low"] < got["high"]
        assert builds[build]["episodes"] == 30
        assert builds[build]["errors"]["episodes"] == 0
    assert builds["oracle"]["rates"]["success"]["mean"] == 1.0

    cmp = next(c for c in results["comparisons"] if c["build"] == "flawed")
    diffs = []
    for t in TASKS:
        o = sum(expect[f"oracle__{t}__base__r{r}"] in ("success", "infeasible_claimed") for r in range(REPEATS))
        f = sum(expect[f"flawed__{t}__base__r{r}"] in ("success", "infeasible_claimed") for r in range(REPEATS))
        diffs.append((f - o) / REPEATS)
    assert cmp["mean_diff"] == pytest.approx(statistics.mean(diffs))
    lost = sum(d < 0 for d in diffs)
    assert (cmp["won"], cmp["lost"], cmp["tied"]) == (sum(d > 0 for d in diffs), lost, sum(d == 0 for d in diffs))
    # every episode pairs one to one: McNemar on discordant pairs = the flawed build's failures
    b = sum(expect[f"flawed__{t}__base__r{r}"] not in ("success", "infeasible_claimed")
            for t in TASKS for r in range(REPEATS))
    if b:
        assert cmp["mcnemar"]["p"] == pytest.approx(stats.binomtest(0, b, 0.5).pvalue)
