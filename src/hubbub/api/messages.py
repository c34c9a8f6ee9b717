"""Sending one message (``POST /messages``), fetching one (``GET /messages/{message_id}``)
and previewing a rendering (``POST /messages/render``)."""

from __future__ import annotations

from typing import Annotated

from sqlalchemy.exc import IntegrityError

from hubbub.actions.send_message import SendRequest, check_send_message, render_before_writing
from hubbub.actions.send_retries import do_record_send_key, get_resent_message_id
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import Param, PathInt
from hubbub.api.urls import realm_url
from hubbub.errors import JsonableError
from hubbub.queries.messages import get_readable_message
from hubbub.queries.render_context import load_render_context
from hubbub.rendering import render_markdown_off_loop
from hubbub.topic_names import message_for_client

# "private" is the pre-feature-level-174 name of "direct"; "channel" is the name newer
# clients (Zulip 9.0, feature level 248) send for "stream", accepted for them.
_MESSAGE_TYPES = {"stream": "stream", "channel": "stream", "direct": "direct", "private": "direct"}


@endpoint("POST", "/messages")
async def send_message(
    req: ApiRequest,
    *,
    type: str,
    to: Annotated[str, Param(json=False)],
    content: str,
    topic: Annotated[str | None, Param(aliases=("subject",))] = None,
    queue_id: str | None = None,
    local_id: str | None = None,
    read_by_sender: bool | None = None,
) -> Payload:
    """Send a message"""
    kind = _MESSAGE_TYPES.get(type)
    if kind is None:
        raise JsonableError("Invalid message type")
    request = SendRequest(
        type=kind,
        to=to,
        topic=topic,
        content=content,
        client_name=req.client_name,
        queue_id=queue_id,
        local_id=local_id,
        read_by_sender=read_by_sender,
    )
    rendering = await render_before_writing(
        req.services.db, req.my_realm, req.me, request, realm_url=realm_url(req)
    )
    try:
        async with req.services.write() as tx:
            repeated = await get_resent_message_id(tx.conn, req.me.id, queue_id, local_id)
            if repeated is not None:
                return {"id": repeated}
            result = await check_send_message(
                tx,
                req.my_realm,
                req.me,
                request,
                realm_url=realm_url(req),
                now=req.services.clock.now(),
                rendering=rendering,
            )
            await do_record_send_key(
                tx.conn, req.me.id, queue_id, local_id, result.message_id, req.services.clock.now()
            )
    except IntegrityError:
        # A copy of this request committed first (a client retrying while the original was
        # still running); this one rolled back whole. Answer with the copy's message.
        async with req.services.db.read() as conn:
            repeated = await get_resent_message_id(conn, req.me.id, queue_id, local_id)
        if repeated is None:
            raise
        return {"id": repeated}
    payload: Payload = {"id": result.message_id}
    if result.automatic_new_visibility_policy is not None:
        payload["automatic_new_visibility_policy"] = result.automatic_new_visibility_policy
    return payload


@endpoint("GET", "/messages/{message_id:int}", reads=True)
async def get_message(
    req: ApiRequest,
    *,
    message_id: PathInt,
    apply_markdown: bool = True,
    allow_empty_topic_name: bool = False,
) -> Payload:
    """Fetch a single message"""
    found = await get_readable_message(
        req.read_conn,
        req.me,
        message_id,
        apply_markdown=apply_markdown,
        realm_str=req.my_realm.string_id,
        people=req.services.people,
    )
    # The empty topic, for clients that allow it (feature level 334).
    shown = message_for_client(found.item, allow_empty_topic_name=allow_empty_topic_name)
    item = {**shown, "flags": found.access.flag_names}
    # The top-level raw_content is deprecated since feature level 120 but still sent.
    return {"raw_content": found.raw_content, "message": item}


@endpoint("POST", "/messages/render")
async def render_message(req: ApiRequest, *, content: str) -> Payload:
    """Render a message"""
    async with req.services.db.read() as conn:
        ctx = await load_render_context(
            conn, req.my_realm, req.me, realm_url=realm_url(req), content=content
        )
    return {"rendered": (await render_markdown_off_loop(content, ctx)).html}
