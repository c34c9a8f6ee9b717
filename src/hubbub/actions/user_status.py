"""Setting a user's status (text and emoji) and the deprecated ``away`` flag.

Behaviour follows Zulip 8.0 (zerver/views/presence.py, zerver/actions/user_status.py):
- only the parameters passed change; passing none of ``status_text``, ``away`` and
  ``emoji_name`` is "Client did not pass any new values.";
- ``emoji_name`` "" clears the emoji; a name without code or type is looked up;
  ``emoji_code``/``reaction_type`` without ``emoji_name`` is an error;
- ``away`` sets ``presence_enabled`` to its inverse (feature level 148), with that
  setting's own events and the presence update that follows it;
- every request, even one that changes nothing, stores the time and sends a
  ``user_status`` event with the fields passed to every active user of the realm.

Emoji are named as reactions name them (``actions/emoji_checks.py``): the realm's active
custom emoji (``emoji_code`` its id, ``reaction_type`` ``realm_emoji``), Zulip's
``zulip`` extra emoji and the Unicode emoji. A deactivated custom emoji can no longer be
chosen, though a status that already shows it keeps it, as in Zulip.
"""

from __future__ import annotations

from typing import Any

from hubbub.actions.emoji_checks import check_realm_emoji_request, emoji_data_for_realm_name
from hubbub.actions.presence import do_presence_enabled_changed
from hubbub.actions.user_settings import do_change_user_settings
from hubbub.db.dialects import for_name
from hubbub.db.tables import user_status
from hubbub.errors import JsonableError
from hubbub.models import Realm, User
from hubbub.queries.user_status import UNICODE_EMOJI
from hubbub.queries.users import active_user_ids
from hubbub.transaction import Tx


async def do_update_user_status(
    tx: Tx,
    realm: Realm,
    user: User,
    *,
    away: bool | None,
    status_text: str | None,
    emoji_name: str | None,
    emoji_code: str | None,
    reaction_type: str | None,
    now: float,
) -> None:
    if away is not None:
        await do_change_user_settings(tx, user, {"presence_enabled": not away})
        await do_presence_enabled_changed(tx, realm, user, not away, now=now)

    changes: dict[str, Any] = {"timestamp": now}
    if status_text is not None:
        changes["status_text"] = status_text
    if emoji_name is not None:
        changes["emoji_name"] = emoji_name
        if emoji_code is not None:
            changes["emoji_code"] = emoji_code
        if reaction_type is not None:
            changes["reaction_type"] = reaction_type
    statement = for_name(tx.conn.dialect.name).insert(user_status)
    await tx.conn.execute(
        statement.values(
            user_profile_id=user.id, realm_id=user.realm_id, **changes
        ).on_conflict_do_update(index_elements=["user_profile_id"], set_=changes)
    )

    event: dict[str, Any] = {"type": "user_status", "user_id": user.id}
    if away is not None:
        event["away"] = away
    if status_text is not None:
        event["status_text"] = status_text
    if emoji_name is not None:
        event.update(emoji_name=emoji_name, emoji_code=emoji_code, reaction_type=reaction_type)
    tx.notify(user.realm_id, event, await active_user_ids(tx.conn, user.realm_id))


async def check_update_user_status(
    tx: Tx,
    realm: Realm,
    user: User,
    *,
    away: bool | None,
    status_text: str | None,
    emoji_name: str | None,
    emoji_code: str | None,
    reaction_type: str | None,
    now: float,
) -> None:
    """``POST /users/me/status``; ``status_text`` arrives stripped and at most 60 long."""
    if away is None and status_text is None and emoji_name is None:
        raise JsonableError("Client did not pass any new values.")
    if emoji_name == "":
        # Clearing the emoji clears its code and type too.
        emoji_code, reaction_type = "", UNICODE_EMOJI
    elif emoji_name is not None:
        if emoji_code is None or reaction_type is None:
            found_code, found_type = await emoji_data_for_realm_name(tx.conn, realm.id, emoji_name)
            emoji_code = found_code if emoji_code is None else emoji_code
            reaction_type = found_type if reaction_type is None else reaction_type
        await check_realm_emoji_request(tx.conn, realm.id, emoji_name, emoji_code, reaction_type)
    elif emoji_code or reaction_type:
        raise JsonableError(
            "Client must pass emoji_name if they pass either emoji_code or reaction_type."
        )
    await do_update_user_status(
        tx,
        realm,
        user,
        away=away,
        status_text=status_text,
        emoji_name=emoji_name,
        emoji_code=emoji_code,
        reaction_type=reaction_type,
        now=now,
    )
