"""``POST /register``, ``GET /events`` and ``DELETE /events``: the real-time API."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from typing import Any

from hubbub.api.endpoint import ApiRequest, Payload, authenticate_by_database, endpoint
from hubbub.api.urls import realm_url
from hubbub.errors import BadEventQueueIdError, JsonableError
from hubbub.events.bus import CredentialsUnproved
from hubbub.events.queues import (
    DEFAULT_QUEUE_LIFESPAN_SECONDS,
    MAX_QUEUE_LIFESPAN_SECONDS,
    QueueSpec,
)
from hubbub.queries.narrow import check_narrow
from hubbub.queries.users import access_user_by_id
from hubbub.register.state import apply_event, fetch_initial_state

# Capabilities Zulip 8.0 clients may announce; each is a boolean.
CLIENT_CAPABILITIES = frozenset(
    {
        "notification_settings_null",
        "bulk_message_deletion",
        "user_avatar_url_field_optional",
        "stream_typing_notifications",
        "user_settings_object",
        "linkifier_url_template",
        "user_list_incomplete",
        # The empty topic as "" rather than its display name (feature level 334).
        "empty_topic_name",
        # Archived streams listed, and archiving sent as an is_archived update (level 315).
        "archived_channels",
        # Deactivated user groups in realm_user_groups and their events (level 294).
        "include_deactivated_groups",
    }
)


def check_capabilities(capabilities: dict[str, Any]) -> dict[str, bool]:
    checked: dict[str, bool] = {}
    for name, value in capabilities.items():
        if name not in CLIENT_CAPABILITIES:
            continue  # a newer client's capability; nothing to adapt here
        if not isinstance(value, bool):
            raise JsonableError(f'client_capabilities["{name}"] is not a boolean')
        checked[name] = value
    return checked


def check_lifespan(seconds: int | None) -> int:
    if seconds is None or seconds <= 0:
        return DEFAULT_QUEUE_LIFESPAN_SECONDS
    return min(seconds, MAX_QUEUE_LIFESPAN_SECONDS)


@endpoint("POST", "/register")
async def register(
    req: ApiRequest,
    *,
    event_types: list[str] | None = None,
    fetch_event_types: list[str] | None = None,
    narrow: list[Any] | None = None,
    apply_markdown: bool = False,
    client_gravatar: bool = True,
    slim_presence: bool = False,
    presence_history_limit_days: int | None = None,
    include_subscribers: bool = False,
    all_public_streams: bool = False,
    client_capabilities: dict[str, Any] | None = None,
    queue_lifespan_secs: int | None = None,
) -> Payload:
    """Register an event queue"""
    services = req.services
    if all_public_streams and req.me.is_guest:
        # Guests cannot read public streams they are not subscribed to.
        raise JsonableError("User not authorized for this query")
    spec = QueueSpec(
        queue_id=str(uuid.uuid4()),
        user_id=req.me.id,
        realm_id=req.my_realm.id,
        event_types=event_types,
        narrow=check_narrow(narrow or []),
        apply_markdown=apply_markdown,
        client_gravatar=client_gravatar,
        slim_presence=slim_presence,
        all_public_streams=all_public_streams,
        include_subscribers=include_subscribers,
        client_capabilities=check_capabilities(client_capabilities or {}),
        lifespan_seconds=check_lifespan(queue_lifespan_secs),
        client_name=req.client_name,
    )
    fetch_types = fetch_event_types if fetch_event_types is not None else event_types

    def wanted(kind: str) -> bool:
        if fetch_types is None:
            return True
        # The legacy muted_topics is left out for a client that names user_topic too.
        if kind == "muted_topics" and "user_topic" in fetch_types:
            return False
        return kind in fetch_types

    # Queue first, state second: a change committed in between is both in the state and
    # in the queue, and applying it again is harmless; the reverse order would lose it.
    await services.bus.create_queue(spec, services.clock.now())
    await services.bus.remember_credentials(spec.queue_id, req.credential, services.clock.now())
    async with services.db.read() as conn:
        me = await access_user_by_id(conn, req.my_realm.id, req.me.id)
        state = await fetch_initial_state(
            conn,
            me,
            req.my_realm,
            wanted,
            client_gravatar=client_gravatar,
            realm_uri=realm_url(req),
            settings=services.settings,
            include_subscribers=include_subscribers,
            slim_presence=slim_presence,
            presence_history_limit_days=presence_history_limit_days,
            client_capabilities=spec.client_capabilities,
            now=services.clock.now(),
            people=services.people,
        )
    raced = await services.bus.get_events(
        spec.queue_id, None, block=False, now=services.clock.now()
    )
    for event in raced:
        if wanted(event["type"]):
            apply_event(state, event, include_subscribers=include_subscribers)
    state["queue_id"] = spec.queue_id
    state["last_event_id"] = raced[-1]["id"] if raced else -1
    return state


async def _access_queue(req: ApiRequest, queue_id: str) -> None:
    spec = await req.services.bus.get_queue(queue_id)
    if spec is None or spec.user_id != req.me.id:
        raise BadEventQueueIdError(queue_id)


async def _trust_caller(req: ApiRequest, queue_id: str) -> None:
    """The database, not the queue, vouched for the caller (the first poll, or the
    queue's trust lapsed): the queue must be theirs, and trusts them again."""
    await _access_queue(req, queue_id)
    await req.services.bus.remember_credentials(queue_id, req.credential, req.services.clock.now())


@endpoint("GET", "/events", queue_auth=True)
async def get_events(
    req: ApiRequest, *, queue_id: str, last_event_id: int | None = None, dont_block: bool = False
) -> Payload:
    """Get events from an event queue"""
    if req.user is not None:
        await _trust_caller(req, queue_id)
    credential = req.vouch.digest if req.vouch is not None else None
    try:
        events = await _poll(req, queue_id, last_event_id, dont_block, credential)
    except CredentialsUnproved:
        # The queue's word did not hold (the poll changed nothing): ask the database.
        await authenticate_by_database(req)
        await _trust_caller(req, queue_id)
        events = await _poll(req, queue_id, last_event_id, dont_block, None)
    return {"events": events, "queue_id": queue_id}


def _poll(
    req: ApiRequest,
    queue_id: str,
    last_event_id: int | None,
    dont_block: bool,
    credential: str | None,
) -> Awaitable[list[dict[str, Any]]]:
    """The bus's poll itself, not a coroutine of its own: a waiting poll holds every frame
    of its chain for up to a minute, and a closure awaited in between would be one more
    frame per idle client (``bench/longpoll.py`` measures it)."""
    return req.services.bus.get_events(
        queue_id,
        last_event_id,
        block=not dont_block,
        now=req.services.clock.now(),
        credential=credential,
    )


@endpoint("DELETE", "/events")
async def delete_queue(req: ApiRequest, *, queue_id: str) -> Payload:
    """Delete an event queue"""
    await _access_queue(req, queue_id)
    await req.services.bus.delete_queue(queue_id)
    return {}
