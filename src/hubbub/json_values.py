"""Checks that every value a request carries passes, whether a parameter declared with
``@endpoint`` decodes it or an action parses a parameter's JSON text by hand.

``load_json`` is the hand parsers' ``orjson.loads``: it raises ``orjson.JSONDecodeError``
as that does, so that their fallbacks for bare words stay as they are, and refuses what
``check_json_shape`` refuses.
"""

from __future__ import annotations

from typing import Any

import orjson

from hubbub.errors import JsonableError
from hubbub.text_checks import check_printable

# JSON values deeper than this are refused: no parameter needs more than a few levels,
# and deeper ones could not be stored or sent on (orjson serializes at most 254 levels),
# and every recursive walk over them would risk Python's recursion limit.
MAX_JSON_DEPTH = 100

# A NUL character is refused in every string a request carries (PostgreSQL cannot store
# one in a text column; SQLite would, unlike Zulip's database), with Zulip's own words
# where it has them: for a parameter by its name, inside a JSON value by the key that
# holds the string (a draft's ``content`` and ``topic``).
_NUL_BY_NAME = {
    "content": "Message must not contain null bytes",
    "storage": "Storage must not contain null bytes.",
    "full_name": "Invalid characters in name!",
}
_NUL_BY_KEY = {
    "content": "Message must not contain null bytes",
    "topic": "Topic must not contain null bytes",
}
# Parameters that name a topic: Zulip refuses a NUL there as it does every control
# character ("Invalid character in topic, at position N!").
_TOPIC_PARAMETERS = frozenset({"topic", "subject", "topic_name"})


def nul_message(var_name: str, key: str | None = None) -> str:
    if key is not None and key in _NUL_BY_KEY:
        return _NUL_BY_KEY[key]
    return _NUL_BY_NAME.get(var_name, f"{var_name} must not contain null bytes")


def check_no_nul(var_name: str, raw: str) -> None:
    if "\x00" not in raw:
        return
    if var_name in _TOPIC_PARAMETERS:
        check_printable(raw, "topic")
    raise JsonableError(nul_message(var_name))


def check_json_shape(var_name: str, value: Any) -> None:
    """Refuse a decoded JSON value nested deeper than ``MAX_JSON_DEPTH`` or holding a NUL
    character in any string. Iterative, so that no input can exhaust the stack."""
    # (value, its depth, the dictionary key it is found under)
    pending: list[tuple[Any, int, str | None]] = [(value, 1, None)]
    while pending:
        item, depth, key = pending.pop()
        if type(item) is str:
            if "\x00" in item:
                raise JsonableError(nul_message(var_name, key))
            continue
        if type(item) is dict:
            if depth > MAX_JSON_DEPTH:
                raise JsonableError(_too_deep(var_name))
            for name, child in item.items():
                if "\x00" in name:
                    raise JsonableError(nul_message(var_name))
                if type(child) in _NESTED:
                    pending.append((child, depth + 1, name))
        elif type(item) is list:
            if depth > MAX_JSON_DEPTH:
                raise JsonableError(_too_deep(var_name))
            pending.extend((child, depth + 1, key) for child in item if type(child) in _NESTED)


_NESTED = (dict, list, str)


def _too_deep(var_name: str) -> str:
    return f"{var_name} is nested too deeply (limit: {MAX_JSON_DEPTH} levels)"


def load_json(var_name: str, raw: str | bytes) -> Any:
    """``orjson.loads(raw)``, then ``check_json_shape``."""
    value = orjson.loads(raw)
    check_json_shape(var_name, value)
    return value
