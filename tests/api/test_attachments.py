"""``GET /attachments``, ``DELETE /attachments/{id}``, linking uploads to messages (send,
edit, delete, scheduled messages) and the ``attachment`` events the owner receives."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.actions.attachments import do_update_scheduled_message_attachments
from hubbub.db.tables import attachment, scheduled_attachment, scheduled_message
from tests.events.verify import verify_action
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import send_stream_message
from tests.uploads_helpers import fetch, upload


@pytest.fixture
def env(bus_env: TestEnv) -> TestEnv:
    # The events these tests check travel on both buses.
    return bus_env


async def attachments(env: TestEnv, user: str = "hamlet") -> dict[str, Any]:
    return assert_success(await env.client(user).get("/attachments"))


def stored(env: TestEnv, path_id: str) -> bool:
    return (env.services.settings.data_dir / "uploads" / path_id).exists()


async def test_get_attachments(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    assert await attachments(env) == {
        "result": "success",
        "msg": "",
        "attachments": [],
        "upload_space_used": 0,
    }
    first = await upload(env, "hamlet", b"12345", "a.txt")
    await upload(env, "othello", b"123", "b.txt")
    message_id = await send_stream_message(env, "hamlet", "Denmark", f"/user_uploads/{first}")
    body = await attachments(env)
    assert body["upload_space_used"] == 8  # the whole realm's uploads
    [item] = body["attachments"]
    now_ms = int(env.services.clock.now() * 1000)
    assert item["name"] == "a.txt" and item["path_id"] == first and item["size"] == 5
    assert isinstance(item["create_time"], int) and abs(item["create_time"] - now_ms) < 60_000
    [linked] = item["messages"]
    assert linked["id"] == message_id and isinstance(linked["date_sent"], int)
    assert [a["name"] for a in (await attachments(env, "othello"))["attachments"]] == ["b.txt"]


async def test_edit_relinks(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    a = await upload(env, "hamlet", name="a.txt")
    b = await upload(env, "hamlet", name="b.txt")
    message_id = await send_stream_message(env, "hamlet", "Denmark", f"[a](/user_uploads/{a})")

    async def links() -> dict[str, list[int]]:
        return {
            item["name"]: [m["id"] for m in item["messages"]]
            for item in (await attachments(env))["attachments"]
        }

    assert await links() == {"a.txt": [message_id], "b.txt": []}
    client = env.client("hamlet")
    assert_success(
        await client.patch(f"/messages/{message_id}", {"content": f"[b](/user_uploads/{b})"})
    )
    # The dropped upload stays (unlinked), as in Zulip.
    assert await links() == {"a.txt": [], "b.txt": [message_id]}
    assert stored(env, a)


async def test_deleting_the_last_message_deletes_the_upload(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    path_id = await upload(env, "hamlet")
    content = f"[f](/user_uploads/{path_id})"
    first = await send_stream_message(env, "hamlet", "Denmark", content)
    second = await send_stream_message(env, "hamlet", "Denmark", content)
    iago = env.client("iago")
    assert_success(await iago.delete(f"/messages/{first}"))
    [item] = (await attachments(env))["attachments"]
    assert [m["id"] for m in item["messages"]] == [second]
    assert stored(env, path_id)
    assert_success(await iago.delete(f"/messages/{second}"))
    assert (await attachments(env))["attachments"] == []
    assert not stored(env, path_id)
    assert (await fetch(env, f"/user_uploads/{path_id}", "hamlet")).status_code == 404


async def test_delete_attachment(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    path_id = await upload(env, "hamlet")
    [item] = (await attachments(env))["attachments"]
    await send_stream_message(env, "hamlet", "Denmark", f"/user_uploads/{path_id}")
    # Not the owner, no such id, not logged in.
    assert_error(
        await env.client("othello").delete(f"/attachments/{item['id']}"), "Invalid attachment"
    )
    assert_error(
        await env.client("iago").delete(f"/attachments/{item['id']}"), "Invalid attachment"
    )
    assert_error(await env.client("hamlet").delete("/attachments/9999"), "Invalid attachment")
    assert_error(
        await env.client().delete(f"/attachments/{item['id']}"),
        "Not logged in: API authentication or user session required",
        status=401,
        code="UNAUTHORIZED",
    )
    assert stored(env, path_id)
    # Deletable even while a message links it.
    assert_success(await env.client("hamlet").delete(f"/attachments/{item['id']}"))
    assert (await attachments(env))["attachments"] == []
    assert not stored(env, path_id)
    assert_error(
        await env.client("hamlet").delete(f"/attachments/{item['id']}"), "Invalid attachment"
    )


async def test_attachment_events(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    hamlet = env.users["hamlet"]
    uploaded: list[str] = []

    async def do_upload() -> None:
        uploaded.append(await upload(env, "hamlet", b"1234"))

    [added] = await verify_action(env, hamlet, do_upload, num_events=1)
    assert added["type"] == "attachment" and added["op"] == "add"
    assert added["upload_space_used"] == 4
    assert added["attachment"]["messages"] == [] and added["attachment"]["size"] == 4
    attachment_id = added["attachment"]["id"]
    message_ids: list[int] = []

    async def send() -> None:
        message_ids.append(
            await send_stream_message(env, "hamlet", "Denmark", f"/user_uploads/{uploaded[0]}")
        )

    events = await verify_action(env, hamlet, send, event_types=["attachment"], num_events=1)
    assert events[0]["op"] == "update"
    assert [m["id"] for m in events[0]["attachment"]["messages"]] == message_ids

    async def delete_message() -> None:
        assert_success(await env.client("iago").delete(f"/messages/{message_ids[0]}"))

    events = await verify_action(
        env, hamlet, delete_message, event_types=["attachment"], num_events=1
    )
    assert events[0] == {
        "type": "attachment",
        "op": "remove",
        "attachment": {"id": attachment_id},
        "upload_space_used": 0,
        "id": events[0]["id"],
    }

    # Other users hear nothing of hamlet's uploads.
    await verify_action(env, env.users["othello"], do_upload, num_events=0)

    async def delete_upload() -> None:
        [item] = (await attachments(env))["attachments"]
        assert_success(await env.client("hamlet").delete(f"/attachments/{item['id']}"))

    [removed] = await verify_action(env, hamlet, delete_upload, num_events=1)
    assert removed["op"] == "remove" and removed["upload_space_used"] == 0


async def test_scheduled_messages_keep_their_uploads(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    hamlet = env.users["hamlet"]
    mine = await upload(env, "hamlet", name="mine.txt")
    others = await upload(env, "othello", name="others.txt")
    content = f"/user_uploads/{mine} /user_uploads/{others}"
    now = env.services.clock.now()
    async with env.services.write() as tx:
        scheduled_id = (
            await tx.conn.execute(
                sa.insert(scheduled_message)
                .values(
                    realm_id=env.realm.id,
                    sender_id=hamlet.id,
                    message_type="stream",
                    topic="t",
                    content=content,
                    rendered_content="",
                    scheduled_timestamp=now + 3600,
                    sending_client="test",
                )
                .returning(scheduled_message.c.id)
            )
        ).scalar_one()
        await do_update_scheduled_message_attachments(tx, hamlet, scheduled_id, content)

    async def scheduled_links() -> list[str]:
        async with env.services.db.read() as conn:
            rows = await conn.execute(
                sa.select(attachment.c.file_name)
                .join(scheduled_attachment, scheduled_attachment.c.attachment_id == attachment.c.id)
                .where(scheduled_attachment.c.scheduled_id == scheduled_id)
            )
            return sorted(r[0] for r in rows)

    # Only his own upload: othello's is not his to share.
    assert await scheduled_links() == ["mine.txt"]
    # A sent message linking it goes away; the scheduled message still needs the file.
    message_id = await send_stream_message(env, "hamlet", "Denmark", f"/user_uploads/{mine}")
    assert_success(await env.client("iago").delete(f"/messages/{message_id}"))
    assert stored(env, mine)
    assert [a["name"] for a in (await attachments(env))["attachments"]] == ["mine.txt"]
    async with env.services.write() as tx:
        await do_update_scheduled_message_attachments(tx, hamlet, scheduled_id, "no links")
    assert await scheduled_links() == []
