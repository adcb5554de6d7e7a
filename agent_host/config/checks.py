"""Task checks (`check:`) as data: what must hold for the goal. judge/checks.py evaluates them
(a table from check kind to evaluator); nothing here touches a phone or reads an output."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Self, TypeAlias, Union

from pydantic import BaseModel, Field, field_validator, model_validator

from agent_host.config.steps import Namespace
from agent_host.config.strict import Strict, Text, fail, one_key_union, regex


class SettingCheckSpec(Text):
    namespace: Namespace
    key: str = Field(pattern=r"^[A-Za-z0-9_.:-]+$")
    equals: str | None = Field(None, description="the value, exactly (after trimming whitespace)")
    in_: list[str] | None = Field(None, alias="in", min_length=1, description="one of these values")
    matches: str | None = Field(None, description="a regular expression the whole value matches")

    _v = field_validator("matches")(lambda cls, v: v if v is None else regex(v))

    @model_validator(mode="before")
    @classmethod
    def _known_operator(cls, data: object) -> object:
        if isinstance(data, dict):
            for k in data:
                if k not in ("namespace", "key", "equals", "in", "matches"):
                    raise fail(f"unknown field or operator '{k}' (operators: equals, in, matches)")
        return data

    @model_validator(mode="after")
    def _one_operator(self) -> Self:
        n = sum(x is not None for x in (self.equals, self.in_, self.matches))
        if n != 1:
            raise fail("give exactly one of equals, in, matches")
        return self


class SettingCheck(Strict):
    setting: SettingCheckSpec


class ShellCheckSpec(Strict):
    command: str = Field(min_length=1)
    matches: str | None = Field(
        None, description="a regular expression searched for in the output (multi-line); "
                          "without it, exit code 0 alone means true")
    count: int | None = Field(
        None, ge=0, description="with matches: true only when the output holds exactly this many "
                                "non-overlapping matches (rows, lines); 0 means none")
    lines: list[str] | None = Field(
        None, description="the output's lines, in order, compared as answers are (case, spaces, "
                          "punctuation ignored); blank lines, headings (# ..., a line ending in ':') "
                          "and list markers (-, *, 1., 1), [ ]) do not count")

    _v = field_validator("matches")(lambda cls, v: v if v is None else regex(v))

    @model_validator(mode="after")
    def _operators(self) -> Self:
        if self.count is not None and self.matches is None:
            raise fail("count counts the matches of matches: give matches too")
        if self.lines is not None and self.matches is not None:
            raise fail("give one of matches, lines")
        return self


class ShellCheck(Strict):
    shell: ShellCheckSpec


class UiSelector(Strict):
    """Matched by phone/select.py, the engine solutions use too: text is compared raw, then
    ignoring case, kinds of space and Unicode hyphens."""
    text: str | None = Field(None, description="the element's text (or hint, or desc)")
    text_contains: str | None = None
    resource_id: str | None = Field(None, description="full (android:id/title) or short (title)")
    desc: str | None = Field(None, description="content-desc")
    desc_contains: str | None = None
    class_name: str | None = Field(None, description="full (android.widget.Switch) or short (Switch)")
    package: str | None = None
    checked: bool | None = None
    selected: bool | None = None
    enabled: bool | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> Self:
        if not self.model_dump(exclude_none=True):
            raise fail("give at least one selector attribute (text, resource_id, desc, ...)")
        return self


class UiCheck(Strict):
    ui: UiSelector = Field(description="true when an element on screen matches every attribute")


class ForegroundSpec(Strict):
    package: str | None = None
    app: str | None = Field(None, description="app alias, resolved through the phone profile")

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.package is None) == (self.app is None):
            raise fail("give exactly one of package, app")
        return self


class ForegroundCheck(Strict):
    foreground: ForegroundSpec


AnswerFormat = Literal["text", "time", "phone", "number"]


class AnswerSpec(Text):
    expected: str | None = Field(None, description="the answer, compared ignoring case, spaces and punctuation")
    format: AnswerFormat = Field(
        "text", description="how answers compare: text (letters and digits), time (the same minute of "
                            "the day, 12- or 24-hour), phone (the same national digits), number (the "
                            "answer's one number, digits or a word)")
    shell: str | None = Field(None, min_length=1,
                              description="a command whose output gives the expected answer")
    pattern: str | None = Field(None, description="with shell: a regular expression; the first group of "
                                                  "its first match (or the match) is the expected answer")

    _v = field_validator("pattern")(lambda cls, v: v if v is None else regex(v))

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.expected is None) == (self.shell is None):
            raise fail("give exactly one of expected, shell")
        if self.pattern is not None and self.shell is None:
            raise fail("pattern reads the output of shell: give shell too")
        return self


class AnswerCheck(Strict):
    answer: AnswerSpec = Field(description="true when the agent's latest `answer` equals the expected one")


class AllCheck(Strict):
    all: list["Check"] = Field(min_length=1)


class AnyCheck(Strict):
    any: list["Check"] = Field(min_length=1)


class NotCheck(Strict):
    not_: "Check" = Field(alias="not")


CHECK_KINDS: dict[str, type[BaseModel]] = {
    "setting": SettingCheck, "shell": ShellCheck, "ui": UiCheck, "foreground": ForegroundCheck,
    "answer": AnswerCheck, "all": AllCheck, "any": AnyCheck, "not": NotCheck,
}
if TYPE_CHECKING:   # the checker cannot read unions built from the table: it sees their base
    Check: TypeAlias = BaseModel
    AnyCheckModel: TypeAlias = BaseModel
else:
    Check, _ = one_key_union(CHECK_KINDS, "check")
    AnyCheckModel = Union[tuple(CHECK_KINDS.values())]   # derived from the table
for _m in (AllCheck, AnyCheck, NotCheck):
    _m.model_rebuild()


def check_kind(check: BaseModel) -> str:
    return next(k for k, m in CHECK_KINDS.items() if isinstance(check, m))


def children(check: BaseModel) -> list[BaseModel]:
    """The checks inside a combinator (all, any, not); [] for a leaf."""
    if isinstance(check, AllCheck):
        return list(check.all)
    if isinstance(check, AnyCheck):
        return list(check.any)
    if isinstance(check, NotCheck):
        return [check.not_]
    return []


def leaves(check: BaseModel) -> list[BaseModel]:
    """The leaf checks inside `check` (itself, for a leaf), in order."""
    kids = children(check)
    return [check] if not kids else [leaf for k in kids for leaf in leaves(k)]
