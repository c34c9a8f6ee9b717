"""Muting and unmuting a user, and the ``muted_users`` event.

Behaviour follows Zulip 8.0: any user of the caller's realm can be muted, including
deactivated users and (since feature level 188) bots; muting yourself is refused before
the target is looked up. Each change sends the caller's whole list of muted users, as a
``muted_users`` event, to the caller only.

Muting also marks every unread message the muter has from the muted user read, in
streams and direct messages alike, with the ``update_message_flags`` event for them sent
before the ``muted_users`` one (Zulip's do_mute_user); messages sent after the mute
arrive read (``actions/send_message.py``). Unmuting leaves the flags as they are.
"""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.actions.mark_read import do_mark_sender_messages_as_read
from hubbub.db.tables import muted_user
from hubbub.errors import JsonableError
from hubbub.models import User
from hubbub.queries.muted_users import is_muted, list_muted_users
from hubbub.queries.users import access_user_by_id
from hubbub.transaction import Tx


async def notify_muted_users(tx: Tx, user: User) -> None:
    muted = await list_muted_users(tx.conn, user.id)
    tx.notify(user.realm_id, {"type": "muted_users", "muted_users": muted}, [user.id])


async def do_mute_user(tx: Tx, user: User, muted: User, *, now: float) -> None:
    await tx.conn.execute(
        sa.insert(muted_user).values(
            user_profile_id=user.id, muted_user_id=muted.id, date_muted=now
        )
    )
    await do_mark_sender_messages_as_read(tx, user, muted.id)
    await notify_muted_users(tx, user)


async def do_unmute_user(tx: Tx, user: User, muted: User) -> None:
    await tx.conn.execute(
        sa.delete(muted_user).where(
            muted_user.c.user_profile_id == user.id, muted_user.c.muted_user_id == muted.id
        )
    )
    await notify_muted_users(tx, user)


async def _access_user_to_mute(tx: Tx, user: User, target_id: int) -> User:
    # "No such user" for an id of no user, or of a user of another realm.
    return await access_user_by_id(
        tx.conn, user.realm_id, target_id, allow_deactivated=True, allow_bots=True
    )


async def check_mute_user(tx: Tx, user: User, target_id: int, *, now: float) -> None:
    """``POST /users/me/muted_users/{muted_user_id}``."""
    if target_id == user.id:
        raise JsonableError("Cannot mute self")
    target = await _access_user_to_mute(tx, user, target_id)
    if await is_muted(tx.conn, user.id, target.id):
        raise JsonableError("User already muted")
    await do_mute_user(tx, user, target, now=now)


async def check_unmute_user(tx: Tx, user: User, target_id: int) -> None:
    """``DELETE /users/me/muted_users/{muted_user_id}``."""
    target = await _access_user_to_mute(tx, user, target_id)
    if not await is_muted(tx.conn, user.id, target.id):
        raise JsonableError("User is not muted")
    await do_unmute_user(tx, user, target)
