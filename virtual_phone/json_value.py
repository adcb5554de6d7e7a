"""A JSON value as `json.loads` gives it, and Python's own conversions of one, typed.

The uiautomator2 JSON-RPC server takes its arguments as arbitrary JSON (the client decides
what it sends) and converts them as the Java server does, with int()/float(); a value of the
wrong JSON type is then the TypeError that the server answers as IllegalArgumentException.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias

Json: TypeAlias = "None | bool | int | float | str | list[Json] | dict[str, Json]"
JsonObject: TypeAlias = "dict[str, Json]"


def as_int(v: Json) -> int:
    """int(v), with the TypeError int() raises for null, an array or an object."""
    if isinstance(v, (int, float, str)):   # a bool is an int
        return int(v)
    raise TypeError(f"int() argument must be a string, a bytes-like object or a real number, "
                    f"not '{type(v).__name__}'")


def as_float(v: Json) -> float:
    """float(v), with the TypeError float() raises for null, an array or an object."""
    if isinstance(v, (int, float, str)):
        return float(v)
    raise TypeError(f"float() argument must be a string or a real number, not '{type(v).__name__}'")


def as_iterable(v: Json) -> Iterable[Json]:
    """v to iterate over (an array's items, a string's characters, an object's keys), with the
    TypeError iter() raises for null, a boolean or a number."""
    if isinstance(v, (list, str, dict)):
        return v
    raise TypeError(f"'{type(v).__name__}' object is not iterable")
