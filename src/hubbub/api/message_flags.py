"""Personal message flags and reading: ``POST /messages/flags``, ``POST
/messages/flags/narrow``, ``POST /mark_all_as_read``, ``/mark_stream_as_read``,
``/mark_topic_as_read`` and ``GET /messages/{message_id}/read_receipts``."""

from __future__ import annotations

from typing import Annotated, Any

from hubbub.actions.mark_read import do_mark_all_as_read, do_mark_stream_messages_as_read
from hubbub.actions.message_flags import (
    NarrowRange,
    check_flag_change,
    check_update_message_flags,
    do_update_flags_for_narrow,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import Param, PathInt
from hubbub.errors import JsonableError
from hubbub.queries.message_fetch import parse_anchor
from hubbub.queries.message_flags import get_read_receipt_user_ids, user_has_message_in_topic
from hubbub.queries.messages import access_message
from hubbub.queries.narrow import parse_narrow
from hubbub.queries.streams import access_stream_by_id

# Zulip bounds one narrow update to 5,000 messages (one transaction's worth).
MAX_MESSAGES_PER_UPDATE = 5000


@endpoint("POST", "/messages/flags")
async def update_message_flags(
    req: ApiRequest, *, messages: list[int], op: str, flag: str
) -> Payload:
    """Update personal message flags"""
    async with req.services.write() as tx:
        change = await check_update_message_flags(tx, req.me, op, flag, messages)
    # Zulip echoes the ids it was given, changed or not ("useless, but included for
    # backwards compatibility"). It lists the skipped streams (feature level 355) for
    # every flag and operation, empty unless marking unread.
    return {
        "messages": messages,
        "ignored_because_not_subscribed_channels": change.ignored_stream_ids,
    }


def _non_negative(name: str, value: int) -> int:
    if value < 0:
        raise JsonableError(f"Bad value for '{name}': {value}")
    return value


def clamp_range(num_before: int, num_after: int) -> tuple[int, int]:
    """Lower the counts so that together they stay within the update bound, keeping at
    least half of it for the side before the anchor when both ask for much (as Zulip)."""
    half = MAX_MESSAGES_PER_UPDATE // 2
    num_before = min(num_before, max(MAX_MESSAGES_PER_UPDATE - num_after, half))
    num_after = min(num_after, MAX_MESSAGES_PER_UPDATE - num_before)
    return num_before, num_after


@endpoint("POST", "/messages/flags/narrow")
async def update_message_flags_for_narrow(
    req: ApiRequest,
    *,
    anchor: Annotated[str, Param(json=False)],
    include_anchor: bool = True,
    num_before: int,
    num_after: int,
    narrow: list[Any] | None,
    op: str,
    flag: str,
) -> Payload:
    """Update personal message flags for narrow"""
    terms = parse_narrow(narrow)
    anchor_id = parse_anchor(anchor, use_first_unread_anchor=False)
    _non_negative("num_before", num_before)
    _non_negative("num_after", num_after)
    if num_before > 0 and num_after > 0 and not include_anchor:
        raise JsonableError("The anchor can only be excluded at an end of the range")
    bit = check_flag_change(op, flag)
    async with req.services.write() as tx:
        result = await do_update_flags_for_narrow(
            tx,
            req.me,
            terms,
            anchor_id,
            NarrowRange(include_anchor, *clamp_range(num_before, num_after)),
            op,
            flag,
            bit,
        )
    return result


@endpoint("POST", "/mark_all_as_read")
async def mark_all_as_read(req: ApiRequest) -> Payload:
    """Mark all messages as read"""
    async with req.services.write() as tx:
        await do_mark_all_as_read(tx, req.me)
    return {"complete": True}


@endpoint("POST", "/mark_stream_as_read")
async def mark_stream_as_read(req: ApiRequest, *, stream_id: int) -> Payload:
    """Mark messages in a stream as read"""
    async with req.services.write() as tx:
        await access_stream_by_id(tx.conn, req.me, stream_id, allow_admin=False)
        await do_mark_stream_messages_as_read(tx, req.me, stream_id)
    return {}


@endpoint("POST", "/mark_topic_as_read")
async def mark_topic_as_read(req: ApiRequest, *, stream_id: int, topic_name: str) -> Payload:
    """Mark messages in a topic as read"""
    async with req.services.write() as tx:
        await access_stream_by_id(tx.conn, req.me, stream_id, allow_admin=False)
        # As Zulip: an empty topic name marks the whole stream read.
        if topic_name and not await user_has_message_in_topic(
            tx.conn, req.me.id, stream_id, topic_name
        ):
            raise JsonableError(f"No such topic '{topic_name}'")
        await do_mark_stream_messages_as_read(tx, req.me, stream_id, topic_name)
    return {}


@endpoint("GET", "/messages/{message_id:int}/read_receipts")
async def get_read_receipts(req: ApiRequest, *, message_id: PathInt) -> Payload:
    """Get the list of IDs of users who have read a message."""
    async with req.services.db.read() as conn:
        found = await access_message(conn, req.me, message_id)
        # Access first, then the realm setting: Zulip's order.
        if not req.my_realm.setting("enable_read_receipts"):
            raise JsonableError("Read receipts are disabled in this organization.")
        user_ids = await get_read_receipt_user_ids(conn, req.me, found.id)
    return {"user_ids": user_ids}
