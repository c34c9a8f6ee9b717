"""``/scheduled_messages``: creating, listing, editing and deleting messages to be sent
later, with Zulip 8.0's checks and error wording."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.clock import FakeClock
from hubbub.db.tables import attachment, scheduled_attachment, scheduled_message
from hubbub.settings import Settings
from hubbub.workers.scheduled_delivery import deliver_due_scheduled_messages
from tests.group_settings_helpers import set_group_setting
from tests.helpers import TestEnv, assert_error, assert_success, running_env
from tests.uploads_helpers import upload

NOW = 1_700_000_000


@pytest.fixture
async def env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings, clock=FakeClock(float(NOW))) as test_env:
        yield test_env


async def _schedule(env: TestEnv, user: str = "hamlet", **params: Any) -> Any:
    return await env.client(user).post("/scheduled_messages", params)


async def _list(env: TestEnv, user: str = "hamlet") -> list[dict[str, Any]]:
    body = assert_success(await env.client(user).get("/scheduled_messages"))
    return body["scheduled_messages"]  # type: ignore[no-any-return]


async def _row(env: TestEnv, scheduled_id: int) -> Any:
    async with env.services.db.read() as conn:
        return (
            await conn.execute(
                sa.select(scheduled_message).where(scheduled_message.c.id == scheduled_id)
            )
        ).one()


async def test_create_and_list(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    othello, iago, hamlet = env.users["othello"], env.users["iago"], env.users["hamlet"]
    stream_id = assert_success(
        await _schedule(
            env,
            type="stream",
            to=denmark.id,
            topic="plans",
            content="**later**  \n",
            scheduled_delivery_timestamp=NOW + 300,
        )
    )["scheduled_message_id"]
    group_id = assert_success(
        await _schedule(
            env,
            type="direct",
            to=[othello.id, iago.id, hamlet.id, othello.id],
            content="group",
            topic="ignored for direct messages",
            scheduled_delivery_timestamp=NOW + 100,
        )
    )["scheduled_message_id"]
    # "private" is the deprecated name of "direct" (feature level 174).
    self_id = assert_success(
        await _schedule(
            env,
            type="private",
            to=[hamlet.id],
            content="note",
            scheduled_delivery_timestamp=NOW + 200,
        )
    )["scheduled_message_id"]
    assert await _list(env) == [
        {
            "scheduled_message_id": group_id,
            "type": "private",
            "to": sorted([othello.id, iago.id]),
            "content": "group",
            "rendered_content": "<p>group</p>",
            "scheduled_delivery_timestamp": NOW + 100,
            "failed": False,
        },
        {
            "scheduled_message_id": self_id,
            "type": "private",
            "to": [hamlet.id],
            "content": "note",
            "rendered_content": "<p>note</p>",
            "scheduled_delivery_timestamp": NOW + 200,
            "failed": False,
        },
        {
            "scheduled_message_id": stream_id,
            "type": "stream",
            "to": denmark.id,
            "topic": "plans",
            "content": "**later**",
            "rendered_content": "<p><strong>later</strong></p>",
            "scheduled_delivery_timestamp": NOW + 300,
            "failed": False,
        },
    ]
    assert await _list(env, "othello") == []
    # Nothing was sent yet.
    body = assert_success(
        await env.client("hamlet").get(
            "/messages", {"anchor": "newest", "num_before": 10, "num_after": 0}
        )
    )
    assert body["messages"] == []


async def test_topic_and_content_are_normalized_as_for_sending(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    params: dict[str, Any] = {
        "type": "stream",
        "to": denmark.id,
        "scheduled_delivery_timestamp": NOW + 60,
    }
    sid = assert_success(await _schedule(env, **params, subject="x" * 70, content="a" * 10_050))[
        "scheduled_message_id"
    ]
    (item,) = await _list(env)
    assert item["scheduled_message_id"] == sid
    assert item["topic"] == "x" * 57 + "..."
    assert len(item["content"]) == 10_000
    assert item["content"].endswith("\n[message truncated]")
    assert_error(await _schedule(env, **params, content="hi"), "Missing topic")
    assert_error(
        await _schedule(env, **params, topic="lunch\x07", content="hi"),
        "Invalid character in topic, at position 6!",
    )
    assert_error(
        await _schedule(env, **params, topic="t", content="  \n"), "Message must not be empty"
    )


async def test_read_by_sender(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    hamlet, othello = env.users["hamlet"], env.users["othello"]
    at = NOW + 60

    async def read_by_sender(client: str | None, **params: Any) -> bool | None:
        headers = {"User-Agent": f"{client}/1.0"} if client else {}
        response = await env.client("hamlet", headers=headers).post(
            "/scheduled_messages",
            {"content": "x", "scheduled_delivery_timestamp": at, **params},
        )
        row = await _row(env, assert_success(response)["scheduled_message_id"])
        return row.read_by_sender  # type: ignore[no-any-return]

    stream = {"type": "stream", "to": denmark.id, "topic": "t"}
    # Zulip's rule: a client a person types in marks it read, unless it is a note to self.
    assert await read_by_sender("ZulipMobile", **stream) is True
    assert await read_by_sender("ZulipMobile", type="direct", to=[othello.id]) is True
    assert await read_by_sender("ZulipMobile", type="direct", to=[hamlet.id]) is False
    assert await read_by_sender("ZulipPython", **stream) is False
    assert await read_by_sender("ZulipPython", **stream, read_by_sender=True) is True
    assert await read_by_sender("website", type="direct", to=[hamlet.id], read_by_sender=True)


async def test_validation_errors(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    base: dict[str, Any] = {"content": "hi", "topic": "t", "scheduled_delivery_timestamp": NOW + 60}
    body = assert_error(
        await _schedule(env, **base, type="stream", to=9999),
        "Stream with ID '9999' does not exist",
        code="STREAM_DOES_NOT_EXIST",
    )
    assert body["stream_id"] == 9999
    assert_error(await _schedule(env, **base, type="direct", to=[9999]), "Invalid user ID 9999")
    assert_error(
        await _schedule(env, **base, type="stream", to="Denmark"), "Invalid data type for stream ID"
    )
    assert_error(
        await _schedule(env, **base, type="direct", to=env.users["othello"].id),
        "Invalid data type for recipients",
    )
    assert_error(
        await _schedule(env, **base, type="direct", to=["othello@example.com"]),
        "Recipient list may only contain user IDs",
    )
    assert_error(await _schedule(env, **base, type="huddle", to=denmark.id), "Invalid type")
    for when in (NOW, NOW - 10):
        assert_error(
            await _schedule(
                env,
                type="stream",
                to=denmark.id,
                topic="t",
                content="hi",
                scheduled_delivery_timestamp=when,
            ),
            "Scheduled delivery time must be in the future.",
        )
    assert_error(
        await _schedule(
            env,
            type="stream",
            to=denmark.id,
            topic="t",
            content="hi",
            scheduled_delivery_timestamp=NOW + 0.5,
        ),
        "scheduled_delivery_timestamp is not an integer",
    )
    assert_error(
        await _schedule(env, type="stream", to=denmark.id, content="hi"),
        "Missing 'scheduled_delivery_timestamp' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert await _list(env) == []


async def test_sending_permissions_are_checked_when_scheduling(env: TestEnv) -> None:
    secret = await env.subscribe("othello", "secret", invite_only=True)
    base: dict[str, Any] = {
        "type": "stream",
        "content": "hi",
        "topic": "t",
        "scheduled_delivery_timestamp": NOW + 60,
    }
    assert_error(
        await _schedule(env, **base, to=secret.id), "Not authorized to send to stream 'secret'"
    )
    announce = await env.subscribe("hamlet", "announce")
    assert_success(
        await env.client("iago").patch(f"/streams/{announce.id}", {"stream_post_policy": 2})
    )
    assert_error(
        await _schedule(env, **base, to=announce.id),
        "You do not have permission to post in this channel.",
    )
    assert_success(await _schedule(env, "iago", **base, to=announce.id))
    # Guests need a subscription even for public streams.
    public = await env.subscribe("hamlet", "public")
    assert_error(
        await _schedule(env, "polonius", **base, to=public.id),
        "Not authorized to send to stream 'public'",
    )
    await set_group_setting(env, "direct_message_permission_group", "role:nobody")
    direct: dict[str, Any] = {
        "type": "direct",
        "content": "hi",
        "scheduled_delivery_timestamp": NOW + 60,
    }
    assert_error(
        await _schedule(env, **direct, to=[env.users["othello"].id]),
        "Direct messages are disabled in this organization.",
    )
    note = assert_success(await _schedule(env, **direct, to=[env.users["hamlet"].id]))
    assert [i["scheduled_message_id"] for i in await _list(env)] == [note["scheduled_message_id"]]


async def test_edit(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("hamlet", "Verona")
    verona_id = (await env.subscribe("othello", "Verona")).id
    othello = env.users["othello"]
    sid = assert_success(
        await _schedule(
            env,
            type="stream",
            to=denmark.id,
            topic="t",
            content="one",
            scheduled_delivery_timestamp=NOW + 60,
        )
    )["scheduled_message_id"]
    client = env.client("hamlet")
    path = f"/scheduled_messages/{sid}"

    async def current() -> dict[str, Any]:
        (item,) = await _list(env)
        return item

    assert_success(await client.patch(path, {"content": "*two*"}))
    assert (await current())["rendered_content"] == "<p><em>two</em></p>"
    assert_success(await client.patch(path, {"topic": "new topic"}))
    assert ((await current())["topic"], (await current())["to"]) == ("new topic", denmark.id)
    assert_success(await client.patch(path, {"to": verona_id}))
    assert ((await current())["to"], (await current())["topic"]) == (verona_id, "new topic")
    assert_success(await client.patch(path, {"scheduled_delivery_timestamp": NOW + 500}))
    assert (await current())["scheduled_delivery_timestamp"] == NOW + 500
    # To a direct message: the topic goes; a topic alone is then ignored.
    assert_success(await client.patch(path, {"type": "direct", "to": [othello.id]}))
    item = await current()
    assert (item["type"], item["to"], "topic" in item) == ("private", [othello.id], False)
    assert_success(await client.patch(path, {"topic": "ignored"}))
    assert "topic" not in await current()
    assert (await _row(env, sid)).topic == ""
    assert_success(await client.patch(path, {"type": "stream", "to": denmark.id, "topic": "back"}))
    item = await current()
    assert (item["type"], item["to"], item["topic"], item["content"]) == (
        "stream",
        denmark.id,
        "back",
        "*two*",
    )

    assert_error(await client.patch(path, {}), "Nothing to change")
    assert_error(
        await client.patch(path, {"type": "direct"}),
        "Recipient required when updating type of scheduled message.",
    )
    assert_error(
        await client.patch(path, {"type": "stream", "to": denmark.id}),
        "Topic required when updating scheduled message type to stream.",
    )
    assert_error(
        await client.patch(path, {"scheduled_delivery_timestamp": NOW - 1}),
        "Scheduled delivery time must be in the future.",
    )
    body = assert_error(
        await client.patch(path, {"to": 9999}),
        "Stream with ID '9999' does not exist",
        code="STREAM_DOES_NOT_EXIST",
    )
    assert body["stream_id"] == 9999
    assert_error(await client.patch(path, {"type": "direct", "to": [9999]}), "Invalid user ID 9999")
    assert_error(await client.patch(path, {"content": " "}), "Message must not be empty")
    # A failed request changed nothing.
    assert (await current()) == item
    for other, target in (("othello", path), ("hamlet", "/scheduled_messages/9999")):
        assert_error(
            await env.client(other).patch(target, {"content": "x"}),
            "Scheduled message does not exist",
            status=404,
        )


async def test_edit_of_failed_message_needs_a_time_and_rearms_it(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    sid = assert_success(
        await _schedule(
            env,
            type="stream",
            to=denmark.id,
            topic="t",
            content="hi",
            scheduled_delivery_timestamp=NOW + 60,
        )
    )["scheduled_message_id"]
    assert_success(await env.client("iago").delete(f"/streams/{denmark.id}"))
    env.advance(60)
    assert await deliver_due_scheduled_messages(env.services) == 1
    (item,) = await _list(env)
    assert item["failed"] is True
    path = f"/scheduled_messages/{sid}"
    client = env.client("hamlet")
    assert_error(
        await client.patch(path, {"content": "again"}),
        "Scheduled delivery time must be in the future.",
    )
    verona = await env.subscribe("hamlet", "Verona")
    assert_success(
        await client.patch(path, {"to": verona.id, "scheduled_delivery_timestamp": NOW + 120})
    )
    (item,) = await _list(env)
    assert (item["failed"], item["to"], item["scheduled_delivery_timestamp"]) == (
        False,
        verona.id,
        NOW + 120,
    )
    row = await _row(env, sid)
    assert (row.failed, row.failure_message) == (False, None)


async def test_delete(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    params: dict[str, Any] = {"type": "stream", "to": denmark.id, "topic": "t", "content": "hi"}
    first = assert_success(await _schedule(env, **params, scheduled_delivery_timestamp=NOW + 60))
    second = assert_success(await _schedule(env, **params, scheduled_delivery_timestamp=NOW + 90))
    path = f"/scheduled_messages/{first['scheduled_message_id']}"
    assert_error(
        await env.client("othello").delete(path), "Scheduled message does not exist", status=404
    )
    assert_success(await env.client("hamlet").delete(path))
    assert [i["scheduled_message_id"] for i in await _list(env)] == [second["scheduled_message_id"]]
    assert_error(
        await env.client("hamlet").delete(path), "Scheduled message does not exist", status=404
    )


async def test_delivered_message_cannot_be_edited_but_can_be_deleted(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    sid = assert_success(
        await _schedule(
            env,
            type="stream",
            to=denmark.id,
            topic="t",
            content="hi",
            scheduled_delivery_timestamp=NOW + 60,
        )
    )["scheduled_message_id"]
    env.advance(61)
    assert await deliver_due_scheduled_messages(env.services) == 1
    assert await _list(env) == []
    path = f"/scheduled_messages/{sid}"
    assert_error(
        await env.client("hamlet").patch(path, {"content": "changed"}),
        "Scheduled message was already sent",
    )
    assert_success(await env.client("hamlet").delete(path))


async def test_uploads_are_linked_on_create_and_content_edit(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    first = await upload(env, "hamlet", name="first.txt")
    second = await upload(env, "hamlet", name="second.txt")
    sid = assert_success(
        await _schedule(
            env,
            type="stream",
            to=denmark.id,
            topic="t",
            content=f"[file](/user_uploads/{first})",
            scheduled_delivery_timestamp=NOW + 60,
        )
    )["scheduled_message_id"]

    async def linked() -> list[str]:
        async with env.services.db.read() as conn:
            rows = await conn.execute(
                sa.select(attachment.c.file_name)
                .join(scheduled_attachment, scheduled_attachment.c.attachment_id == attachment.c.id)
                .where(scheduled_attachment.c.scheduled_id == sid)
            )
            return sorted(r[0] for r in rows)

    assert await linked() == ["first.txt"]
    # Edits that leave the content alone keep the links.
    assert_success(await env.client("hamlet").patch(f"/scheduled_messages/{sid}", {"topic": "u"}))
    assert await linked() == ["first.txt"]
    assert_success(
        await env.client("hamlet").patch(
            f"/scheduled_messages/{sid}", {"content": f"[other](/user_uploads/{second})"}
        )
    )
    assert await linked() == ["second.txt"]
