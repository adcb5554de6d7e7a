"""agent_host.phone.device: batch framing (pure) and Phone on the virtual phone."""

from __future__ import annotations

import pytest

from agent_host.phone.device import Phone, PhoneError, build_batch, parse_batch


def _fake_output(nonce: str, outputs: list[tuple[str, int]]) -> str:
    return "".join(f"@@AH{nonce}B{i}@@\n{out}@@AH{nonce}E{i}:{rc}@@\n" for i, (out, rc) in enumerate(outputs))


def test_parse_batch_keeps_output_exactly():
    cmds = ["a", "b", "c", "d"]
    outs = [("one\n", 0), ("no newline", 1), ("", 127), ("two\nlines\n\n", 0)]
    res = parse_batch(cmds, _fake_output("n1", outs), "n1")
    assert [(r.output, r.exit_code) for r in res] == outs
    assert [r.command for r in res] == cmds
    assert res[1].text == "no newline" and not res[1].ok


def test_parse_batch_ignores_lookalike_delimiters():
    # a command printing a delimiter of another nonce cannot confuse the framing
    fake = "\n@@AHzzzzE0:5@@\n"
    res = parse_batch(["x"], _fake_output("n2", [(fake, 0)]), "n2")
    assert res[0].output == fake and res[0].exit_code == 0


def test_parse_batch_missing_command_raises():
    with pytest.raises(ValueError):
        parse_batch(["a", "b"], _fake_output("n3", [("x", 0)]), "n3")


def test_build_batch_is_one_script_with_nonce():
    script, nonce = build_batch(["echo a", "false;"])
    assert nonce in script and script.count("@@AH") == 4 and ";;" not in script


# -- on the virtual phone ----------------------------------------------------------


@pytest.fixture
def phone(virtual_phone):
    return Phone.connect(virtual_phone.serial)


def test_shell_batch_real(phone):
    res = phone.shell_batch(["echo hello", "echo -n no-newline", "false", "true",
                             "svc wifi enable", "settings get global wifi_on", "ls /nonexistent-dir",
                             "echo '; rm -rf / $(reboot)'", "svc wifi disable", "settings get global wifi_on"])
    assert res[0].output == "hello\n" and res[0].exit_code == 0
    assert res[1].output == "no-newline" and res[1].exit_code == 0
    assert res[2].exit_code == 1 and res[2].output == ""
    assert res[3].exit_code == 0 and res[3].output == ""
    # the commands run in order in one shell: each read sees the write before it
    assert (res[4].exit_code, res[5].output, res[5].exit_code) == (0, "1\n", 0)
    assert res[6].exit_code != 0 and "/nonexistent-dir" in res[6].output
    assert res[7].output == "; rm -rf / $(reboot)\n"
    assert (res[8].exit_code, res[9].output) == (0, "0\n")


def test_shell_batch_is_one_adb_shell_call(phone, monkeypatch):
    calls = []
    real = phone.adb.shell

    def counting(*a, **kw):
        calls.append(a[0])
        return real(*a, **kw)

    monkeypatch.setattr(phone.adb, "shell", counting)
    res = phone.shell_batch([f"echo {i}" for i in range(8)])
    assert [r.text for r in res] == [str(i) for i in range(8)]
    assert len(calls) == 1


def test_dump_settle_and_fingerprint(phone):
    xml = phone.dump()
    assert "<hierarchy" in xml
    settled = phone.settle(2.0)
    assert settled == phone.dump()
    fp = phone.fingerprint()
    # every field read from the phone, each from its own command of the batch
    assert fp == {"serial": phone.serial, "manufacturer": "Google", "model": "VirtualPhone", "device": "vphone",
                  "release": "14", "sdk": "34", "screen": "1080x2400", "density": 420,
                  "build_fingerprint": phone.shell("getprop ro.build.fingerprint").text.strip()}
    assert fp["build_fingerprint"].startswith("google/vphone/vphone:14/")
    assert phone.screenshot_png()[:8] == b"\x89PNG\r\n\x1a\n"


def test_phone_error_when_dropped(virtual_phone):
    phone = Phone.connect(virtual_phone.serial)
    virtual_phone.set_faults("drop_after=0,drop_for=1")
    with pytest.raises(PhoneError):
        phone.shell("echo hi")
    with pytest.raises(PhoneError):
        phone.dump()


def test_remote_phone_through_another_adb_server(virtual_phone_factory):
    """HOST:PORT/SERIAL: the phone is attached only to a second adb server, which the
    session's own server (ANDROID_ADB_SERVER_PORT) knows nothing about."""
    from agent_host.phone.device import Phone, split_serial
    from virtual_phone import adb_server
    from virtual_phone.phone import free_port

    other = free_port()
    adb_server.ensure_server(other)
    try:
        vp = virtual_phone_factory(adb_port=other)
        spec = f"127.0.0.1:{other}/{vp.serial}"
        assert split_serial(spec) == (("127.0.0.1", other), vp.serial)
        phone = Phone.connect(spec)
        assert phone.serial == spec
        phone.shell("svc wifi enable")
        assert phone.shell("settings get global wifi_on").output == "1\n"
        assert vp.world.shell("settings get global wifi_on").stdout == b"1\n"   # it reached that phone
        assert "<hierarchy" in phone.dump()
        import adbutils
        local = {d.serial for d in adbutils.AdbClient().device_list()}
        assert vp.serial not in local
    finally:
        adb_server.kill_server(other)


def test_remote_serial_spec_errors_are_one_line():
    import pytest

    from agent_host.phone.device import PhoneError, split_serial

    with pytest.raises(PhoneError, match="HOST:PORT/SERIAL"):
        split_serial("10.0.0.7/abc")


def test_a_shell_call_is_one_adb_connection_closed_without_a_sleep(phone, monkeypatch):
    """adbutils opened a second connection per stream to ask the server's version, and slept
    10 ms closing each: 21 ms per shell call on the virtual phone, which answers in under 1."""
    import adbutils._adb as adb_mod
    opened, slept = [], []
    real_init = adb_mod.AdbConnection.__init__

    def counting_init(self, *a, **kw):
        opened.append(a)
        real_init(self, *a, **kw)
    monkeypatch.setattr(adb_mod.AdbConnection, "__init__", counting_init)
    # adbutils' module-level `time`, so only its own sleeps are seen
    monkeypatch.setattr(adb_mod, "time", type("T", (), {"sleep": staticmethod(slept.append)}))
    for i in range(3):
        assert phone.shell(f"echo {i}").text == str(i)
    assert len(opened) == 3 and slept == [], (opened, slept)
