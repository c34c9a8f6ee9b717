"""Presence (``POST /users/me/presence``, ``GET /users/{user_id_or_email}/presence``,
``GET /realm/presence``) and user status (``POST /users/me/status``).

``GET /users/{user_id}/status`` arrived after feature level 237 (Zulip 9.0), so it is not
served here.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import StringConstraints

from hubbub.actions.presence import check_update_user_presence
from hubbub.actions.user_status import check_update_user_status
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import PathStr
from hubbub.errors import JsonableError
from hubbub.models import User
from hubbub.queries.presence import (
    OFFLINE_THRESHOLD_SECS,
    PresenceRequest,
    get_presence_response,
)
from hubbub.queries.user_status import MAX_STATUS_TEXT_LENGTH
from hubbub.queries.users import get_user_by_email, get_user_by_id

# Zulip strips the text before checking its length ("status_text is too long (limit: 60
# characters)").
StatusText = Annotated[
    str, StringConstraints(strip_whitespace=True, max_length=MAX_STATUS_TEXT_LENGTH)
]


def _human_only(user: User) -> None:
    # Zulip's ``human_users_only``: bots have no presence or status of their own.
    if user.is_bot:
        raise JsonableError("This endpoint does not accept bot requests.")


@endpoint("POST", "/users/me/presence")
async def update_presence(
    req: ApiRequest,
    *,
    status: str,
    ping_only: bool = False,
    new_user_input: bool = False,
    slim_presence: bool = False,
    last_update_id: int | None = None,
    history_limit_days: int | None = None,
) -> Payload:
    """Update your presence"""
    _human_only(req.me)
    if status not in ("active", "idle"):
        raise JsonableError(f"Invalid status: {status}")
    # ``new_user_input`` feeds Zulip's activity statistics, which hubbub does not keep.
    del new_user_input
    now = req.services.clock.now()
    async with req.services.write() as tx:
        await check_update_user_presence(
            tx, req.my_realm, req.me, "active" if status == "active" else "idle", now=now
        )
    if ping_only:
        return {}
    # A client that sends ``last_update_id`` speaks the modern protocol, whose entries are
    # always in the modern form; ``slim_presence`` still chooses for the others (feature
    # level 263). ``zephyr_mirror_active`` is only sent by Zulip in Zephyr mirror realms,
    # which hubbub never has (the web app shows a mirroring error whenever it is false).
    request = PresenceRequest(last_update_id, history_limit_days)
    async with req.services.db.read() as conn:
        return await get_presence_response(
            conn,
            req.my_realm,
            req.services.presence,
            now=now,
            slim=slim_presence or last_update_id is not None,
            request=request,
        )


@endpoint("GET", "/users/{user_id_or_email}/presence")
async def get_user_presence(req: ApiRequest, *, user_id_or_email: PathStr) -> Payload:
    """Get user presence"""
    now = req.services.clock.now()
    async with req.services.db.read() as conn:
        # An integer is a user id (feature level 43), anything else an API email.
        try:
            target = await get_user_by_id(conn, req.me.realm_id, int(user_id_or_email))
        except ValueError:
            target = await get_user_by_email(conn, req.me.realm_id, user_id_or_email)
        if target is None or not target.is_active:
            raise JsonableError("No such user")
        if target.is_bot:
            raise JsonableError("Presence is not supported for bot users.")
        presence = await req.services.presence.user_presence(conn, req.my_realm, target.id, now=now)
    if presence is None:
        raise JsonableError(f"No presence data for {user_id_or_email}")
    # The realm's entry for the user (same times, same active/idle), with only status and
    # timestamp, and no server_timestamp; the aggregate says "offline" past the threshold
    # (Zulip 10.2's get_presence_backend).
    result: dict[str, Any] = {
        key: {"timestamp": value["timestamp"], "status": value["status"]}
        for key, value in presence.items()
    }
    if int(now) - result["aggregated"]["timestamp"] > OFFLINE_THRESHOLD_SECS:
        result["aggregated"]["status"] = "offline"
    return {"presence": result}


@endpoint("GET", "/realm/presence")
async def get_realm_presence(req: ApiRequest) -> Payload:
    """Get presence of all users"""
    async with req.services.db.read() as conn:
        answer = await get_presence_response(
            conn, req.my_realm, req.services.presence, now=req.services.clock.now(), slim=False
        )
    # This older endpoint has no update ids (Zulip 10.2's get_statuses_for_realm).
    del answer["presence_last_update_id"]
    return answer


@endpoint("POST", "/users/me/status")
async def update_status(
    req: ApiRequest,
    *,
    status_text: StatusText | None = None,
    away: bool | None = None,
    emoji_name: str | None = None,
    emoji_code: str | None = None,
    reaction_type: str | None = None,
) -> Payload:
    """Update your status"""
    _human_only(req.me)
    async with req.services.write() as tx:
        await check_update_user_status(
            tx,
            req.my_realm,
            req.me,
            away=away,
            status_text=status_text,
            emoji_name=emoji_name,
            emoji_code=emoji_code,
            reaction_type=reaction_type,
            now=req.services.clock.now(),
        )
    return {}
