"""serving/kept.py: each build's server started once per command, started again only if it died."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agent_host.serving import server as serving
from agent_host.serving.kept import KeptServers


class FakeServer:
    def __init__(self, build_id: str):
        self.build_id, self.up = build_id, True

    def alive(self) -> bool:
        return self.up

    def stop(self) -> None:
        self.up = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


@pytest.fixture
def started(monkeypatch):
    out: list[FakeServer] = []

    def start(build, *, log_dir, seed, startup_timeout):
        out.append(FakeServer(build.id))
        return out[-1]

    monkeypatch.setattr(serving, "start", start)
    return out


BUILD = SimpleNamespace(id="b", startup_timeout_s=60)


def test_a_server_is_kept_until_close_and_started_again_only_if_it_died(tmp_path, started):
    with KeptServers(tmp_path) as kept:
        for _ in range(3):
            with kept.served(BUILD, log_dir=tmp_path / "elsewhere", startup_timeout=None) as s:
                assert s.alive()
        assert len(started) == 1
        started[0].up = False          # it died between two steps
        with kept.served(BUILD, log_dir=tmp_path, startup_timeout=None) as s:
            assert s is started[1]
        assert kept.starts == ["b", "b"]
    assert not any(s.alive() for s in started)   # every server stopped at the end


def test_without_keep_each_use_starts_and_stops_its_own(tmp_path, started):
    kept = KeptServers(tmp_path, keep=False)
    for _ in range(2):
        with kept.served(BUILD, log_dir=tmp_path, startup_timeout=None):
            pass
    assert len(started) == 2 and not any(s.alive() for s in started)
