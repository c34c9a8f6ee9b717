"""``/scheduled_messages``: messages to be sent later (Zulip 7.0-8.0, feature levels 173,
179, 184 and 236)."""

from __future__ import annotations

from typing import Annotated

from hubbub.actions.scheduled_messages import (
    ScheduledEdit,
    check_delivery_time,
    check_edit_scheduled_message,
    check_scheduled_message,
    check_scheduled_type,
    do_delete_scheduled_message,
    do_schedule_message,
    parse_scheduled_to,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import Param, PathInt
from hubbub.api.urls import realm_url
from hubbub.queries.scheduled_messages import list_undelivered_scheduled_messages

_Topic = Annotated[str | None, Param(aliases=("subject",))]


@endpoint("GET", "/scheduled_messages")
async def get_scheduled_messages(req: ApiRequest) -> Payload:
    """Get scheduled messages"""
    async with req.services.db.read() as conn:
        items = await list_undelivered_scheduled_messages(conn, req.me.id)
    return {"scheduled_messages": items}


@endpoint("POST", "/scheduled_messages")
async def create_scheduled_message(
    req: ApiRequest,
    *,
    type: str,
    to: Annotated[str, Param(json=False)],
    content: str,
    scheduled_delivery_timestamp: int,
    topic: _Topic = None,
    read_by_sender: bool | None = None,
) -> Payload:
    """Create a scheduled message"""
    kind = check_scheduled_type(type)
    check_delivery_time(scheduled_delivery_timestamp, req.services.clock.now())
    target = parse_scheduled_to(kind, to)
    async with req.services.write() as tx:
        checked = await check_scheduled_message(
            tx,
            req.my_realm,
            req.me,
            kind=kind,
            to=target,
            topic=topic,
            content=content,
            realm_url=realm_url(req),
        )
        scheduled_id = await do_schedule_message(
            tx,
            req.me,
            checked,
            deliver_at=scheduled_delivery_timestamp,
            client_name=req.client_name,
            read_by_sender=read_by_sender,
        )
    return {"scheduled_message_id": scheduled_id}


@endpoint("PATCH", "/scheduled_messages/{scheduled_message_id:int}")
async def update_scheduled_message(
    req: ApiRequest,
    *,
    scheduled_message_id: PathInt,
    type: str | None = None,
    to: Annotated[str | None, Param(json=False)] = None,
    content: str | None = None,
    topic: _Topic = None,
    scheduled_delivery_timestamp: int | None = None,
) -> Payload:
    """Edit a scheduled message"""
    # An empty ``type`` counts as absent, as in Zulip.
    edit = ScheduledEdit(
        kind=check_scheduled_type(type) if type else None,
        to=to,
        topic=topic,
        content=content,
        deliver_at=scheduled_delivery_timestamp,
    )
    edit.check_shape()
    if scheduled_delivery_timestamp is not None:
        check_delivery_time(scheduled_delivery_timestamp, req.services.clock.now())
    async with req.services.write() as tx:
        await check_edit_scheduled_message(
            tx,
            req.my_realm,
            req.me,
            scheduled_message_id,
            edit,
            client_name=req.client_name,
            realm_url=realm_url(req),
        )
    return {}


@endpoint("DELETE", "/scheduled_messages/{scheduled_message_id:int}")
async def delete_scheduled_message(req: ApiRequest, *, scheduled_message_id: PathInt) -> Payload:
    """Delete a scheduled message"""
    async with req.services.write() as tx:
        await do_delete_scheduled_message(tx, req.me, scheduled_message_id)
    return {}
