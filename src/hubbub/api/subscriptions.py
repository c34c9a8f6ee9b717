"""``/users/me/subscriptions``: list, subscribe (creating streams), unsubscribe; and
``GET /users/{user_id}/subscriptions/{stream_id}``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.default_streams import do_add_default_streams
from hubbub.actions.streams import (
    StreamOptions,
    bulk_add_subscriptions,
    bulk_remove_subscriptions,
    can_remove_subscribers,
    check_create_stream_permission,
    check_stream_description,
    check_stream_group_settings,
    check_stream_name,
    check_stream_post_policy,
    do_create_stream,
    parse_message_retention_days,
    post_policy_group,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import Param, PathInt
from hubbub.api.realm import AnonymousGroup
from hubbub.api.urls import realm_url
from hubbub.errors import JsonableError
from hubbub.models import Realm, Stream, User
from hubbub.permissions import user_has_permission
from hubbub.queries.stream_permissions import (
    can_administer_stream,
    has_content_access_via_groups,
    user_in_stream_setting,
)
from hubbub.queries.streams import (
    access_stream_by_id,
    access_stream_by_name,
    can_access_subscribers,
    get_stream_by_name,
    get_subscriber_ids,
    get_subscription,
    is_subscribed,
    list_streams,
    list_user_subscriptions,
    subscription_dict,
)
from hubbub.queries.users import access_user_by_email, access_user_by_id
from hubbub.transaction import Tx

# A group-setting value as a parameter: a group id or an anonymous group.
GroupSettingParam = int | AnonymousGroup


async def _principal_users(
    conn: AsyncConnection, me: User, principals: list[str] | list[int] | None
) -> list[User]:
    """The users named by ``principals`` (emails or ids; Zulip accepts either), or the
    caller when none are given."""
    if principals is None:
        return [me]
    if not principals:
        raise JsonableError("Principals cannot be empty")
    users: dict[int, User] = {}
    for principal in principals:
        if isinstance(principal, int):
            user = await access_user_by_id(conn, me.realm_id, principal, allow_deactivated=True)
        else:
            user = await access_user_by_email(conn, me.realm_id, principal)
        if not user.is_active:
            raise JsonableError("No such user")
        users[user.id] = user
    return list(users.values())


@endpoint("GET", "/users/me/subscriptions")
async def get_subscriptions(req: ApiRequest, *, include_subscribers: bool = False) -> Payload:
    """Get subscribed streams"""
    async with req.services.db.read() as conn:
        streams = {s.id: s for s in await list_streams(conn, req.my_realm.id)}
        subs = [
            sub
            for sub in await list_user_subscriptions(conn, req.me.id)
            if sub.active and sub.stream_id in streams
        ]
        subscribers = (
            await get_subscriber_ids(conn, [sub.stream_id for sub in subs])
            if include_subscribers
            else {}
        )
    result = [
        subscription_dict(
            streams[sub.stream_id], sub, subscribers[sub.stream_id] if include_subscribers else None
        )
        for sub in subs
    ]
    result.sort(key=lambda s: (s["name"], s["stream_id"]))
    return {"subscriptions": result}


def _check_subscription_requests(
    requests: list[Any], label: str = "subscriptions"
) -> list[tuple[str, str]]:
    """``[{"name": ..., "description": ...}]`` → checked (name, description) pairs."""
    checked = []
    for index, entry in enumerate(requests):
        if not isinstance(entry, dict):
            raise JsonableError(f"{label}[{index}] is not a dict")
        if "name" not in entry:
            raise JsonableError(f"{label}[{index}] key is missing: name")
        name, description = entry["name"], entry.get("description", "")
        if not isinstance(name, str):
            raise JsonableError(f'{label}[{index}]["name"] is not a string')
        if not isinstance(description, str):
            raise JsonableError(f'{label}[{index}]["description"] is not a string')
        checked.append((check_stream_name(name), check_stream_description(description)))
    return checked


async def _may_subscribe(
    conn: AsyncConnection, user: User, target: Stream, subscribed: bool
) -> bool:
    """Whether ``user`` may subscribe to ``target``: a stream they can read, or a private
    one whose ``can_subscribe_group`` or ``can_add_subscribers_group`` holds them (feature
    levels 342 and 357)."""
    if subscribed or user.is_realm_admin:
        return True
    if user.is_guest:
        return target.is_web_public
    if not target.invite_only:
        return True
    return await has_content_access_via_groups(conn, user, target)


async def _may_add_others(
    conn: AsyncConnection, realm: Realm, me: User, target: Stream, subscribed: bool
) -> bool:
    """Whether ``me`` may subscribe other users to ``target`` (Zulip 10.2): the stream's
    administrators and its ``can_add_subscribers_group``, or anyone who can read it and
    holds the organization's ``can_add_subscribers_group``."""
    if await can_administer_stream(conn, realm, me, target):
        return True
    if await user_in_stream_setting(conn, realm, me, target, "can_add_subscribers_group"):
        return True
    readable = subscribed or (not target.invite_only and not me.is_guest)
    return readable and await user_has_permission(conn, me, realm, "can_add_subscribers_group")


@endpoint("POST", "/users/me/subscriptions")
async def add_subscriptions(
    req: ApiRequest,
    *,
    subscriptions: list[Any],
    principals: list[str] | list[int] | None = None,
    authorization_errors_fatal: bool = True,
    announce: bool = False,
    invite_only: bool = False,
    is_web_public: bool = False,
    is_default_stream: bool = False,
    history_public_to_subscribers: bool | None = None,
    stream_post_policy: int | None = None,
    is_announcement_only: bool | None = None,
    message_retention_days: Annotated[str | None, Param(json=False)] = None,
    can_remove_subscribers_group: Annotated[
        GroupSettingParam | None, Param(aliases=("can_remove_subscribers_group_id",))
    ] = None,
    can_administer_channel_group: GroupSettingParam | None = None,
    can_send_message_group: GroupSettingParam | None = None,
    can_add_subscribers_group: GroupSettingParam | None = None,
    can_subscribe_group: GroupSettingParam | None = None,
) -> Payload:
    """Subscribe to a stream"""
    me = req.me
    requests = _check_subscription_requests(subscriptions)
    if stream_post_policy is not None:
        check_stream_post_policy(stream_post_policy)
    if is_announcement_only is not None:
        # The spelling before feature level 1; it wins, as in Zulip.
        stream_post_policy = 2 if is_announcement_only else 1
    retention = (
        parse_message_retention_days(message_retention_days, me)
        if message_retention_days is not None
        else None
    )
    # `announce` would have the notification bot post about new streams; hubbub has no
    # announcement stream configured (realm_notifications_stream_id is -1), so there is
    # nowhere to post, as on a Zulip realm without one.
    del announce
    options = _AddOptions(
        principals=principals,
        authorization_errors_fatal=authorization_errors_fatal,
        invite_only=invite_only,
        is_web_public=is_web_public,
        is_default_stream=is_default_stream,
        history_public_to_subscribers=history_public_to_subscribers,
        stream_post_policy=stream_post_policy,
        message_retention_days=retention,
        group_settings={
            "can_remove_subscribers_group": can_remove_subscribers_group,
            "can_administer_channel_group": can_administer_channel_group,
            "can_send_message_group": can_send_message_group,
            "can_add_subscribers_group": can_add_subscribers_group,
            "can_subscribe_group": can_subscribe_group,
        },
    )
    async with req.services.write() as tx:
        return await _add_subscriptions(req, tx, requests, options)


@dataclass(frozen=True)
class _AddOptions:
    principals: list[str] | list[int] | None = None
    authorization_errors_fatal: bool = True
    invite_only: bool = False
    is_web_public: bool = False
    is_default_stream: bool = False
    history_public_to_subscribers: bool | None = None
    stream_post_policy: int | None = None
    message_retention_days: int | None = None
    # Raw group-setting parameters by setting name (None: not given).
    group_settings: dict[str, Any] = field(default_factory=dict)


async def _add_subscriptions(
    req: ApiRequest, tx: Tx, requests: list[tuple[str, str]], opts: _AddOptions
) -> Payload:
    me, realm = req.me, req.my_realm
    users = await _principal_users(tx.conn, me, opts.principals)
    others = any(u.id != me.id for u in users)
    group_settings = await check_stream_group_settings(tx, realm, opts.group_settings)
    if opts.stream_post_policy is not None and "can_send_message_group" not in group_settings:
        group_settings["can_send_message_group"] = await post_policy_group(
            tx, realm, opts.stream_post_policy
        )
    existing: list[Stream] = []
    unauthorized: list[str] = []
    to_create: list[tuple[str, str]] = []
    for name, description in requests:
        found = await get_stream_by_name(tx.conn, realm.id, name)
        if found is None:
            if all(name.lower() != n.lower() for n, _ in to_create):
                to_create.append((name, description))
            continue
        on_it = await is_subscribed(tx.conn, me.id, found.id)
        if not await _may_subscribe(tx.conn, me, found, on_it):
            unauthorized.append(found.name)
        elif found not in existing:
            if others and not await _may_add_others(tx.conn, realm, me, found, on_it):
                raise JsonableError("Insufficient permission")
            existing.append(found)
    if unauthorized and opts.authorization_errors_fatal:
        raise JsonableError(f"Unable to access stream ({unauthorized[0]}).")
    if (
        to_create
        and others
        and not await user_has_permission(tx.conn, me, realm, "can_add_subscribers_group")
    ):
        raise JsonableError("Insufficient permission")
    if to_create:
        await check_create_stream_permission(
            tx.conn,
            me,
            realm,
            invite_only=opts.invite_only,
            is_web_public=opts.is_web_public,
            web_public_enabled=req.services.settings.web_public_streams_enabled,
        )
        if opts.is_default_stream and not me.is_realm_admin:
            raise JsonableError("Must be an organization administrator")
    options = StreamOptions(
        invite_only=opts.invite_only,
        is_web_public=opts.is_web_public,
        history_public_to_subscribers=opts.history_public_to_subscribers,
        message_retention_days=opts.message_retention_days,
        group_settings=group_settings,
        is_default_stream=opts.is_default_stream,
    )
    created = [
        await do_create_stream(
            tx,
            realm,
            name,
            options,
            description=description,
            now=req.services.clock.now(),
            creator=me,
            realm_url=realm_url(req),
        )
        for name, description in to_create
    ]
    if opts.is_default_stream and created:
        await do_add_default_streams(tx, realm, created)
    result = await bulk_add_subscriptions(tx, realm, existing + created, users)
    subscribed: dict[str, list[str]] = {}
    for user, target in result.subscribed:
        subscribed.setdefault(user.email, []).append(target.name)
    already: dict[str, list[str]] = {}
    for user, target in result.already_subscribed:
        already.setdefault(user.email, []).append(target.name)
    payload: Payload = {"subscribed": subscribed, "already_subscribed": already}
    if not opts.authorization_errors_fatal:
        payload["unauthorized"] = unauthorized
    return payload


@endpoint("DELETE", "/users/me/subscriptions")
async def remove_subscriptions(
    req: ApiRequest, *, subscriptions: list[str], principals: list[str] | list[int] | None = None
) -> Payload:
    """Unsubscribe from a stream"""
    async with req.services.write() as tx:
        return await _remove_subscriptions(req, tx, subscriptions, principals)


async def _remove_subscriptions(
    req: ApiRequest, tx: Tx, names: list[str], principals: list[str] | list[int] | None
) -> Payload:
    me, realm = req.me, req.my_realm
    users = await _principal_users(tx.conn, me, principals)
    streams: list[Stream] = []
    for name in names:
        found = await access_stream_by_name(tx.conn, me, name.strip())
        if found not in streams:
            streams.append(found)
    if any(u.id != me.id for u in users):
        for target in streams:
            if not await can_remove_subscribers(tx.conn, realm, me, target):
                raise JsonableError("Insufficient permission")
    removed, not_removed = await bulk_remove_subscriptions(tx, realm, streams, users)
    return {
        "removed": [target.name for _, target in removed],
        "not_removed": [target.name for _, target in not_removed],
    }


@endpoint("PATCH", "/users/me/subscriptions")
async def update_subscriptions(
    req: ApiRequest, *, delete: list[str] | None = None, add: list[Any] | None = None
) -> Payload:
    """Update subscriptions"""
    if not add and not delete:
        raise JsonableError('Nothing to do. Specify at least one of "add" or "delete".')
    requests = _check_subscription_requests(add or [], "add")
    # As Zulip: the additions, then the removals, in one transaction; one response.
    async with req.services.write() as tx:
        added = await _add_subscriptions(req, tx, requests, _AddOptions())
        removed = await _remove_subscriptions(req, tx, delete or [], None)
    return {**added, **removed}


@endpoint("GET", "/users/{user_id:int}/subscriptions/{stream_id:int}")
async def get_subscription_status(
    req: ApiRequest, *, user_id: PathInt, stream_id: PathInt
) -> Payload:
    """Get subscription status"""
    async with req.services.db.read() as conn:
        target_user = await access_user_by_id(
            conn, req.my_realm.id, user_id, allow_deactivated=True
        )
        target, own_sub = await access_stream_by_id(conn, req.me, stream_id)
        if not can_access_subscribers(req.me, target, own_sub is not None and own_sub.active):
            raise JsonableError("Invalid stream ID")
        sub = await get_subscription(conn, target_user.id, target.id)
    return {"is_subscribed": sub is not None and sub.active and target_user.is_active}
