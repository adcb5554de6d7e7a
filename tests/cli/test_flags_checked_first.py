"""Issue 32, item 5: flags refused before anything runs, in one line naming the flag.

Before: `agent-host episode --base-url 'http://[::1'` set the phone up (~20 s) and exited 0
with an errored episode; `agent-host builds --host-profile ''` listed every host profile."""

from __future__ import annotations

import time

import pytest

from agent_host.config.builds import Build

from fixtures_cli import agent_host, assert_user_error


@pytest.mark.parametrize("url", ["http://[::1", "ftp://127.0.0.1:1/v1", "http://"])
def test_episode_refuses_a_malformed_base_url_at_once(tmp_path, virtual_phone_factory, url):
    phone = virtual_phone_factory()
    t0 = time.monotonic()
    out = agent_host("episode", "--task", "wifi-on", "--phone", phone.serial, "--base-url", url, "--model", "m",
                     "--out", str(tmp_path / "ep"), "--quiet", cwd=tmp_path, timeout=120)
    assert_user_error(out, "--base-url", url)
    assert time.monotonic() - t0 < 15
    assert not (tmp_path / "ep").exists()


def test_a_build_base_url_is_checked_the_same_way():
    with pytest.raises(ValueError, match=r"'http://\[::1' is not a URL"):
        Build(id="b", weight_path="remote", server="openai", base_url="http://[::1", model="m")


@pytest.mark.parametrize("name", ["", " "])
def test_builds_refuses_an_empty_host_profile(tmp_path, name):
    out = agent_host("builds", "--host-profile", name, cwd=tmp_path)
    assert_user_error(out, "--host-profile is empty")
    assert out.stdout == ""
