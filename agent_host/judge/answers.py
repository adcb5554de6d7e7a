"""Comparing a model's answer with the expected one, in the formats Android shows a value in.

A phone set to 24-hour time shows "05:40" where a 12-hour one shows "5:40 AM" (with U+202F
before AM); Contacts shows "(650) 555-0133", a model may write "+1 650-555-0133"; a count may
come as "3", "3 events" or "three". Each format reads the value both sides mean and compares
that, so a correct answer in any of the phone's own spellings is accepted and a wrong value is
not. `text` keeps the plain rule: letters and digits only, case-folded.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agent_host.text import normalise, normalise_answer

# 5:40, 05:40, 17:40, 5.40, each optionally followed by am/pm, a.m./p.m.; or "5 am"
_TIME = re.compile(r"(?<![\d:.])(\d{1,2})(?:[:.h](\d{2}))?\s*([ap])?\.?\s*(m\b\.?)?(?![\d:])", re.IGNORECASE)
_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())}
_NUMBER = re.compile(r"(?<![\w.,])-?\d{1,3}(?:,\d{3})+(?!\w|[.,]\d)|(?<![\w.,])-?\d+(?:\.\d+)?(?!\w|[.,]\d)|[a-z]+")


def minutes_of_day(text: str) -> set[int]:
    """Every time of day written in `text`, as minutes after midnight. A bare hour counts only
    with am/pm ("7 AM"); "5:40" without either is read as 24-hour."""
    found: set[int] = set()
    for m in _TIME.finditer(normalise(text)):
        hour, minute, half, meridiem = m.group(1), m.group(2), m.group(3), m.group(4)
        if minute is None and not (half and meridiem):
            continue
        h, mi = int(hour), int(minute or 0)
        if mi > 59:
            continue
        if half and meridiem:
            if not 1 <= h <= 12:
                continue
            h = h % 12 + (12 if half.lower() == "p" else 0)
        elif h > 23:
            continue
        found.add(h * 60 + mi)
    return found


def national_digits(text: str) -> str:
    """The digits of a phone number without the country code of a North American one:
    "+1 (650) 555-0133", "1-650-555-0133" and "6505550133" all give 6505550133."""
    digits = re.sub(r"\D", "", text)
    return digits[1:] if len(digits) == 11 and digits.startswith("1") else digits


def numbers(text: str) -> list[float]:
    """The numbers written in `text`, as digits ("4,821", "3.5") or words up to twenty."""
    out: list[float] = []
    for tok in _NUMBER.findall(normalise(text)):
        if tok in _WORDS:
            out.append(_WORDS[tok])
        elif tok[-1].isdigit():
            value = float(tok.replace(",", ""))
            out.append(int(value) if value.is_integer() else value)
    return out


def _time(answer: str, want: str) -> bool:
    got, expected = minutes_of_day(answer), minutes_of_day(want)
    return len(expected) == 1 and got == expected


def _phone(answer: str, want: str) -> bool:
    got = national_digits(answer)
    return len(got) >= 3 and got == national_digits(want)


def _number(answer: str, want: str) -> bool:
    got, expected = numbers(answer), numbers(want)
    return len(expected) == 1 and got == expected


def _text(answer: str, want: str) -> bool:
    return normalise_answer(answer) == normalise_answer(want)


COMPARE: dict[str, Callable[[str, str], bool]] = {"text": _text, "time": _time, "phone": _phone, "number": _number}


def same_answer(answer: str, want: str, fmt: str = "text") -> bool:
    """True when `answer` says what `want` says, in format `fmt` (config/checks.AnswerFormat)."""
    return COMPARE[fmt](answer, want)
