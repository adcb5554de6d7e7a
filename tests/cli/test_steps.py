"""Plain progress lines for a long step when output is not a terminal: ETA from the units'
rate (loading excluded), a line per change of phase, a heartbeat after 25 s of silence (a line every 30 s at most,
with the heartbeat thread's poll)."""

from __future__ import annotations

from agent_host.cli.steps import PlainProgress


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_lines_eta_and_heartbeat():
    clock, lines = Clock(), []
    p = PlainProgress("making m", lines.append, expect="~3 min", clock=clock)
    assert lines == ["making m: started (expect ~3 min)"]
    clock.t = 40.0
    p.update(0, 217, "loading")
    clock.t = 100.0                           # 60 s of loading, then 7 modules in 20 s
    p.update(0, 217, "GPTQ")
    clock.t = 120.0
    p.update(7, 217, "GPTQ")
    assert lines[-1] == "making m: GPTQ, 7/217, 2 min 00 s elapsed, ETA 10 min 00 s"
    clock.t = 121.0
    p.update(14, 217, "GPTQ")                 # within 5 s of the last line: not printed
    assert len(lines) == 4
    clock.t = 144.0
    p.beat()                                  # 24 s since the last line: none yet
    assert len(lines) == 4
    clock.t = 145.0
    p.beat()
    assert lines[-1] == "making m: GPTQ, 14/217, 2 min 25 s elapsed, ETA 10 min 52 s"
    clock.t = 160.0
    p.update(217, 217, "saving")
    assert lines[-1] == "making m: saving, 217/217, 2 min 40 s elapsed"


def test_exit_says_done_or_failed():
    lines: list[str] = []
    try:
        with PlainProgress("q", lines.append, clock=Clock()):
            raise RuntimeError("x")
    except RuntimeError:
        pass
    assert lines[-1] == "q: failed in 0 s"


def test_a_status_is_lines_without_its_repeated_label_and_at_most_one_per_change_gap():
    """Before: `err.status(...)` printed nothing when stderr was not a terminal, so a redirected
    demo sat silent through its fidelity probe and replay (9 min seen)."""
    from agent_host.cli.steps import _PlainStatus

    clock, lines = Clock(), []
    s = _PlainStatus("replay", lines.append, clock=clock)
    clock.t = 3.0
    s.update("replay: w4 1/40")
    assert lines[-1] == "replay: w4 1/40, 3 s elapsed"
    clock.t = 4.0
    s.update("replay: w4 2/40")                # a change within 2 s of the last line: held
    assert len(lines) == 1
    clock.t = 5.2
    s.update("replay: w4 3/40")
    assert lines[-1] == "replay: w4 3/40, 5 s elapsed"
    clock.t = 40.0
    s.beat()
    assert lines[-1] == "replay: w4 3/40, 40 s elapsed"


def test_a_status_refused_before_its_first_update_prints_nothing():
    """Its error is the command's one line (a replay refused by the run lock printed
    "replay: started" and "replay: failed in 0 s" above it)."""
    from agent_host.cli.steps import _PlainStatus

    lines: list[str] = []
    try:
        with _PlainStatus("replay", lines.append, clock=Clock()):
            raise RuntimeError("in use")
    except RuntimeError:
        pass
    assert lines == []


def test_a_run_off_a_terminal_prints_lines_per_build():
    import io

    from rich.console import Console

    from agent_host.cli.steps import PlainRunProgress, run_progress
    from agent_host.runs.execute import BuildProgress
    from agent_host.runs.progress import RunProgress

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=200)
    assert isinstance(run_progress(console, enabled=False), RunProgress)
    live = run_progress(console)
    assert isinstance(live, PlainRunProgress)
    with live:
        a = BuildProgress(build="bf16", total=4)
        a.done, a.outcomes["success"] = 1, 1
        live.hook(a, None)
    out = buf.getvalue().splitlines()
    assert out[0] == "episodes: started"
    assert out[1].startswith("episodes: bf16 1/4 ok 1, 1/4, ")
    assert out[-1].startswith("episodes: done in ")
