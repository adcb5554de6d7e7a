"""The check options that keep checks from over- or under-accepting: answer formats (time,
phone, number), a shell check's `count:` and `lines:`. Pure: outputs are given, no phone."""

from __future__ import annotations

import pytest

from agent_host.config.tasks import _CHECK
from agent_host.judge.answers import minutes_of_day, national_digits, numbers, same_answer
from agent_host.judge.checks import Facts, entry_lines, evaluate


@pytest.mark.parametrize("answer", ["5:40 AM", "5:40\u202fAM", "05:40", "5:40 a.m.", "5:40am",
                                    "The earliest alarm is at 5:40 AM.", "5.40 am"])
def test_time_accepts_every_spelling_android_shows(answer):
    assert same_answer(answer, "5:40 AM", "time")


@pytest.mark.parametrize("answer", ["5:40 PM", "17:40", "6:40 AM", "5:41", "540", "5:40 AM or 6:15 AM", ""])
def test_time_refuses_another_minute_or_two_answers(answer):
    assert not same_answer(answer, "5:40 AM", "time")


def test_time_reads_pm_and_noon_midnight():
    assert minutes_of_day("3:15 PM") == {15 * 60 + 15} == minutes_of_day("15:15")
    assert minutes_of_day("12:05 AM") == {5} and minutes_of_day("12:05 PM") == {12 * 60 + 5}
    assert minutes_of_day("7 AM") == {7 * 60} and minutes_of_day("7 items") == set()
    assert minutes_of_day("December 18, 2026") == set()


@pytest.mark.parametrize("answer", ["6505550133", "(650) 555-0133", "+1 650-555-0133", "1-650-555-0133",
                                    "650.555.0133", "+1\u00a0650\u2011555\u20110133"])
def test_phone_compares_national_digits(answer):
    assert same_answer(answer, "6505550133", "phone")


@pytest.mark.parametrize("answer", ["650-555-0134", "555-0133", "+44 650 555 0133", "6505550133 or 6505550168", ""])
def test_phone_refuses_other_numbers(answer):
    assert not same_answer(answer, "6505550133", "phone")
    assert national_digits("+1 (650) 555-0133") == "6505550133"


@pytest.mark.parametrize("answer", ["3", "3 events", "three", "Three.", "You have 3 unread messages"])
def test_number_accepts_digits_or_a_word(answer):
    assert same_answer(answer, "3", "number")


@pytest.mark.parametrize("answer", ["4", "2 or 3", "33", "3.5", "", "none"])
def test_number_refuses_another_or_two_numbers(answer):
    assert not same_answer(answer, "3", "number")
    assert numbers("4,821 files") == [4821]


def test_text_is_letters_and_digits_only():
    assert same_answer("  gym INDUCTION. ", "Gym induction")
    assert not same_answer("Gym", "Gym induction")


def _check(spec):
    return _CHECK.validate_python(spec)


def _eval(spec, out, rc=0):
    return evaluate(_check({"shell": spec}), Facts(outputs={spec["command"]: (out, rc)}))


ROWS = "Row: 0 number=6505550168, type=2\nRow: 1 number=6505550133, type=1\nRow: 2 number=6505550168, type=2\n"


def test_count_is_the_exact_number_of_matching_rows():
    spec = {"command": "q", "matches": r"^Row: \d+ number=6505550168, type=2$"}
    assert _eval(spec, ROWS)                                  # found: the old reading
    assert _eval({**spec, "count": 2}, ROWS)
    assert not _eval({**spec, "count": 1}, ROWS)              # the call made twice
    assert _eval({**spec, "count": 0}, "")                     # none, and the command answered
    assert not _eval({**spec, "count": 0}, "", rc=1)           # a failing command is never true
    assert _eval({"command": "q", "matches": r"type=2$", "count": 2}, ROWS)


def test_count_needs_matches_and_lines_excludes_matches():
    with pytest.raises(Exception, match="count counts the matches"):
        _check({"shell": {"command": "q", "count": 1}})
    with pytest.raises(Exception, match="one of matches, lines"):
        _check({"shell": {"command": "q", "matches": "x", "lines": ["a"]}})


WANT = ["Coffee with Ann", "Haircut", "Choir practice"]


@pytest.mark.parametrize("note", [
    "Coffee with Ann\nHaircut\nChoir practice\n",
    "# December 18\n\n- Coffee with Ann\n- Haircut\n- Choir practice\n",
    "1. Coffee with Ann\n2. Haircut\n3) Choir practice",
    "Events on December 18:\n* coffee with ann\n* HAIRCUT\n* Choir practice.",
    "- [ ] Coffee with Ann\n- [x] Haircut\n- [ ] Choir practice\n",
])
def test_lines_accept_list_markers_and_headings(note):
    assert _eval({"command": "cat n", "lines": WANT}, note)


@pytest.mark.parametrize("note", [
    "Haircut\nCoffee with Ann\nChoir practice\n",           # wrong order
    "Coffee with Ann\nHaircut\n",                            # one missing
    "Coffee with Ann, Haircut, Choir practice\n",            # not one per line
    "Coffee with Ann\nHaircut\nChoir practice\nDinner with Leo\n",   # an extra event
])
def test_lines_refuse_other_lists(note):
    assert not _eval({"command": "cat n", "lines": WANT}, note)
    assert entry_lines("## Title\n\n- a\n") == ["a"]


def test_answer_format_is_validated():
    assert _check({"answer": {"expected": "5:40 AM", "format": "time"}}).answer.format == "time"
    with pytest.raises(Exception):
        _check({"answer": {"expected": "5:40 AM", "format": "clock"}})
