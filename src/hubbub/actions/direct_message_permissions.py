"""Who may send a direct message (Zulip 10.2, feature level 270).

- Messages from a bot, and to oneself or only to bots, are always allowed.
- Otherwise someone in the conversation (the sender or a recipient) must belong to
  ``direct_message_permission_group``: when that group is ``role:nobody``, "Direct
  messages are disabled in this organization."; otherwise "This conversation does not
  include any users who can authorize it."
- A sender outside ``direct_message_initiator_group`` may only write into a conversation
  that already has messages.
Scheduling a direct message checks the same, when it is scheduled.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.message_recipients import group_hash
from hubbub.db.tables import direct_message_group, message, recipient
from hubbub.errors import JsonableError
from hubbub.models import Realm, User
from hubbub.permissions import any_user_in_group_setting, user_has_permission
from hubbub.queries.group_settings import get_system_group_ids, stored_group_setting
from hubbub.queries.message_dicts import RECIPIENT_DIRECT_MESSAGE_GROUP, RECIPIENT_PERSONAL
from hubbub.realm_group_settings import NOBODY, default_group_name


async def check_direct_message_permission(
    conn: AsyncConnection, realm: Realm, sender: User, recipients: list[User]
) -> None:
    if sender.is_bot or all(u.is_bot or u.id == sender.id for u in recipients):
        return
    others = [u for u in recipients if u.id != sender.id]
    setting = "direct_message_permission_group"
    if not await any_user_in_group_setting(conn, realm, setting, [sender, *others]):
        if await _is_nobody(conn, realm, setting):
            raise JsonableError("Direct messages are disabled in this organization.")
        raise JsonableError("This conversation does not include any users who can authorize it.")
    if not await user_has_permission(
        conn, sender, realm, "direct_message_initiator_group"
    ) and not await direct_conversation_has_messages(conn, sender.id, [u.id for u in others]):
        raise JsonableError("You do not have permission to initiate direct message conversations.")


async def _is_nobody(conn: AsyncConnection, realm: Realm, setting: str) -> bool:
    stored = stored_group_setting(realm, setting)
    if stored is None:
        return default_group_name(realm.settings, setting) == NOBODY
    return stored == (await get_system_group_ids(conn, realm.id))[NOBODY]


def _recipient_id(rtype: int, type_id: int | sa.ScalarSelect[int]) -> sa.ScalarSelect[int]:
    return (
        sa.select(recipient.c.id)
        .where(recipient.c.type == rtype, recipient.c.type_id == type_id)
        .scalar_subquery()
    )


async def direct_conversation_has_messages(
    conn: AsyncConnection, sender_id: int, other_ids: list[int]
) -> bool:
    """Whether any message was sent between ``sender_id`` and the distinct ``other_ids``
    (one other person: in either direction; more: to their group)."""
    others = sorted(set(other_ids) - {sender_id})
    if not others:
        condition = message.c.recipient_id == _recipient_id(RECIPIENT_PERSONAL, sender_id)
    elif len(others) == 1:
        (other,) = others
        condition = sa.or_(
            sa.and_(
                message.c.sender_id == sender_id,
                message.c.recipient_id == _recipient_id(RECIPIENT_PERSONAL, other),
            ),
            sa.and_(
                message.c.sender_id == other,
                message.c.recipient_id == _recipient_id(RECIPIENT_PERSONAL, sender_id),
            ),
        )
    else:
        group = (
            sa.select(direct_message_group.c.id)
            .where(direct_message_group.c.group_hash == group_hash([*others, sender_id]))
            .scalar_subquery()
        )
        condition = message.c.recipient_id == _recipient_id(RECIPIENT_DIRECT_MESSAGE_GROUP, group)
    found = await conn.scalar(sa.select(message.c.id).where(condition).limit(1))
    return found is not None
