"""Sending messages in tests (shared by the message test modules; other areas may use it)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import user_message
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
