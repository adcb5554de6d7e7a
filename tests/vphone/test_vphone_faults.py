"""Each fault knob produces what a client of a real, flaky phone sees."""

from __future__ import annotations

import time

import adbutils
import pytest

from virtual_phone.faults import FaultSpec, FaultState, parse_spec


def _device(phone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(host="127.0.0.1", port=phone.adb_port).device(phone.serial)


def _wait_state(phone, state: str, timeout: float = 15.0) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if phone.adb_state() == state:
            return time.monotonic() - t0
        time.sleep(0.1)
    raise AssertionError(f"{phone.serial} never became {state}; is {phone.adb_state()}")


def test_parse_spec():
    spec = parse_spec("drop_after=50,drop_at=30s,kill_u2_after=20,rpc_latency_ms=100,dialog_after=10")
    assert spec == FaultSpec(drop_after=50, drop_at=30.0, kill_u2_after=20, rpc_latency_ms=100,
                             dialog_after=10)
    assert parse_spec("drop_at=1.5,drop_for=500ms").drop_for == 0.5
    assert parse_spec(None) == FaultSpec() == parse_spec("none")
    for bad in ("drop_after", "explode=1", "drop_after=-1", "drop_at=soon"):
        with pytest.raises(ValueError):
            parse_spec(bad)


def test_counted_knobs_fire_once_counting_from_when_set():
    state = FaultState()
    state.note_request()
    state.update(parse_spec("drop_after=2,kill_u2_after=1"))
    assert [state.note_request() for _ in range(4)] == [False, False, True, False]
    assert state.note_rpc() == ["kill_u2"]
    assert state.note_rpc() == []


def test_drop_after_n_requests_is_an_adbutils_error_then_the_link_comes_back(virtual_phone_factory):
    phone = virtual_phone_factory(faults="drop_after=3")
    d = _device(phone)
    for i in range(3):
        assert d.shell(f"echo {i}") == str(i)
    with pytest.raises(adbutils.AdbError):
        d.shell("echo 3")
    # Like a phone whose Wi-Fi blinked: the adb server reconnects by itself.
    _wait_state(phone, "device")
    assert d.shell("echo back") == "back"


def test_drop_at_time_with_refusal_window(virtual_phone_factory):
    phone = virtual_phone_factory()
    # Set once attached: on a loaded machine `adb connect` alone can take longer than 0.3 s.
    phone.set_faults("drop_at=0.3s,drop_for=1.5s")
    d = _device(phone)
    assert d.shell("echo before") == "before"
    time.sleep(0.5)
    with pytest.raises(adbutils.AdbError, match="offline|closed|not found"):
        d.shell("echo after")
    assert phone.adb_state() == "offline"
    waited = _wait_state(phone, "device")
    assert waited > 0.5  # reconnection was refused for a while
    assert phone.faults.fired == ["drop"]


def test_u2_server_killed_is_restarted_by_the_client(virtual_phone, u2_device):
    assert virtual_phone.u2.running
    launches = virtual_phone.u2.launches
    assert virtual_phone.kill_u2()
    assert not virtual_phone.u2.running and not virtual_phone.world.u2_running
    assert u2_device.info["sdkInt"] == 34  # HTTPError inside u2 -> restart -> retry
    assert virtual_phone.u2.running
    assert virtual_phone.u2.launches == launches + 1


def test_kill_u2_after_n_rpcs(virtual_phone, u2_device):
    virtual_phone.set_faults("kill_u2_after=3")
    launches = virtual_phone.u2.launches
    for _ in range(6):
        u2_device.info
    assert virtual_phone.faults.fired == ["kill_u2"]
    assert virtual_phone.u2.launches == launches + 1


def test_rpc_latency(virtual_phone, u2_device):
    u2_device.info
    t0 = time.monotonic()
    u2_device.info
    fast = time.monotonic() - t0
    virtual_phone.set_faults("rpc_latency_ms=400")
    t0 = time.monotonic()
    u2_device.info
    slow = time.monotonic() - t0
    assert slow >= 0.4 > fast


def test_dialog_after_n_rpcs(virtual_phone, u2_device):
    assert "Battery low" not in u2_device.dump_hierarchy()
    virtual_phone.set_faults("dialog_after=1")
    u2_device.info
    xml = u2_device.dump_hierarchy()
    assert "Battery low" in xml
    u2_device(text="OK").click()
    assert "Battery low" not in u2_device.dump_hierarchy()


def test_runtime_control_through_the_shell(virtual_phone, u2_device):
    d = _device(virtual_phone)
    r = d.shell2("vphone-fault set rpc_latency_ms=250,dialog_after=100", v2=True)
    assert r.returncode == 0 and "rpc_latency_ms=250" in r.stdout
    assert "rpc_latency_ms=250" in d.shell("vphone-fault show")
    t0 = time.monotonic()
    u2_device.info
    assert time.monotonic() - t0 >= 0.25

    assert d.shell2("vphone-fault explode", v2=True).returncode == 2
    # adbutils' v1 exit-code suffix (`; echo X4EXIT:$?`) goes on to the world's shell
    r = d.shell2("vphone-fault clear")
    assert r.returncode == 0 and "faults cleared" in r.output
    assert virtual_phone.faults.spec == FaultSpec()

    launches = virtual_phone.u2.launches
    assert "killed" in d.shell("vphone-fault kill-u2")
    u2_device.info
    assert virtual_phone.u2.launches == launches + 1

    d.shell("vphone-fault dialog")
    assert "Battery low" in u2_device.dump_hierarchy()


def test_timed_kill_and_dialog(virtual_phone, u2_device):
    launches = virtual_phone.u2.launches
    virtual_phone.set_faults("kill_u2_at=0.2s,dialog_at=0.2s")
    time.sleep(0.6)
    assert sorted(virtual_phone.faults.fired) == ["dialog", "kill_u2"]
    assert not virtual_phone.u2.running
    assert "Battery low" in u2_device.dump_hierarchy()  # after the client restarted the server
    assert virtual_phone.u2.launches == launches + 1


def test_drop_from_the_shell_answers_first(virtual_phone_factory):
    phone = virtual_phone_factory()
    d = _device(phone)
    d.shell("vphone-fault set drop_for=2s")  # without it the adb server reconnects at once
    assert d.shell("vphone-fault drop") == "dropping transport"
    time.sleep(0.5)
    with pytest.raises(adbutils.AdbError):
        d.shell("echo gone")
    _wait_state(phone, "device")
