"""A run directory that turns read-only during a run: the one-line RecordingFailed message was
followed by "During handling of the above exception" and an OSError traceback, raised by the
server's log note while the server was being stopped on the way out."""

from __future__ import annotations

from agent_host.config.builds import Build
from agent_host.serving.server import ManagedServer


def test_a_log_note_that_cannot_be_written_does_not_fail_the_stop(tmp_path):
    blocked = tmp_path / "servers"
    blocked.write_text("a file where the log directory should be")  # mkdir and open fail (ENOTDIR)
    server = ManagedServer(Build(id="b", weight_path="scripted", server="policy", script="x"),
                           log_dir=blocked, seed=0, startup_timeout=1, port=None)
    server._note("stopped after 0.1 s")  # before: NotADirectoryError
