"""``POST /streams/{stream_id}/delete_topic``: administrators only, in batches, with
``complete: false`` when the time runs out (feature level 211)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa

from hubbub.actions import delete_message
from hubbub.clock import FakeClock
from hubbub.db.tables import message
from hubbub.settings import Settings
from tests.events.verify import register
from tests.helpers import TestEnv, assert_error, assert_success, running_env
from tests.messages_helpers import send_stream_message


class TickingClock(FakeClock):
    """Every monotonic reading is 30 s after the previous one: with Zulip's 50 s budget a
    request gets exactly one batch in before it runs out of time."""

    def monotonic(self) -> float:
        self.advance(30)
        return super().monotonic()


async def _remaining(env: TestEnv) -> list[int]:
    async with env.services.db.read() as conn:
        rows = await conn.execute(sa.select(message.c.id).order_by(message.c.id))
        return [int(mid) for (mid,) in rows]


async def _delete_topic(env: TestEnv, user: str, stream_id: int, topic: str) -> dict[str, object]:
    return assert_success(
        await env.client(user).post(f"/streams/{stream_id}/delete_topic", {"topic_name": topic})
    )


async def test_deletes_the_topic_in_any_case(env: TestEnv) -> None:
    denmark = await env.subscribe("iago", "Denmark")
    await env.subscribe("hamlet", "Denmark")
    norway = await env.subscribe("iago", "Norway")
    doomed = [
        await send_stream_message(env, "hamlet", "Denmark", "a", "Castle"),
        await send_stream_message(env, "iago", "Denmark", "b", "castle"),
        await send_stream_message(env, "hamlet", "Denmark", "c", "CASTLE"),
    ]
    other_topic = await send_stream_message(env, "hamlet", "Denmark", "d", "castles")
    other_stream = await send_stream_message(env, "iago", "Norway", "e", "castle")
    body = await _delete_topic(env, "iago", denmark.id, "cAsTlE")
    assert body == {"result": "success", "msg": "", "complete": True}
    assert await _remaining(env) == [other_topic, other_stream]
    assert not set(doomed) & set(await _remaining(env))
    # An empty (or unknown) topic is simply complete.
    assert (await _delete_topic(env, "desdemona", denmark.id, "castle"))["complete"] is True
    assert (await _delete_topic(env, "iago", norway.id, "nothing here"))["complete"] is True
    assert await _remaining(env) == [other_topic, other_stream]


async def test_permissions_and_unknown_streams(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    kept = await send_stream_message(env, "hamlet", "Denmark", "a", "t")
    for user in ("hamlet", "shiva", "polonius"):
        assert_error(
            await env.client(user).post(f"/streams/{denmark.id}/delete_topic", {"topic_name": "t"}),
            "Must be an organization administrator",
            code="UNAUTHORIZED_PRINCIPAL",
        )
    # The role is checked first, so a non-administrator learns nothing about stream ids.
    assert_error(
        await env.client("hamlet").post("/streams/99999/delete_topic", {"topic_name": "t"}),
        "Must be an organization administrator",
        code="UNAUTHORIZED_PRINCIPAL",
    )
    assert_error(
        await env.client("iago").post("/streams/99999/delete_topic", {"topic_name": "t"}),
        "Invalid stream ID",
    )
    assert_error(
        await env.client("iago").post(f"/streams/{denmark.id}/delete_topic", {}),
        "Missing 'topic_name' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    # A private stream needs a subscription, even for an administrator.
    secret = await env.subscribe("hamlet", "Secret", invite_only=True)
    secret_message = await send_stream_message(env, "hamlet", "Secret", "s", "t")
    assert_error(
        await env.client("iago").post(f"/streams/{secret.id}/delete_topic", {"topic_name": "t"}),
        "Invalid stream ID",
    )
    assert await _remaining(env) == [kept, secret_message]


async def test_protected_history_limits_what_is_deleted(env: TestEnv) -> None:
    secret = await env.subscribe("hamlet", "Secret", invite_only=True)
    before = await send_stream_message(env, "hamlet", "Secret", "old", "t")
    await env.subscribe("iago", "Secret")
    after = await send_stream_message(env, "hamlet", "Secret", "new", "t")
    # The administrator never received the older message, so it stays (as in Zulip).
    assert (await _delete_topic(env, "iago", secret.id, "t"))["complete"] is True
    assert await _remaining(env) == [before]
    assert after not in await _remaining(env)


@pytest.fixture
async def ticking_env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings, clock=TickingClock()) as test_env:
        yield test_env


async def test_runs_out_of_time_after_whole_batches(
    ticking_env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = ticking_env
    monkeypatch.setattr(delete_message, "DELETE_TOPIC_BATCH_SIZE", 2)
    denmark = await env.subscribe("iago", "Denmark")
    await env.subscribe("hamlet", "Denmark")
    ids = [await send_stream_message(env, "hamlet", "Denmark", str(n), "t") for n in range(5)]
    queue = await register(
        env,
        env.users["hamlet"],
        event_types=["delete_message"],
        client_capabilities={"bulk_message_deletion": True},
    )
    # Newest first, one batch of two per request here, each batch its own transaction.
    body = await _delete_topic(env, "iago", denmark.id, "t")
    assert body == {"result": "success", "msg": "", "complete": False}
    assert await _remaining(env) == ids[:3]
    assert (await _delete_topic(env, "iago", denmark.id, "t"))["complete"] is False
    assert await _remaining(env) == ids[:1]
    assert (await _delete_topic(env, "iago", denmark.id, "t"))["complete"] is False
    assert await _remaining(env) == []
    # Nothing left: the next request finds the topic empty.
    assert (await _delete_topic(env, "iago", denmark.id, "t"))["complete"] is True
    events = assert_success(
        await env.client("hamlet").get(
            "/events", {"queue_id": queue["queue_id"], "last_event_id": -1, "dont_block": True}
        )
    )["events"]
    # One event per batch.
    assert [e["message_ids"] for e in events] == [ids[3:5], ids[1:3], ids[0:1]]
    assert {(e["stream_id"], e["topic"], e["message_type"]) for e in events} == {
        (denmark.id, "t", "stream")
    }


async def test_every_batch_within_the_time(env: TestEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delete_message, "DELETE_TOPIC_BATCH_SIZE", 2)
    denmark = await env.subscribe("iago", "Denmark")
    for n in range(5):
        await send_stream_message(env, "iago", "Denmark", str(n), "t")
    assert (await _delete_topic(env, "iago", denmark.id, "t"))["complete"] is True
    assert await _remaining(env) == []
