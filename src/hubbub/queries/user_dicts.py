"""Users as the Zulip API shows them (``GET /users``, ``/users/{id}``, ``/users/me``)."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.dialects import PerDialect, ids_argument
from hubbub.db.fast import fetch_rows
from hubbub.db.tables import custom_profile_field, custom_profile_field_value
from hubbub.models import EmailVisibility, Role, User

GRAVATAR_URL = "https://secure.gravatar.com/avatar/{hash}?d=identicon&version={version}"


@lru_cache(maxsize=16384)
def iso_time(timestamp: float) -> str:
    """ISO 8601 with the UTC offset, as Zulip formats ``date_joined``. Remembered: every
    ``/register`` formats every user's."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def can_access_delivery_email(viewer: User | None, target: User) -> bool:
    """Whether ``viewer`` may see ``target``'s real email (Zulip 7.0, feature level 163)."""
    if target.is_bot:
        # Bots' addresses are always public.
        return True
    if viewer is not None and viewer.id == target.id:
        return True
    policy = target.email_address_visibility
    if policy == EmailVisibility.EVERYONE:
        return True
    if viewer is None:
        return False
    if policy == EmailVisibility.MEMBERS:
        return viewer.role != Role.GUEST
    if policy == EmailVisibility.MODERATORS:
        return viewer.role in (Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR)
    if policy == EmailVisibility.ADMINS:
        return viewer.role in (Role.OWNER, Role.ADMINISTRATOR)
    return False


def avatar_url(user: User, *, client_gravatar: bool) -> str | None:
    """Gravatar from the real email; ``None`` where the client computes it itself.

    Since feature level 163 ``client_gravatar`` only nulls the URL when the user's email is
    visible to everyone, since the client needs that email to compute the Gravatar hash.
    """
    if (
        client_gravatar
        and user.avatar_source == "G"
        and user.email_address_visibility == EmailVisibility.EVERYONE
    ):
        return None
    digest = hashlib.md5(user.delivery_email.lower().encode(), usedforsecurity=False).hexdigest()
    return GRAVATAR_URL.format(hash=digest, version=user.avatar_version)


def format_user(
    user: User,
    viewer: User | None,
    *,
    client_gravatar: bool,
    profile_data: dict[str, dict[str, str]] | None,
) -> dict[str, Any]:
    email_visible = can_access_delivery_email(viewer, user)
    result: dict[str, Any] = {
        "email": user.email,
        "user_id": user.id,
        "avatar_version": user.avatar_version,
        "is_admin": user.role in (Role.OWNER, Role.ADMINISTRATOR),
        "is_owner": user.role == Role.OWNER,
        "is_guest": user.role == Role.GUEST,
        "is_billing_admin": user.is_billing_admin,
        "role": user.role,
        "is_bot": user.is_bot,
        "full_name": user.full_name,
        "timezone": user.timezone,
        "is_active": user.is_active,
        "date_joined": iso_time(user.date_joined),
        "delivery_email": user.delivery_email if email_visible else None,
        "avatar_url": avatar_url(user, client_gravatar=client_gravatar),
    }
    if user.is_bot:
        result["bot_type"] = user.bot_type
        result["bot_owner_id"] = user.bot_owner_id
    elif profile_data is not None:
        result["profile_data"] = profile_data
    return result


_value = custom_profile_field_value
# Built once per dialect, the users as one argument: ``/register`` asks for every user's
# values, and SQLAlchemy expanded 1,000 ids into parameters for each call.
_PROFILE_VALUES = PerDialect(
    lambda dialect: (
        sa.select(
            _value.c.user_profile_id, _value.c.field_id, _value.c.value, _value.c.rendered_value
        )
        .join(custom_profile_field, custom_profile_field.c.id == _value.c.field_id)
        .where(dialect.in_ids(_value.c.user_profile_id, "ids"))
        .order_by(custom_profile_field.c.order, _value.c.field_id)
    )
)


async def get_profile_data(
    conn: AsyncConnection, user_ids: Iterable[int]
) -> dict[int, dict[str, dict[str, str]]]:
    """Custom profile field values per user, keyed by the field id as a string."""
    ids = list(user_ids)
    data: dict[int, dict[str, dict[str, str]]] = defaultdict(dict)
    if not ids:
        return data
    rows = await fetch_rows(conn, _PROFILE_VALUES(conn), {"ids": ids_argument(conn, ids)})
    for user_id, field_id, text, rendered in rows:
        entry = {"value": text}
        if rendered is not None:
            entry["rendered_value"] = rendered
        data[user_id][str(field_id)] = entry
    return data


async def get_user_dicts(
    conn: AsyncConnection,
    users: list[User],
    viewer: User | None,
    *,
    client_gravatar: bool,
    include_custom_profile_fields: bool,
) -> list[dict[str, Any]]:
    profile: dict[int, dict[str, dict[str, str]]] = {}
    if include_custom_profile_fields:
        profile = await get_profile_data(conn, (u.id for u in users if not u.is_bot))
    return [
        format_user(
            user,
            viewer,
            client_gravatar=client_gravatar,
            profile_data=profile.get(user.id, {}) if include_custom_profile_fields else None,
        )
        for user in users
    ]


# A dummy address stands in for the real one when its owner hides it (feature level 163).
DUMMY_EMAIL_DOMAIN = "hubbub.invalid"


def api_email(user_id: int, delivery_email: str, visibility: int) -> str:
    """The address other users and clients see (``email``): the real one, or a dummy
    address when the user's email visibility hides it."""
    if visibility == EmailVisibility.EVERYONE:
        return delivery_email
    return f"user{user_id}@{DUMMY_EMAIL_DOMAIN}"
