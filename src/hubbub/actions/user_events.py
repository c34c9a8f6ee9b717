"""``realm_user`` events: who hears about a user's creation and changes, and in what shape."""

from __future__ import annotations

from typing import Any

from hubbub.events.queues import GRAVATAR_MARK
from hubbub.models import EmailVisibility, User
from hubbub.queries.user_dicts import can_access_delivery_email, format_user
from hubbub.queries.users import list_active_users
from hubbub.transaction import Tx


async def notify_user_created(tx: Tx, user: User) -> None:
    """``realm_user`` add to every active user; the real email only to those who may see it."""
    viewers = await list_active_users(tx.conn, user.realm_id)
    by_access: dict[bool, list[int]] = {True: [], False: []}
    for viewer in viewers:
        by_access[can_access_delivery_email(viewer, user)].append(viewer.id)
    for can_see, user_ids in by_access.items():
        if not user_ids:
            continue
        person = format_user(
            user, None, client_gravatar=False, profile_data=None if user.is_bot else {}
        )
        person["delivery_email"] = user.delivery_email if can_see else None
        # Each queue decides by its client_gravatar whether to send the URL or null.
        person[GRAVATAR_MARK] = (
            user.avatar_source == "G" and user.email_address_visibility == EmailVisibility.EVERYONE
        )
        tx.notify(user.realm_id, {"type": "realm_user", "op": "add", "person": person}, user_ids)


async def notify_user_updated(tx: Tx, user: User, **changes: Any) -> None:
    """``realm_user`` update with ``person`` = the user id plus the changed fields."""
    viewers = await list_active_users(tx.conn, user.realm_id)
    recipients = {v.id for v in viewers} | {user.id}
    person = {"user_id": user.id, **changes}
    tx.notify(
        user.realm_id, {"type": "realm_user", "op": "update", "person": person}, sorted(recipients)
    )
