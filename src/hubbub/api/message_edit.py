"""Editing a message (``PATCH /messages/{message_id}``) and reading its edit history
(``GET /messages/{message_id}/history``)."""

from __future__ import annotations

from typing import Annotated, Literal

from hubbub.actions.edit_checks import EditRequest
from hubbub.actions.edit_message import check_update_message
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import Param, PathInt
from hubbub.api.urls import realm_url
from hubbub.queries.message_history import get_message_history

PropagateMode = Literal["change_one", "change_later", "change_all"]


@endpoint("PATCH", "/messages/{message_id:int}")
async def update_message(
    req: ApiRequest,
    *,
    message_id: PathInt,
    # "subject" is the name before Zulip 2.0; sending both is "Can't decide between".
    topic: Annotated[str | None, Param(aliases=("subject",))] = None,
    propagate_mode: PropagateMode = "change_one",
    # Defaults as since feature level 152.
    send_notification_to_old_thread: bool = False,
    send_notification_to_new_thread: bool = True,
    content: str | None = None,
    stream_id: int | None = None,
) -> Payload:
    """Edit a message"""
    request = EditRequest(
        content=content,
        topic=topic,
        stream_id=stream_id,
        propagate_mode=propagate_mode,
        send_notification_to_old_thread=send_notification_to_old_thread,
        send_notification_to_new_thread=send_notification_to_new_thread,
    )
    async with req.services.write() as tx:
        result = await check_update_message(
            tx,
            req.my_realm,
            req.me,
            message_id,
            request,
            realm_url=realm_url(req),
            now=req.services.clock.now(),
        )
    # Always present, empty when no upload was detached (feature level 285).
    return {"detached_uploads": result.detached_uploads}


@endpoint("GET", "/messages/{message_id:int}/history")
async def get_message_edit_history(
    req: ApiRequest, *, message_id: PathInt, allow_empty_topic_name: bool = False
) -> Payload:
    """Get a message's edit history"""
    async with req.services.db.read() as conn:
        history = await get_message_history(
            conn, req.my_realm, req.me, message_id, allow_empty_topic_name=allow_empty_topic_name
        )
    return {"message_history": history}
