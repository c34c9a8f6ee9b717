"""Emoji reactions (``POST``/``DELETE /messages/{message_id}/reactions``) and
submessages (``POST /submessage``)."""

from __future__ import annotations

from hubbub.actions.reactions import UNICODE_EMOJI, check_add_reaction, check_remove_reaction
from hubbub.actions.submessages import check_add_submessage
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import PathInt


@endpoint("POST", "/messages/{message_id:int}/reactions")
async def add_reaction(
    req: ApiRequest,
    *,
    message_id: PathInt,
    emoji_name: str,
    emoji_code: str | None = None,
    reaction_type: str | None = None,
) -> Payload:
    """Add an emoji reaction"""
    async with req.services.write() as tx:
        await check_add_reaction(
            tx,
            req.me,
            message_id,
            emoji_name,
            emoji_code,
            reaction_type,
            now=req.services.clock.now(),
        )
    return {}


@endpoint("DELETE", "/messages/{message_id:int}/reactions")
async def remove_reaction(
    req: ApiRequest,
    *,
    message_id: PathInt,
    emoji_name: str | None = None,
    emoji_code: str | None = None,
    reaction_type: str = UNICODE_EMOJI,
) -> Payload:
    """Remove an emoji reaction"""
    async with req.services.write() as tx:
        await check_remove_reaction(tx, req.me, message_id, emoji_name, emoji_code, reaction_type)
    return {}


@endpoint("POST", "/submessage")
async def add_submessage(
    req: ApiRequest, *, message_id: int, msg_type: str, content: str
) -> Payload:
    """Add a submessage (widget data) to a message"""
    # Zulip 8.0 leaves this endpoint out of its API documentation (widgets are
    # experimental) and answers a bare success.
    async with req.services.write() as tx:
        await check_add_submessage(
            tx, req.me, message_id, msg_type, content, now=req.services.clock.now()
        )
    return {}
