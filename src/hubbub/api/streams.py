"""``/streams``: list, fetch, look up by name, subscribers, topics and archiving; and
``/default_streams`` (administrators)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.default_streams import do_remove_default_stream
from hubbub.actions.stream_admin import check_add_default_stream, do_deactivate_stream
from hubbub.actions.stream_settings import access_stream_for_update
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import PathInt
from hubbub.errors import JsonableError, OrganizationAdminRequiredError
from hubbub.models import Realm, Stream, User
from hubbub.queries.stream_permissions import has_content_access
from hubbub.queries.streams import (
    access_stream_by_id,
    can_access_stream_metadata,
    can_access_subscribers,
    get_archived_stream,
    get_default_stream_ids,
    get_stream_by_name,
    get_subscriber_ids,
    list_streams,
    list_user_subscriptions,
    stream_dict,
)
from hubbub.queries.topics import get_topic_history
from hubbub.topic_names import display_topic


def _require_admin(user: User) -> None:
    if not user.is_realm_admin:
        raise OrganizationAdminRequiredError()


async def _subscribed_ids(conn: AsyncConnection, user_id: int) -> set[int]:
    return {sub.stream_id for sub in await list_user_subscriptions(conn, user_id) if sub.active}


@dataclass(frozen=True)
class _StreamSources:
    include_public: bool
    include_web_public: bool
    include_subscribed: bool
    exclude_archived: bool
    include_all: bool
    include_owner_subscribed: bool
    include_can_access_content: bool


async def _select_streams(
    conn: AsyncConnection, me: User, realm: Realm, sources: _StreamSources
) -> list[Stream]:
    """The union of the requested sources, as Zulip 10.2 computes it for GET /streams."""
    streams = await list_streams(conn, me.realm_id, include_archived=not sources.exclude_archived)
    subscribed = await _subscribed_ids(conn, me.id)
    if sources.include_all:
        # Every stream the user can see (feature level 356).
        return [
            s for s in streams if can_access_stream_metadata(me, s, subscribed=s.id in subscribed)
        ]
    wanted: set[int] = set()
    if sources.include_subscribed:
        wanted |= subscribed
    # Guests cannot see public streams as such, only those they subscribe to.
    if sources.include_public and not me.is_guest:
        wanted |= {s.id for s in streams if s.is_public}
    if sources.include_web_public:
        wanted |= {s.id for s in streams if s.is_web_public}
    if sources.include_can_access_content:
        for s in streams:
            if await has_content_access(conn, me, s, subscribed=s.id in subscribed):
                wanted.add(s.id)
    # A bot may list its owner's streams, private ones included (Zulip lets it).
    if sources.include_owner_subscribed and me.is_bot and me.bot_owner_id is not None:
        wanted |= await _subscribed_ids(conn, me.bot_owner_id)
    return [s for s in streams if s.id in wanted]


@endpoint("GET", "/streams")
async def get_streams(
    req: ApiRequest,
    *,
    include_public: bool = True,
    include_web_public: bool = False,
    include_subscribed: bool = True,
    exclude_archived: bool = True,
    include_all: bool = False,
    include_all_active: bool = False,
    include_default: bool = False,
    include_owner_subscribed: bool = False,
    include_can_access_content: bool = False,
) -> Payload:
    """Get all streams"""
    if include_all_active and not req.me.is_realm_admin:
        # The name before feature level 356 keeps its administrators-only rule.
        raise JsonableError("User not authorized for this query")
    sources = _StreamSources(
        include_public=include_public,
        include_web_public=include_web_public,
        include_subscribed=include_subscribed,
        exclude_archived=exclude_archived,
        include_all=include_all or include_all_active,
        include_owner_subscribed=include_owner_subscribed,
        include_can_access_content=include_can_access_content,
    )
    async with req.services.db.read() as conn:
        streams = await _select_streams(conn, req.me, req.my_realm, sources)
        # include_default only marks default streams; it adds none (as Zulip).
        default_ids = (
            set(await get_default_stream_ids(conn, req.my_realm.id)) if include_default else set()
        )
    result = []
    for s in sorted(streams, key=lambda s: (s.name, s.id)):
        entry = stream_dict(s)
        if include_default:
            entry["is_default"] = s.id in default_ids
        result.append(entry)
    return {"streams": result}


@endpoint("GET", "/streams/{stream_id:int}")
async def get_stream_by_id(req: ApiRequest, *, stream_id: PathInt) -> Payload:
    """Get a stream by ID"""
    async with req.services.db.read() as conn:
        target, _ = await access_stream_by_id(conn, req.me, stream_id)
    return {"stream": stream_dict(target)}


@endpoint("GET", "/get_stream_id")
async def get_stream_id(req: ApiRequest, *, stream: str) -> Payload:
    """Get stream ID"""
    error = JsonableError(f"Invalid stream name '{stream}'")
    async with req.services.db.read() as conn:
        found = await get_stream_by_name(conn, req.my_realm.id, stream)
        if found is None:
            raise error
        # Zulip looks the name up as for reading the stream: an administrator is not
        # given private streams they are not subscribed to.
        try:
            await access_stream_by_id(conn, req.me, found.id, allow_admin=False)
        except JsonableError:
            raise error from None
    return {"stream_id": found.id}


@endpoint("GET", "/streams/{stream_id:int}/members")
async def get_subscribers(req: ApiRequest, *, stream_id: PathInt) -> Payload:
    """Get the subscribers of a stream"""
    async with req.services.db.read() as conn:
        target, sub = await access_stream_by_id(conn, req.me, stream_id)
        subscribed = sub is not None and sub.active
        if not can_access_subscribers(req.me, target, subscribed):
            raise JsonableError("Invalid stream ID")
        subscribers = await get_subscriber_ids(conn, [target.id])
    return {"subscribers": subscribers[target.id]}


@endpoint("GET", "/users/me/{stream_id:int}/topics")
async def get_stream_topics(
    req: ApiRequest, *, stream_id: PathInt, allow_empty_topic_name: bool = False
) -> Payload:
    """Get topics in a stream"""
    async with req.services.db.read() as conn:
        # As Zulip: readable streams only; a private stream needs a subscription, even for
        # an administrator (whatever its history setting).
        target, _ = await access_stream_by_id(conn, req.me, stream_id, allow_admin=False)
        topics = await get_topic_history(conn, req.me, target)
    # The empty topic by its display name, unless the client can show it (feature level
    # 334).
    for topic in topics:
        topic["name"] = display_topic(topic["name"], allow_empty=allow_empty_topic_name)
    return {"topics": topics}


@endpoint("DELETE", "/streams/{stream_id:int}")
async def archive_stream(req: ApiRequest, *, stream_id: PathInt) -> Payload:
    """Archive a stream"""
    async with req.services.write() as tx:
        # Administrators may archive any stream, private ones they are not subscribed to
        # too; so may the stream's own administrators (feature level 325).
        archived = await get_archived_stream(tx.conn, req.my_realm.id, stream_id)
        if archived is not None and req.me.is_realm_admin:
            raise JsonableError("Channel is already deactivated")
        target, _ = await access_stream_for_update(tx.conn, req.my_realm, req.me, stream_id)
        if not req.me.is_realm_admin and target.id in await get_default_stream_ids(
            tx.conn, req.my_realm.id
        ):
            # Only administrators change the default streams.
            raise OrganizationAdminRequiredError()
        await do_deactivate_stream(tx, req.my_realm, target)
    return {}


@endpoint("POST", "/default_streams")
async def add_default_stream(req: ApiRequest, *, stream_id: int) -> Payload:
    """Add a default stream"""
    _require_admin(req.me)
    async with req.services.write() as tx:
        await check_add_default_stream(tx, req.me, req.my_realm, stream_id)
    return {}


@endpoint("DELETE", "/default_streams")
async def remove_default_stream(req: ApiRequest, *, stream_id: int) -> Payload:
    """Remove a default stream"""
    _require_admin(req.me)
    async with req.services.write() as tx:
        target, _ = await access_stream_by_id(tx.conn, req.me, stream_id)
        await do_remove_default_stream(tx, req.my_realm, target)
    return {}
