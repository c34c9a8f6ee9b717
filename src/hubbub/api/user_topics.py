"""``POST /user_topics`` (feature level 170) and the deprecated
``PATCH /users/me/subscriptions/muted_topics``: a user's visibility policy for a topic."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import StringConstraints

from hubbub.actions.user_topics import (
    MAX_TOPIC_NAME_LENGTH,
    check_set_user_topic,
    check_update_muted_topic,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.errors import JsonableError
from hubbub.queries.user_topics import VisibilityPolicy

# Zulip checks only the length ("topic is too long (limit: 60 characters)"); an empty
# topic name is accepted, as it is by Zulip 8.0.
TopicName = Annotated[str, StringConstraints(max_length=MAX_TOPIC_NAME_LENGTH)]


@endpoint("POST", "/user_topics")
async def update_user_topic(
    req: ApiRequest,
    *,
    stream_id: int,
    topic: TopicName,
    visibility_policy: Literal[0, 1, 2, 3],
) -> Payload:
    """Update personal preferences for a topic"""
    async with req.services.write() as tx:
        await check_set_user_topic(
            tx,
            req.me,
            stream_id,
            topic,
            VisibilityPolicy(visibility_policy),
            now=req.services.clock.now(),
        )
    return {}


@endpoint("PATCH", "/users/me/subscriptions/muted_topics")
async def update_muted_topic(
    req: ApiRequest,
    *,
    stream_id: int | None = None,
    stream: str | None = None,
    topic: TopicName,
    op: Literal["add", "remove"],
) -> Payload:
    """Topic muting (deprecated since feature level 170)"""
    # Zulip 8.0's wording for the stream arguments, checked after the others parse.
    if stream_id is None and stream is None:
        raise JsonableError("Please supply 'stream'.")
    if stream_id is not None and stream is not None:
        raise JsonableError("Please choose one: 'stream' or 'stream_id'.")
    async with req.services.write() as tx:
        await check_update_muted_topic(
            tx,
            req.me,
            stream_id=stream_id,
            stream_name=stream,
            topic_name=topic,
            op=op,
            now=req.services.clock.now(),
        )
    return {}
