"""Field checks for JSON-like requests: one place for "wrong type" and "out of range".

The API's requests (`worker.jobs`) and the case files (`patience_encodings.cases`)
read mappings of the same shape, so they share these checks and their messages:
each error is an `InputError` naming the field and what was wrong with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InputError


def expect_object(data: Any, what: str) -> dict[str, Any]:
    """Return ``data`` if it is a JSON object."""
    if not isinstance(data, dict):
        raise InputError(f"{what} must be a JSON object")
    return data


def check_fields(data: Mapping[str, Any], allowed: Sequence[str], what: str) -> None:
    """Refuse unknown fields, so that a typo is an error and not a default."""
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise InputError(
            f"unknown field(s) in {what}: {', '.join(unknown)} "
            f"(allowed: {', '.join(allowed)})"
        )


def get_string(data: Mapping[str, Any], key: str, default: str) -> str:
    """Return the string field ``key`` (``default`` when absent or null)."""
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise InputError(f"'{key}' must be a string, not {type(value).__name__}")
    return value


def get_choice(
    data: Mapping[str, Any], key: str, choices: Sequence[str], default: str
) -> str:
    """Return the string field ``key``, which must be one of ``choices``."""
    value = get_string(data, key, default)
    if value not in choices:
        raise InputError(f"'{key}' must be one of {', '.join(choices)}, not {value!r}")
    return value


def get_number(
    data: Mapping[str, Any], key: str, default: float, lo: float, hi: float
) -> float:
    """Return the number field ``key``, finite and within ``[lo, hi]``."""
    value = data.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"'{key}' must be a number, not {type(value).__name__}")
    if not math.isfinite(value) or not lo <= value <= hi:
        raise InputError(f"'{key}' must be between {lo:g} and {hi:g}, not {value!r}")
    return float(value)


def get_integer(
    data: Mapping[str, Any], key: str, default: int, lo: int, hi: int
) -> int:
    """Return the integer field ``key`` within ``[lo, hi]``."""
    value = data.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"'{key}' must be an integer, not {type(value).__name__}")
    if not lo <= value <= hi:
        raise InputError(f"'{key}' must be between {lo} and {hi}, not {value}")
    return value


#: Deepest nesting a case file or other JSON-like input may use.
MAX_DEPTH = 64


def check_plain(data: Any, where: str, depth: int = 0) -> None:
    """Refuse anything JSON cannot carry: what YAML adds to it, and deep nesting.

    YAML builds dates, byte strings, sets, non-string keys and ``.nan``;
    none is a value a case can mean, and none survives the JSON a job is
    stored and queued as. So a case file's data is checked once, as read,
    and a bad value is named (``quote it``) instead of failing later.
    """
    if depth > MAX_DEPTH:
        raise InputError(f"{where}: nested more than {MAX_DEPTH} deep")
    if isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(key, str):
                raise InputError(f"{where}: key {key!r} is not a string (quote it)")
            check_plain(value, where, depth + 1)
    elif isinstance(data, list):
        for value in data:
            check_plain(value, where, depth + 1)
    elif isinstance(data, float) and not math.isfinite(data):
        raise InputError(f"{where}: {data!r} is not a JSON number")
    elif data is not None and not isinstance(data, str | bool | int | float):
        kind = type(data).__name__
        raise InputError(f"{where}: {data!r} ({kind}) is not a JSON value (quote it)")
