"""Sending, reading and editing messages in tests (shared by the message test modules;
other areas may use them)."""

from __future__ import annotations

from typing import Any, cast

import httpx
import sqlalchemy as sa

from hubbub.db.tables import message, user_message
from tests.helpers import TestEnv, assert_success


async def send_stream_message(
    env: TestEnv,
    sender: str,
    stream: str,
    content: str = "hello",
    topic: str = "test",
    **extra: Any,
) -> int:
    """Send through the API as ``sender``; the new message's id."""
    params = {"type": "stream", "to": stream, "topic": topic, "content": content, **extra}
    return int(assert_success(await env.client(sender).post("/messages", params))["id"])


async def send_direct_message(
    env: TestEnv, sender: str, to: list[str], content: str = "hello", **extra: Any
) -> int:
    """Send a direct message to the named test users; the new message's id."""
    ids = [env.users[name].id for name in to]
    params = {"type": "direct", "to": ids, "content": content, **extra}
    return int(assert_success(await env.client(sender).post("/messages", params))["id"])


async def message_flags(env: TestEnv, message_id: int) -> dict[int, int]:
    """user id -> flags bits of every user_message row of the message."""
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(user_message.c.user_profile_id, user_message.c.flags).where(
                user_message.c.message_id == message_id
            )
        )
        return {uid: int(flags) for uid, flags in rows}


async def edit_message(env: TestEnv, user: str, message_id: int, **params: Any) -> httpx.Response:
    """``PATCH /messages/{message_id}`` as ``user``; the response, for the caller to check."""
    return await env.client(user).patch(f"/messages/{message_id}", params)


async def fetch_message(env: TestEnv, user: str, message_id: int) -> dict[str, Any]:
    """``GET /messages/{message_id}`` as ``user``; the message."""
    body = assert_success(await env.client(user).get(f"/messages/{message_id}"))
    return cast(dict[str, Any], body["message"])


async def message_history(env: TestEnv, user: str, message_id: int) -> list[dict[str, Any]]:
    """``GET /messages/{message_id}/history`` as ``user``; the snapshots, oldest first."""
    body = assert_success(await env.client(user).get(f"/messages/{message_id}/history"))
    return cast(list[dict[str, Any]], body["message_history"])


async def backdate_messages(env: TestEnv, message_ids: list[int], seconds: float) -> None:
    """Make the messages ``seconds`` older, as if sent that long before (edit and move
    time limits count from the sending)."""
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(message)
            .where(message.c.id.in_(message_ids))
            .values(date_sent=message.c.date_sent - seconds)
        )
