"""Shared pieces of the task-file models: strict bases, the one-key union (`{shell: ...}`,
`{setting: {...}}`), and validation errors that read as written."""

from __future__ import annotations

import re
from typing import Annotated, Any, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Tag
from pydantic_core import PydanticCustomError


class Strict(BaseModel):
    """Task-file models: unknown keys refused, values frozen once loaded."""
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Closed(BaseModel):
    """Profile and build models: unknown keys refused; left mutable, since a build is copied
    and adjusted for the machine (its dtype) before it is served."""
    model_config = ConfigDict(extra="forbid")


class Text(Strict):
    """Models whose string values may be written as YAML numbers (`value: 0` means "0")."""
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True, coerce_numbers_to_str=True)


# Any: the union is built from the table at run time; no static type names it
def one_key_union(kinds: dict[str, type[BaseModel]], what: str,
                  bare: tuple[str, ...] = ()) -> tuple[Any, dict[str, list[str]] | None]:
    """A union of one-key mappings (`{shell: ...}`, `{setting: {...}}`), told apart by the key.

    The tags carry a space so that loading.validation_messages drops them from the field path:
    errors read `setup[2].setting.value: Field required`, not `setup[2].setting step.setting...`.
    `bare` names kinds that may be written as a plain string (`- home`). The union is built
    from the table at run time, so the checker cannot name it: it is returned as Any.
    """
    expected = ", ".join(kinds)

    def shape(v: object) -> object:
        if isinstance(v, str) and v in bare:
            return {v: None}
        if isinstance(v, str):
            raise PydanticCustomError(f"{what}_kind", f"unknown {what} '{{k}}' (expected one of: {{e}})",
                                      {"k": v, "e": expected})
        if not isinstance(v, dict):
            raise PydanticCustomError(f"{what}_shape", f"a {what} is a one-key mapping such as {{ex}}, not {{t}}",
                                      {"ex": f"{{{next(iter(kinds))}: ...}}", "t": type(v).__name__})
        if len(v) != 1:
            got = ", ".join(map(str, v)) or "nothing"
            raise PydanticCustomError(f"{what}_shape", f"a {what} has exactly one key, one of: {{e}} (got: {{g}})",
                                      {"e": expected, "g": got})
        key = next(iter(v))
        if key not in kinds:
            raise PydanticCustomError(f"{what}_kind", f"unknown {what} '{{k}}' (expected one of: {{e}})",
                                      {"k": key, "e": expected})
        return v

    by_type = {model: key for key, model in kinds.items()}

    def tag(v: object) -> str | None:
        if isinstance(v, dict):
            return f"{next(iter(v))} {what}" if len(v) == 1 else None
        key = by_type.get(type(v)) if isinstance(v, BaseModel) else None   # serialising a model instance
        return None if key is None else f"{key} {what}"

    members = tuple(Annotated[model, Tag(f"{key} {what}")] for key, model in kinds.items())
    union = Union[members]  # type: ignore[valid-type]
    schema_extra = {"enum": list(bare)} if bare else None
    out = Annotated[union, Discriminator(tag), BeforeValidator(shape)]
    return out, schema_extra


def fail(message: str) -> PydanticCustomError:
    """A validation error whose message reads as written (no "Value error, " prefix)."""
    return PydanticCustomError("task_rule", "{m}", {"m": message})


def regex(v: str) -> str:
    try:
        re.compile(v)
    except re.error as exc:
        raise fail(f"invalid regular expression: {exc}") from None
    return v
