"""Issue 32, item 5: Ctrl-C in the first second or so of `agent-host run` (while the verbs'
modules are still being imported, before main's handlers) printed a KeyboardInterrupt
traceback. Now it is exit 130 without one whenever it comes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixtures_cli import waiter_profile

ROOT = Path(__file__).resolve().parents[2]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# Ctrl-C at a terminal reaches a process whose SIGINT is at its default. One started in the
# background of a shell without job control (`nohup make test &`, as a CI rehearsal here was)
# inherits SIGINT ignored, and Python then leaves it ignored: a signal sent before the run
# installs its own handler was lost, and the run finished with 0 (seen at 0.0-0.4 s only, never
# in the foreground). The child gets the terminal's disposition, whatever ran the tests.
SIGINT_AT_A_TERMINAL = _default_sigint


def _started(tmp_path, phone, hosts) -> tuple[subprocess.Popen[bytes], Path]:
    """`agent-host run` with its imports timed on stderr (`-X importtime`), stderr going to a
    file (a pipe the test read too slowly filled up, and the child's next import line blocked
    in its write); returns once the agent_host package is imported, i.e. once the interpreter's
    own start-up (where a SIGINT is Python's to report, not ours: before its handler is
    installed it kills silently, during `site` it prints a traceback) is over. Under a loaded CI
    that start-up outlasted the 0.2 s this test waited from the spawn."""
    err = tmp_path / "stderr.txt"
    with err.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "agent_host", "run", "--builds", "waiter",
                                 "--host-profile", str(hosts), "--tasks", "wifi-on", "--variants", "base",
                                 "--phones", phone.serial, "--out", str(tmp_path / "run"), "--quiet",
                                 "--no-report"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=sink,
                                preexec_fn=SIGINT_AT_A_TERMINAL)
    deadline = time.monotonic() + 60
    while not any(line.rstrip().endswith("| agent_host") for line in err.read_text(errors="replace").splitlines()):
        assert time.monotonic() < deadline and proc.poll() is None, err.read_text(errors="replace")[-2000:]
        time.sleep(0.005)
    return proc, err


@pytest.mark.parametrize("delay", [0.0, 0.2, 0.4, 0.6, 0.9, 1.2, 1.5])
def test_sigint_during_start_up_exits_130_without_a_traceback(tmp_path, virtual_phone_factory, delay):
    phone = virtual_phone_factory()
    proc, path = _started(tmp_path, phone, waiter_profile(tmp_path))
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    err = "".join(line for line in path.read_text(errors="replace").splitlines(keepends=True)
                  if not line.startswith("import time:"))
    assert "Traceback" not in err, err
    # 130, or (rarely, seen once in 30 at ~0.9 s, cause not found) killed by SIGINT after the
    # same one line: a shell shows both as $? = 130
    assert proc.returncode in (130, -signal.SIGINT), (proc.returncode, err)
    # before main's handlers: "interrupted"; once the run has begun, its own two lines (stop, resume)
    assert 1 <= len(err.strip().splitlines()) <= 2, err


def test_a_ctrl_c_python_wrapped_while_a_class_was_made_is_still_an_interrupt(monkeypatch, capsys):
    """The rare traceback's cause: a KeyboardInterrupt raised inside `__set_name__` (pydantic's
    models, during an import) reaches main as a RuntimeError caused by it."""
    from agent_host import cli

    class Model:
        class Field:
            def __set_name__(self, owner: type, name: str) -> None:
                raise KeyboardInterrupt

    def interrupted_import(argv: object) -> int:
        type("M", (), {"f": Model.Field()})       # how Python wraps it: RuntimeError from KeyboardInterrupt
        return 0

    monkeypatch.setattr(cli, "_main", interrupted_import)
    assert cli.main([]) == 130
    assert capsys.readouterr().err.strip() == "interrupted"

    def broken(argv: object) -> int:
        raise RuntimeError("a real error")
    monkeypatch.setattr(cli, "_main", broken)
    with pytest.raises(RuntimeError, match="a real error"):
        cli.main([])
