"""``/drafts``: creating, listing, editing and deleting server-stored drafts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from hubbub.clock import FakeClock
from hubbub.settings import Settings
from tests.helpers import TestEnv, assert_error, assert_success, running_env


@pytest.fixture
async def env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings, clock=FakeClock()) as test_env:
        yield test_env


def _draft(**overrides: Any) -> dict[str, Any]:
    return {"type": "private", "to": [], "topic": "", "content": "Hello", **overrides}


async def _list(env: TestEnv, user: str = "hamlet") -> list[dict[str, Any]]:
    body = assert_success(await env.client(user).get("/drafts"))
    assert body["count"] == len(body["drafts"])
    return body["drafts"]  # type: ignore[no-any-return]


async def test_create_list_edit_delete(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    othello = env.users["othello"]
    hamlet = env.users["hamlet"]
    client = env.client("hamlet")
    body = assert_success(
        await client.post(
            "/drafts",
            {
                "drafts": [
                    _draft(type="stream", to=[denmark.id], topic="plans", timestamp=1000),
                    _draft(to=[othello.id, hamlet.id, othello.id], timestamp=3000.7),
                    _draft(to=[hamlet.id], content="\n\nnote to self  \n", timestamp=2000),
                    _draft(type="", to=[othello.id], topic="x", content="later"),
                ]
            },
        )
    )
    ids = body["ids"]
    assert len(ids) == 4 and ids == sorted(ids)
    now = int(env.services.clock.now())
    assert await _list(env) == [
        {"id": ids[3], "type": "", "to": [], "topic": "", "content": "later", "timestamp": now},
        {
            "id": ids[1],
            "type": "private",
            "to": [othello.id],
            "topic": "",
            "content": "Hello",
            "timestamp": 3000,
        },
        {
            "id": ids[2],
            "type": "private",
            "to": [hamlet.id],
            "topic": "",
            "content": "note to self",
            "timestamp": 2000,
        },
        {
            "id": ids[0],
            "type": "stream",
            "to": [denmark.id],
            "topic": "plans",
            "content": "Hello",
            "timestamp": 1000,
        },
    ]
    assert await _list(env, "othello") == []

    assert_success(
        await client.patch(
            f"/drafts/{ids[0]}",
            {"draft": _draft(type="stream", to=[denmark.id], topic="t" * 70, timestamp=now + 5)},
        )
    )
    first = (await _list(env))[0]
    assert first["id"] == ids[0]
    assert first["topic"] == "t" * 57 + "..."
    assert first["timestamp"] == now + 5

    assert_success(await client.delete(f"/drafts/{ids[0]}"))
    assert [d["id"] for d in await _list(env)] == [ids[3], ids[1], ids[2]]


async def test_missing_and_foreign_drafts(env: TestEnv) -> None:
    body = assert_success(await env.client("othello").post("/drafts", {"drafts": [_draft()]}))
    foreign = body["ids"][0]
    client = env.client("hamlet")
    for missing in (foreign, 999999):
        assert_error(
            await client.patch(f"/drafts/{missing}", {"draft": _draft()}),
            "Draft does not exist",
            status=404,
        )
        assert_error(await client.delete(f"/drafts/{missing}"), "Draft does not exist", status=404)
    assert len(await _list(env, "othello")) == 1


@pytest.mark.parametrize(
    ("draft", "message"),
    [
        ("nope", "drafts[0] is not a dict"),
        ({"to": [], "topic": "", "content": "x"}, "type key is missing from drafts[0]"),
        ({"type": "private", "topic": "", "content": "x"}, "to key is missing from drafts[0]"),
        (_draft(extra=1), "Unexpected arguments: extra"),
        (_draft(type="huddle"), 'Invalid drafts[0]["type"]'),
        (_draft(type=5), 'drafts[0]["type"] is not a string'),
        (_draft(to="5"), 'drafts[0]["to"] is not a list'),
        (_draft(to=[1, "a"]), 'drafts[0]["to"][1] is not an integer'),
        (_draft(topic=3), 'drafts[0]["topic"] is not a string'),
        (_draft(content="   "), 'drafts[0]["content"] cannot be blank.'),
        (_draft(timestamp="now"), 'drafts[0]["timestamp"] is not an allowed_type'),
        (_draft(timestamp=-1), "Timestamp must not be negative."),
        (_draft(content="a\x00b"), "Message must not contain null bytes"),
        (_draft(type="stream", to=[]), "Must specify exactly 1 stream ID for stream messages"),
        (_draft(type="stream", to=[1, 2]), "Must specify exactly 1 stream ID for stream messages"),
        (_draft(type="stream", to=[99999]), "Invalid stream ID"),
        (_draft(to=[99999]), "Invalid user ID 99999"),
    ],
)
async def test_invalid_drafts(env: TestEnv, draft: Any, message: str) -> None:
    # The valid first draft is not created either: all or nothing.
    good = _draft()
    params = {"drafts": [draft]} if "drafts[0]" in message else {"drafts": [good, draft]}
    assert_error(await env.client("hamlet").post("/drafts", params), message)
    assert await _list(env) == []


async def test_private_stream_is_invalid_for_outsiders(env: TestEnv) -> None:
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    assert_error(
        await env.client("hamlet").post(
            "/drafts", {"drafts": [_draft(type="stream", to=[secret.id])]}
        ),
        "Invalid stream ID",
    )


async def test_edit_validates(env: TestEnv) -> None:
    client = env.client("hamlet")
    draft_id = assert_success(await client.post("/drafts", {"drafts": [_draft()]}))["ids"][0]
    assert_error(
        await client.patch(f"/drafts/{draft_id}", {"draft": _draft(type="bad")}),
        'Invalid draft["type"]',
    )
    assert_error(
        await client.patch(f"/drafts/{draft_id}", {"draft": _draft(content="")}),
        'draft["content"] cannot be blank.',
    )
    assert_error(
        await client.patch(f"/drafts/{draft_id}", {}),
        "Missing 'draft' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert (await _list(env))[0]["content"] == "Hello"


async def test_sync_disabled(env: TestEnv) -> None:
    client = env.client("hamlet")
    draft_id = assert_success(await client.post("/drafts", {"drafts": [_draft()]}))["ids"][0]
    assert_success(await client.patch("/settings", {"enable_drafts_synchronization": False}))
    message = "User has disabled synchronizing drafts."
    assert_error(await client.get("/drafts"), message)
    assert_error(await client.post("/drafts", {"drafts": [_draft()]}), message)
    assert_error(await client.patch(f"/drafts/{draft_id}", {"draft": _draft()}), message)
    assert_error(await client.delete(f"/drafts/{draft_id}"), message)
    # Turning it back on finds nothing: the stored drafts were deleted.
    assert_success(await client.patch("/settings", {"enable_drafts_synchronization": True}))
    assert await _list(env) == []
    # Only Hamlet's drafts went.
    assert_success(await env.client("othello").post("/drafts", {"drafts": [_draft()]}))
    assert len(await _list(env, "othello")) == 1


async def test_empty_list(env: TestEnv) -> None:
    assert assert_success(await env.client("hamlet").post("/drafts", {"drafts": []}))["ids"] == []
    assert_error(
        await env.client("hamlet").post("/drafts", {"drafts": {"a": 1}}), "drafts is not a list"
    )
