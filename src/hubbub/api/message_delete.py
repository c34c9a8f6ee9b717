"""Deleting a message (``DELETE /messages/{message_id}``) and a topic
(``POST /streams/{stream_id}/delete_topic``)."""

from __future__ import annotations

from hubbub.actions.delete_message import (
    DELETE_TOPIC_TIME_LIMIT_SECONDS,
    check_delete_message,
    do_delete_topic_batch,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import PathInt
from hubbub.errors import OrganizationAdminRequiredError
from hubbub.queries.streams import access_stream_by_id


@endpoint("DELETE", "/messages/{message_id:int}")
async def delete_message(req: ApiRequest, *, message_id: PathInt) -> Payload:
    """Delete a message"""
    async with req.services.write() as tx:
        await check_delete_message(
            tx, req.my_realm, req.me, message_id, now=req.services.clock.now()
        )
    return {}


@endpoint("POST", "/streams/{stream_id:int}/delete_topic")
async def delete_topic(req: ApiRequest, *, stream_id: PathInt, topic_name: str) -> Payload:
    """Delete a topic"""
    # Zulip checks the role before looking at the stream.
    if not req.me.is_realm_admin:
        raise OrganizationAdminRequiredError()
    async with req.services.db.read() as conn:
        # As Zulip: a private stream needs a subscription, even for an administrator.
        target, _ = await access_stream_by_id(conn, req.me, stream_id, allow_admin=False)
    clock = req.services.clock
    deadline = clock.monotonic() + DELETE_TOPIC_TIME_LIMIT_SECONDS
    while clock.monotonic() < deadline:
        async with req.services.write() as tx:
            deleted = await do_delete_topic_batch(tx, req.me, target, topic_name)
        if not deleted:
            return {"complete": True}
    # Out of time with messages left: whole batches are gone and the client repeats the
    # request (since feature level 211 a success with complete=false, no longer the
    # "partially_completed" result of feature level 154).
    return {"complete": False}
