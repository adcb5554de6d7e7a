"""Text normalisation shared by the selector engine (phone/select.py) and the answer check
(judge/checks.py); imports nothing of the project.

Android renders labels with typographic characters that task authors write in ASCII:
"Wi‑Fi" has U+2011 (non-breaking hyphen), times put U+202F (narrow no-break space) before
AM/PM, some labels use U+00A0, en dashes or U+2212 (minus). `normalise` maps them all, so
a selector or an expected answer written in ASCII matches what the phone shows.
"""

from __future__ import annotations

import re

# U+2010..U+2015 (hyphen, non-breaking hyphen, figure dash, en dash, em dash, horizontal bar),
# U+2212 minus sign, U+FE63 small hyphen-minus, U+FF0D fullwidth hyphen-minus
_DASHES = str.maketrans({c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d"})
# \s covers U+00A0, U+2007, U+202F and the other Unicode spaces; U+200B (zero width space),
# U+2060 (word joiner) and U+FEFF (BOM) are not spaces but separate nothing either
_SPACES = re.compile(r"[\s\u200b\u2060\ufeff]+")
_NOT_ALNUM = re.compile(r"[\W_]+")


def normalise(s: str) -> str:
    """Case-folded, every run of whitespace one ASCII space, trimmed, Unicode hyphens and
    minus as ASCII '-'."""
    return _SPACES.sub(" ", s.translate(_DASHES)).strip().casefold()


def normalise_answer(s: str) -> str:
    """Only letters and digits, case-folded: an answer "4,821." or " 4 821 " equals "4821",
    "7:30 AM" equals "730am" (a model's punctuation and spacing are not its answer)."""
    return _NOT_ALNUM.sub("", normalise(s))
