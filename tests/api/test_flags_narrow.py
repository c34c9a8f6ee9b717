"""``POST /messages/flags/narrow`` (feature level 155): a window of a narrow, chosen as
``GET /messages`` chooses it, gets a flag added or removed."""

from __future__ import annotations

from typing import Any

import pytest

from hubbub.api import message_flags as api
from hubbub.queries.messages import HISTORICAL, READ, STARRED
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import message_flags, send_direct_message, send_stream_message

DENMARK = [{"operator": "stream", "operand": "Denmark"}]


async def _narrow(env: TestEnv, user: str = "othello", **params: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "anchor": "oldest",
        "num_before": 0,
        "num_after": 100,
        "narrow": DENMARK,
        "op": "add",
        "flag": "read",
    }
    return assert_success(await env.client(user).post("/messages/flags/narrow", base | params))


async def _setup(env: TestEnv, count: int = 4) -> list[int]:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    return [await send_stream_message(env, "hamlet", "Denmark", f"m{i}") for i in range(count)]


async def _unread_ids(env: TestEnv, ids: list[int], user: str = "othello") -> list[int]:
    uid = env.users[user].id
    return [mid for mid in ids if (await message_flags(env, mid))[uid] & READ == 0]


async def test_mark_a_narrow_read(env: TestEnv) -> None:
    ids = await _setup(env)
    dm = await send_direct_message(env, "hamlet", ["othello"])
    body = await _narrow(env)
    assert {k: v for k, v in body.items() if k not in ("result", "msg")} == {
        "processed_count": 4,
        "updated_count": 4,
        "first_processed_id": ids[0],
        "last_processed_id": ids[-1],
        "found_oldest": True,
        "found_newest": True,
        # Only marking unread skips channels (feature level 355).
        "ignored_because_not_subscribed_channels": [],
    }
    assert await _unread_ids(env, [*ids, dm]) == [dm]
    # Again: the same range, nothing left to change.
    body = await _narrow(env)
    assert (body["processed_count"], body["updated_count"]) == (4, 0)


async def test_window_around_an_anchor(env: TestEnv) -> None:
    ids = await _setup(env, 6)
    body = await _narrow(env, anchor=str(ids[3]), num_before=1, num_after=1)
    assert (body["first_processed_id"], body["last_processed_id"]) == (ids[2], ids[4])
    assert (body["found_oldest"], body["found_newest"]) == (False, False)
    assert await _unread_ids(env, ids) == [ids[0], ids[1], ids[5]]
    # Excluding the anchor at one end of the range.
    body = await _narrow(env, anchor=str(ids[1]), num_before=5, num_after=0, include_anchor=False)
    assert (body["processed_count"], body["updated_count"]) == (1, 1)
    assert body["found_oldest"] is True
    assert await _unread_ids(env, ids) == [ids[1], ids[5]]
    # "newest" with messages after it: none.
    body = await _narrow(env, anchor="newest", num_before=1, num_after=0)
    assert (body["last_processed_id"], body["updated_count"]) == (ids[5], 1)
    assert body["found_newest"] is True


async def test_first_unread_anchor(env: TestEnv) -> None:
    ids = await _setup(env, 4)
    await env.client("othello").post(
        "/messages/flags", {"messages": ids[:2], "op": "add", "flag": "read"}
    )
    body = await _narrow(env, anchor="first_unread", num_before=0, num_after=0)
    assert (body["first_processed_id"], body["last_processed_id"]) == (ids[2], ids[2])
    assert await _unread_ids(env, ids) == [ids[3]]


async def test_empty_range(env: TestEnv) -> None:
    await _setup(env, 2)
    body = await _narrow(env, narrow=[*DENMARK, {"operator": "topic", "operand": "nothing"}])
    assert body["processed_count"] == body["updated_count"] == 0
    assert body["first_processed_id"] is None and body["last_processed_id"] is None
    assert body["found_oldest"] is True and body["found_newest"] is True


async def test_star_history_and_unread(env: TestEnv) -> None:
    ids = await _setup(env, 2)
    iago = env.users["iago"].id
    # iago is not subscribed: the stream narrow includes its readable history.
    body = await _narrow(env, "iago", flag="starred")
    assert (body["processed_count"], body["updated_count"]) == (2, 2)
    assert (await message_flags(env, ids[0]))[iago] == HISTORICAL | READ | STARRED
    # Marking history read changes nothing; unread, nothing either (not subscribed).
    assert (await _narrow(env, "iago"))["updated_count"] == 0
    assert (await _narrow(env, "iago", op="remove"))["updated_count"] == 0
    body = await _narrow(env, op="remove", narrow=[])
    assert (body["processed_count"], body["updated_count"]) == (2, 0)
    await _narrow(env)
    body = await _narrow(env, op="remove", narrow=None)
    assert body["updated_count"] == 2
    assert await _unread_ids(env, ids) == ids


async def test_the_server_bounds_the_range(env: TestEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    assert api.clamp_range(10_000, 10_000) == (2500, 2500)
    assert api.clamp_range(0, 10_000) == (0, 5000)
    assert api.clamp_range(10_000, 0) == (5000, 0)
    assert api.clamp_range(4000, 100) == (4000, 100)
    assert api.clamp_range(4900, 200) == (4800, 200)
    ids = await _setup(env, 5)
    monkeypatch.setattr(api, "MAX_MESSAGES_PER_UPDATE", 2)
    body = await _narrow(env, num_after=100)
    assert (body["processed_count"], body["last_processed_id"]) == (2, ids[1])
    assert body["found_newest"] is False
    assert await _unread_ids(env, ids) == ids[2:]


@pytest.mark.parametrize(
    ("params", "msg", "code"),
    [
        ({"num_before": 1, "num_after": 1, "include_anchor": False},
         "The anchor can only be excluded at an end of the range", "BAD_REQUEST"),
        ({"num_before": -1}, "Bad value for 'num_before': -1", "BAD_REQUEST"),
        ({"num_after": -2}, "Bad value for 'num_after': -2", "BAD_REQUEST"),
        ({"anchor": "sideways"}, "Invalid anchor", "BAD_REQUEST"),
        ({"flag": "mentioned"}, "Flag not editable: 'mentioned'", "BAD_REQUEST"),
        ({"flag": "bogus"}, "Invalid flag: 'bogus'", "BAD_REQUEST"),
        ({"op": "flip"}, "Invalid message flag operation: 'flip'", "BAD_REQUEST"),
        ({"narrow": [{"operator": "stream", "operand": "Atlantis"}]},
         "Invalid narrow operator: unknown channel Atlantis", "BAD_NARROW"),
    ],
)  # fmt: skip
async def test_errors(env: TestEnv, params: dict[str, Any], msg: str, code: str) -> None:
    ids = await _setup(env, 1)
    base: dict[str, Any] = {
        "anchor": "newest",
        "num_before": 5,
        "num_after": 0,
        "narrow": [],
        "op": "add",
        "flag": "read",
    }
    response = await env.client("othello").post("/messages/flags/narrow", base | params)
    assert_error(response, msg, code=code)
    assert await _unread_ids(env, ids) == ids


async def test_required_parameters(env: TestEnv) -> None:
    for missing in ("anchor", "num_before", "num_after", "narrow", "op", "flag"):
        params: dict[str, Any] = {
            "anchor": "newest",
            "num_before": 5,
            "num_after": 0,
            "narrow": [],
            "op": "add",
            "flag": "read",
        }
        del params[missing]
        response = await env.client("othello").post("/messages/flags/narrow", params)
        assert_error(response, f"Missing '{missing}' argument", code="REQUEST_VARIABLE_MISSING")
