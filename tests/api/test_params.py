"""The parameter declaration mechanism, on declarations made just for these tests."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import StringConstraints

from hubbub.api.params import Param, PathInt, build_specs, parse_arguments
from hubbub.errors import ApiError


async def handler(
    req: object,
    *,
    item_id: PathInt,
    topic: Annotated[str, Param(aliases=("subject",))],
    count: int = 10,
    flag: bool = False,
    ids: list[int] | None = None,
    mode: Literal["a", "b"] = "a",
    level: Literal[1, 2] | None = None,
    note: Annotated[str, StringConstraints(max_length=5)] = "",
    data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {}


SPECS = build_specs(handler)


def parse(args: dict[str, str], item_id: int = 7) -> dict[str, Any]:
    return parse_arguments(SPECS, args, {"item_id": item_id})


def error_of(args: dict[str, str]) -> tuple[str, str, dict[str, Any]]:
    with pytest.raises(ApiError) as info:
        parse(args)
    assert info.value.code is not None
    return info.value.msg, info.value.code.value, info.value.data()


def test_defaults_path_and_aliases() -> None:
    assert parse({"topic": "t"}) == {
        "item_id": 7,
        "topic": "t",
        "count": 10,
        "flag": False,
        "ids": None,
        "mode": "a",
        "level": None,
        "note": "",
        "data": None,
    }
    assert parse({"subject": "legacy"})["topic"] == "legacy"


def test_json_values() -> None:
    parsed = parse(
        {
            "topic": "t",
            "count": "3",
            "flag": "true",
            "ids": "[1, 2]",
            "mode": "b",
            "level": "2",
            "data": '{"k": [1]}',
        }
    )
    assert parsed["count"] == 3 and parsed["flag"] is True and parsed["ids"] == [1, 2]
    assert parsed["mode"] == "b" and parsed["level"] == 2 and parsed["data"] == {"k": [1]}
    # A string parameter is raw: JSON-looking text stays text.
    assert parse({"topic": '"quoted"'})["topic"] == '"quoted"'


def test_zulip_error_wording() -> None:
    assert error_of({}) == (
        "Missing 'topic' argument",
        "REQUEST_VARIABLE_MISSING",
        {"var_name": "topic"},
    )
    assert error_of({"topic": "a", "subject": "b"}) == (
        "Can't decide between 'topic' and 'subject' arguments",
        "REQUEST_CONFUSING_VAR",
        {"var_name1": "topic", "var_name2": "subject"},
    )
    assert error_of({"topic": "t", "count": "x"})[0] == "count is not valid JSON"
    assert error_of({"topic": "t", "count": "1.5"})[0] == "count is not an integer"
    assert error_of({"topic": "t", "count": "true"})[0] == "count is not an integer"
    assert error_of({"topic": "t", "flag": "1"})[0] == "flag is not a boolean"
    assert error_of({"topic": "t", "ids": "{}"})[0] == "ids is not a list"
    assert error_of({"topic": "t", "ids": '[1, "x"]'})[0] == "ids[1] is not an integer"
    assert error_of({"topic": "t", "mode": "c"})[0] == "Invalid mode"
    assert error_of({"topic": "t", "level": "3"})[0] == "Invalid level"
    assert error_of({"topic": "t", "level": '"1"'})[0] == "level is not an integer"
    assert error_of({"topic": "t", "note": "toolong"})[0] == (
        "note is too long (limit: 5 characters)"
    )
    assert error_of({"topic": "t", "data": "[]"})[0] == "data is not a dict"


def test_integers_beyond_64_bits_are_invalid() -> None:
    """Found by the fuzzer: an id past 64 bits reached SQLite and became a 500."""
    big = 2**63
    with pytest.raises(ApiError) as info:
        parse({"topic": "t"}, item_id=10**30)
    assert info.value.msg == "Invalid item_id"
    assert error_of({"topic": "t", "count": str(big)})[0] == "Invalid count"
    assert error_of({"topic": "t", "ids": f"[1, {big}]"})[0] == "Invalid ids"
    assert error_of({"topic": "t", "data": f'{{"a": {big}}}'})[0] == "Invalid data"
    assert parse({"topic": "t", "count": str(big - 1)})["count"] == big - 1
    assert parse({"topic": "t", "ids": f"[{-big}]"})["ids"] == [-big]


def test_deeply_nested_json_is_refused_without_recursion() -> None:
    """Found by an attacker: 500 levels of JSON in any JSON parameter gave a 500 (a
    recursive walk hit Python's limit, and orjson cannot serialize it back)."""
    from hubbub.json_values import MAX_JSON_DEPTH

    deep_list = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    deep_dict = '{"k":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1)
    too_deep = f"nested too deeply (limit: {MAX_JSON_DEPTH} levels)"
    assert error_of({"topic": "t", "ids": deep_list})[0] == f"ids is {too_deep}"
    assert error_of({"topic": "t", "data": deep_dict})[0] == f"data is {too_deep}"
    mixed = '{"k": [' * 400 + "]}" * 400
    assert error_of({"topic": "t", "data": mixed})[0] == f"data is {too_deep}"
    # Past orjson's own depth limit it is not JSON at all.
    assert error_of({"topic": "t", "ids": "[" * 2000 + "]" * 2000})[0] == "ids is not valid JSON"
    at_limit = '{"k":' * (MAX_JSON_DEPTH - 1) + "{}" + "}" * (MAX_JSON_DEPTH - 1)
    assert parse({"topic": "t", "data": at_limit})["data"]["k"]["k"] is not None


def test_nul_characters_are_refused_in_every_string() -> None:
    """Found on PostgreSQL, which cannot store a NUL in text: several fields gave a 500."""
    assert error_of({"topic": "a\x00b"})[0] == "Invalid character in topic, at position 2!"
    assert error_of({"topic": "t", "note": "\x00"})[0] == "note must not contain null bytes"
    assert error_of({"topic": "t", "data": '{"a": ["x\\u0000"]}'})[0] == (
        "data must not contain null bytes"
    )
    assert error_of({"topic": "t", "data": '{"a\\u0000": 1}'})[0] == (
        "data must not contain null bytes"
    )
    # Zulip's own words, inside a draft-like object, by the key holding the string.
    assert error_of({"topic": "t", "data": '{"content": "a\\u0000"}'})[0] == (
        "Message must not contain null bytes"
    )
    assert error_of({"topic": "t", "data": '{"topic": "a\\u0000"}'})[0] == (
        "Topic must not contain null bytes"
    )
    # Other control characters are a matter for each field's own checks.
    assert parse({"topic": "t", "note": "a\tb"})["note"] == "a\tb"
