"""Phone.settle: one dump on a still screen; two agreeing dumps only when asked; the minimum delay
runs from the input; round trips counted into the step's tally, beside work apart."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from agent_host.agent.loop import render_key
from agent_host.phone.device import Phone, RoundTripTally, counting_into, submit_beside


@pytest.fixture
def phone(virtual_phone):
    return Phone.connect(virtual_phone.serial)


def test_settle_is_one_dump_and_confirm_is_two(phone):
    with counting_into(RoundTripTally()) as one:
        xml = phone.settle(3.0)
    assert one.critical == 1 and one.background == 0
    assert render_key(xml) == render_key(phone.dump())
    with counting_into(RoundTripTally()) as two:
        phone.settle(3.0, confirm=True, key=render_key)
    assert two.critical == 2          # a still screen: the second dump agrees at once


def test_minimum_delay_runs_from_the_input(phone):
    t0 = time.monotonic()
    phone.settle(3.0, min_s=0.3)
    assert time.monotonic() - t0 >= 0.3
    with counting_into(RoundTripTally()) as tally:
        phone.settle(3.0, min_s=0.3, since=time.monotonic() - 10)   # the input was long ago
    assert tally.wait_s < 0.3         # no delay left to wait: only the dump's own time


def test_work_beside_the_step_counts_apart(phone):
    pool = ThreadPoolExecutor(1)
    try:
        with counting_into(RoundTripTally()) as tally:
            fut = submit_beside(pool, lambda: phone.shell("echo hi"))
            phone.dump()
            assert fut.result().text == "hi"
        assert (tally.critical, tally.background) == (1, 1)
    finally:
        pool.shutdown()
