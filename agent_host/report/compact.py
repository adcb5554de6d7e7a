"""Episode records held compactly for the report: 100 000 validated pydantic records took
650 MB (a dict per model, a copy of every repeated string), so a report of the largest
run the planner allows did not fit in 1 GB. Each record is validated as usual, then kept as
a slotted object with the same attributes (nested models likewise) and short strings
interned (build, task, outcome, phone repeat across the run); `model_dump()` gives the same
dict the record would. Only the report reads these; what is written stays a real record."""

from __future__ import annotations

import sys
from typing import Any

from pydantic import BaseModel

_CLASSES: dict[type, type] = {}
_INTERN_UP_TO = 80


class Compact:
    __slots__ = ()
    _fields: tuple[str, ...] = ()

    # Any: pydantic's model_dump keywords (ignored) and its JSON-like result
    def model_dump(self, mode: str | None = None, **_: Any) -> dict[str, Any]:
        return {n: _dump(getattr(self, n)) for n in self._fields}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._fields)})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, n) == getattr(other, n) for n in self._fields)

    __hash__ = None  # type: ignore[assignment]


# Any: any value a model dump holds (a model, a list, a dict, a scalar)
def _dump(v: Any) -> Any:
    if isinstance(v, Compact):
        return v.model_dump()
    if isinstance(v, list):
        return [_dump(x) for x in v]
    if isinstance(v, dict):
        return {k: _dump(x) for k, x in v.items()}
    return v


def _class_for(model: type[BaseModel]) -> type[Compact]:
    cls = _CLASSES.get(model)
    if cls is None:
        fields = tuple(model.model_fields)
        cls = type(model.__name__, (Compact,), {"__slots__": fields, "_fields": fields,
                                                "__module__": __name__})
        _CLASSES[model] = cls
    return cls


_PLAIN = frozenset({int, float, bool, type(None)})


# Any: any value loaded from records; the same shape comes back, compacted
def compact(obj: Any) -> Any:
    """`obj` with every pydantic model in it made a slotted Compact, short strings interned."""
    t = type(obj)
    if t in _PLAIN:
        return obj
    if t is str:
        return sys.intern(obj) if len(obj) <= _INTERN_UP_TO else obj
    if isinstance(obj, BaseModel):
        cls = _class_for(t)
        out = cls.__new__(cls)
        values = obj.__dict__  # pydantic keeps a model's fields here
        for n in cls._fields:
            v = values[n]
            setattr(out, n, v if type(v) in _PLAIN else compact(v))
        return out
    if isinstance(obj, list):
        return [compact(x) for x in obj]
    if isinstance(obj, dict):
        return {compact(k): compact(v) for k, v in obj.items()}
    return obj
