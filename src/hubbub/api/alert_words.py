"""``/users/me/alert_words``: listing, adding and removing a user's alert words."""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

from hubbub.actions.alert_words import (
    MAX_ALERT_WORD_LENGTH,
    check_add_alert_words,
    do_remove_alert_words,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.queries.alert_words import user_alert_words

# Zulip checks the length before stripping: "alert_words[0] is too long (limit: 100
# characters)".
AlertWord = Annotated[str, StringConstraints(max_length=MAX_ALERT_WORD_LENGTH)]


@endpoint("GET", "/users/me/alert_words")
async def list_alert_words(req: ApiRequest) -> Payload:
    """Get all alert words"""
    async with req.services.db.read() as conn:
        return {"alert_words": await user_alert_words(conn, req.me.id)}


@endpoint("POST", "/users/me/alert_words")
async def add_alert_words(req: ApiRequest, *, alert_words: list[AlertWord]) -> Payload:
    """Add alert words"""
    async with req.services.write() as tx:
        words = await check_add_alert_words(tx, req.me, alert_words)
    return {"alert_words": words}


@endpoint("DELETE", "/users/me/alert_words")
async def remove_alert_words(req: ApiRequest, *, alert_words: list[str]) -> Payload:
    """Remove alert words"""
    async with req.services.write() as tx:
        words = await do_remove_alert_words(tx, req.me, alert_words)
    return {"alert_words": words}
