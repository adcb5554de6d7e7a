"""Device latency profiles: seeded per-kind delays, applied by the virtual phone only when asked."""

from __future__ import annotations

import statistics
import time

import pytest

from virtual_phone import latency


def test_delays_follow_the_profile_medians_and_p95_by_seeded_simulation():
    prof = latency.get_profile("real-phone")
    lat = latency.Latency(prof, seed=7)
    for kind in latency.KINDS:
        draws = sorted(lat.delay_s(kind) * 1000 for _ in range(4000))
        fig = prof.figures[kind]
        assert statistics.median(draws) == pytest.approx(fig.median_ms, rel=0.06), kind
        assert draws[int(0.95 * len(draws))] == pytest.approx(fig.p95_ms, rel=0.12), kind


def test_same_seed_same_delays_other_seed_other_delays():
    a = latency.make("real-phone", seed=3)
    b = latency.make("real-phone", seed=3)
    c = latency.make("real-phone", seed=4)
    seq = [a.delay_s("dump") for _ in range(5)]
    assert seq == [b.delay_s("dump") for _ in range(5)]
    assert seq != [c.delay_s("dump") for _ in range(5)]


def test_no_profile_no_delay_and_unknown_names_are_errors():
    assert latency.make(None).delay_s("dump") == 0.0
    assert latency.make("none").delay_s("shell") == 0.0
    with pytest.raises(ValueError, match="unknown latency profile 'slow'.*real-phone"):
        latency.make("slow")


def test_rpc_methods_map_to_call_kinds():
    assert latency.rpc_kind("dumpWindowHierarchy") == "dump"
    assert latency.rpc_kind("takeScreenshot") == "screenshot"
    assert latency.rpc_kind("click") == "input"
    assert latency.rpc_kind("setText") == "input"
    assert latency.rpc_kind("deviceInfo") == "rpc"


def _median_s(fn, n=5) -> float:
    times = []
    for _ in range(n):
        t0 = time.monotonic()
        fn()
        times.append(time.monotonic() - t0)
    return statistics.median(times)


@pytest.mark.slow
def test_virtual_phone_applies_the_profile_through_the_real_adb_stack(virtual_phone, real_latency_phone):
    import adbutils
    import uiautomator2

    fast = uiautomator2.connect(virtual_phone.serial)
    slow = uiautomator2.connect(real_latency_phone.serial)
    slow_adb = adbutils.AdbClient(port=real_latency_phone.adb_port).device(real_latency_phone.serial)
    fast_adb = adbutils.AdbClient(port=virtual_phone.adb_port).device(virtual_phone.serial)
    fast.dump_hierarchy()
    slow.dump_hierarchy()
    assert _median_s(fast.dump_hierarchy) < 0.1          # the default stays fast
    assert 0.25 < _median_s(slow.dump_hierarchy) < 1.5   # median 450 ms
    assert _median_s(lambda: fast_adb.shell("echo hi")) < 0.03
    assert 0.03 < _median_s(lambda: slow_adb.shell("echo hi")) < 0.2   # median 60 ms
