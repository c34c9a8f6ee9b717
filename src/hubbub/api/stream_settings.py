"""Stream settings: ``PATCH /streams/{stream_id}`` (administrators) and
``POST /users/me/subscriptions/properties`` (a user's own subscription settings)."""

from __future__ import annotations

from typing import Annotated, Any

from hubbub.actions.stream_settings import StreamUpdate, check_update_stream
from hubbub.actions.streams import (
    check_stream_description,
    check_stream_post_policy,
)
from hubbub.actions.subscription_settings import (
    check_subscription_changes,
    do_change_subscription_property,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import Param, PathInt
from hubbub.api.realm import GroupSettingChange
from hubbub.api.urls import realm_url


@endpoint("POST", "/users/me/subscriptions/properties")
async def update_subscription_settings(req: ApiRequest, *, subscription_data: list[Any]) -> Payload:
    """Update subscription settings"""
    async with req.services.write() as tx:
        changes = await check_subscription_changes(tx.conn, req.me, subscription_data)
        for change in changes:
            await do_change_subscription_property(tx, req.me, change)
    # Only the envelope since feature level 111 (no echo of subscription_data).
    return {}


@endpoint("PATCH", "/streams/{stream_id:int}")
async def update_stream(
    req: ApiRequest,
    *,
    stream_id: PathInt,
    description: str | None = None,
    new_name: str | None = None,
    is_private: bool | None = None,
    is_web_public: bool | None = None,
    history_public_to_subscribers: bool | None = None,
    is_default_stream: bool | None = None,
    stream_post_policy: int | None = None,
    is_announcement_only: bool | None = None,
    message_retention_days: Annotated[str | None, Param(json=False)] = None,
    can_remove_subscribers_group: Annotated[
        GroupSettingChange | int | None, Param(aliases=("can_remove_subscribers_group_id",))
    ] = None,
    can_administer_channel_group: GroupSettingChange | None = None,
    can_send_message_group: GroupSettingChange | None = None,
    can_add_subscribers_group: GroupSettingChange | None = None,
    can_subscribe_group: GroupSettingChange | None = None,
) -> Payload:
    """Update a stream"""
    me = req.me
    if stream_post_policy is not None:
        check_stream_post_policy(stream_post_policy)
    if is_announcement_only is not None:
        # The pre-feature-level-1 spelling of stream_post_policy; it wins, as in Zulip.
        stream_post_policy = 2 if is_announcement_only else 1  # admins only / anyone
    update = StreamUpdate(
        description=check_stream_description(description) if description is not None else None,
        new_name=new_name,
        is_private=is_private,
        is_web_public=is_web_public,
        history_public_to_subscribers=history_public_to_subscribers,
        is_default_stream=is_default_stream,
        stream_post_policy=stream_post_policy,
        message_retention_days=message_retention_days,
        group_settings={
            name: value
            for name, value in (
                # A bare group id is the spelling before feature level 320.
                (
                    "can_remove_subscribers_group",
                    {"new": can_remove_subscribers_group}
                    if isinstance(can_remove_subscribers_group, int)
                    else can_remove_subscribers_group,
                ),
                ("can_administer_channel_group", can_administer_channel_group),
                ("can_send_message_group", can_send_message_group),
                ("can_add_subscribers_group", can_add_subscribers_group),
                ("can_subscribe_group", can_subscribe_group),
            )
            if value is not None
        },
    )
    async with req.services.write() as tx:
        await check_update_stream(
            tx,
            me,
            req.my_realm,
            stream_id,
            update,
            web_public_enabled=req.services.settings.web_public_streams_enabled,
            realm_url=realm_url(req),
        )
    return {}
