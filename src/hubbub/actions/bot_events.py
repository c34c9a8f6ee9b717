"""``realm_bot`` events: the bot data of the people who administer a bot (the realm's
active administrators and the bot's owner; ``queries/bots.py``).

Every user hears of a bot through ``realm_user`` events; these carry what only its
administrators see (its API key, its configuration), in Zulip 10.2's shapes:
- a new bot: ``add`` with the whole bot (``owner_id`` only when it has an owner);
- a change: ``update`` with the bot's ``user_id`` and the changed property (``full_name``,
  ``api_key``, or ``is_active`` on deactivation and reactivation since feature level 222,
  which replaced the ``remove`` event);
- a user who gains or loses the administrator role gains or loses the bots of others:
  ``add`` or ``delete`` events for each, to that user alone. Zulip recomputes those bots
  while it applies the role change to a ``/register`` state; a hubbub state is kept by
  events alone, so the server sends them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from hubbub.models import Role, User
from hubbub.queries.bots import (
    bot_administrator_ids,
    bot_dict,
    list_bots_administered_by,
    list_bots_among,
)
from hubbub.transaction import Tx

_ADMIN_ROLES = (Role.OWNER, Role.ADMINISTRATOR)


def _added_event(bot: User) -> dict[str, object]:
    data = bot_dict(bot)
    # Zulip leaves the key out for a bot without an owner; a state sets it to null.
    if data["owner_id"] is None:
        del data["owner_id"]
    return {"type": "realm_bot", "op": "add", "bot": data}


async def notify_bot_created(tx: Tx, bot: User) -> None:
    tx.notify(bot.realm_id, _added_event(bot), await bot_administrator_ids(tx.conn, bot))


async def notify_bot_updated(tx: Tx, user: User, **changes: object) -> None:
    """``update`` with ``changes`` for a bot; nothing for a human, who has no bot data."""
    if not user.is_bot:
        return
    event = {"type": "realm_bot", "op": "update", "bot": {"user_id": user.id, **changes}}
    tx.notify(user.realm_id, event, await bot_administrator_ids(tx.conn, user))


async def notify_bots_api_keys_changed(tx: Tx, realm_id: int, user_ids: Iterable[int]) -> None:
    """An ``api_key`` update for each bot among ``user_ids`` whose key this transaction
    replaced (``hubbub revoke-api-keys``), read back with its new key."""
    for bot in await list_bots_among(tx.conn, realm_id, user_ids):
        await notify_bot_updated(tx, bot, api_key=bot.api_key)


async def notify_bot_access_changed(tx: Tx, user: User, new_role: int) -> None:
    """The bots of others that ``user`` (as they were before this transaction changed
    their role to ``new_role``) now administers, or no longer does."""
    was_admin, is_admin = user.role in _ADMIN_ROLES, new_role in _ADMIN_ROLES
    if was_admin == is_admin:
        return
    # Every bot of the realm, read as the administrator the user was or has become.
    admin = user if was_admin else dataclasses.replace(user, role=new_role)
    for bot in await list_bots_administered_by(tx.conn, admin):
        if bot.bot_owner_id == user.id:
            continue
        if is_admin:
            event = _added_event(bot)
        else:
            event = {"type": "realm_bot", "op": "delete", "bot": {"user_id": bot.id}}
        tx.notify(user.realm_id, event, [user.id])
