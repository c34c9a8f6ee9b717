"""Typing notifications: ``POST /typing`` while composing and
``POST /messages/{message_id}/typing`` while editing (feature level 351; the path since
level 361)."""

from __future__ import annotations

from typing import Annotated, Literal

from hubbub.actions.typing import (
    check_send_direct_typing,
    check_send_message_edit_typing,
    check_send_stream_typing,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import Param, PathInt
from hubbub.errors import JsonableError


@endpoint("POST", "/typing")
async def set_typing_status(
    req: ApiRequest,
    *,
    op: Literal["start", "stop"],
    # "private" is no longer accepted since feature level 215; "channel" means "stream"
    # since feature level 248.
    type: Literal["direct", "stream", "channel"] = "direct",
    to: list[int] | None = None,
    stream_id: int | None = None,
    # Zulip 10.2 takes the old name "subject" here too, as everywhere a topic is sent.
    topic: Annotated[str | None, Param(aliases=("subject",))] = None,
) -> Payload:
    """Set "typing" status"""
    async with req.services.write() as tx:
        if type in ("stream", "channel"):
            await check_send_stream_typing(tx, req.me, stream_id, topic, op)
        else:
            if to is None:
                raise JsonableError("Missing 'to' argument")
            await check_send_direct_typing(tx, req.me, to, op)
    return {}


@endpoint("POST", "/messages/{message_id:int}/typing")
async def set_typing_status_for_message_edit(
    req: ApiRequest, *, message_id: PathInt, op: Literal["start", "stop"]
) -> Payload:
    """Set "typing" status for message editing"""
    async with req.services.write() as tx:
        await check_send_message_edit_typing(
            tx, req.my_realm, req.me, message_id, op, now=req.services.clock.now()
        )
    return {}
