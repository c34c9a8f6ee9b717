"""Recording a user's presence and telling the realm when they come back online.

Behaviour follows Zulip 8.0 (zerver/actions/presence.py):
- a client pings every minute with ``active`` or ``idle``; a time is rewritten only when
  the stored one is more than 55 s older, so several open windows cost one write a minute;
- the first ping ever creates the row (``last_active_time`` stays NULL when it says idle);
- a ``presence`` event (legacy ``website`` form) goes to every active user of the realm
  only when the row is created or the user becomes active after more than 70 s without
  activity (they might otherwise look offline until the others' next poll), never on an
  ordinary ping; none in realms with presence disabled or more than 100 active users;
- turning the ``presence_enabled`` setting on reports the user active now; turning it off
  replaces the row by one idle 260 s ago, so that the user looks offline; both tell the
  realm at once (``force_send_update``).

Update ids (feature level 263): every write of a row takes the next value of its realm's
presence_sequence row and stores it in the row. The upsert that takes it locks that row
until the transaction commits (PostgreSQL's row lock; SQLite's single writer), so the
next write of the realm takes its id only once this one is visible: a realm's ids become
visible in increasing order, and a reader that has seen id N has seen every smaller one.
A database sequence would not do: a write could take id N, commit after another took
N + 1 and committed, and a client that saw N + 1 first would never ask for N. The id is
taken last, after every read the write needs, so that the realm's writes wait on one
another only for the few statements before their commits.

Deliberately not followed: Zulip sends the forced event even in a realm with presence
disabled, where /register reports no presences at all; hubbub sends none there, so that
applying events keeps matching a fresh /register.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Literal

import sqlalchemy as sa

from hubbub.db.dialects import PerDialect, for_name
from hubbub.db.tables import presence_sequence, user_presence
from hubbub.models import Realm, User
from hubbub.queries.presence import (
    ACTIVE,
    OFFLINE_THRESHOLD_SECS,
    PRESENCE_PING_INTERVAL_SECS,
    PRESENCE_UPDATE_MIN_FREQ_SECONDS,
    USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS,
    PresenceWrite,
    get_presence_enabled,
    legacy_presence_dict,
)
from hubbub.queries.user_status import get_user_status_row
from hubbub.queries.users import active_user_ids
from hubbub.transaction import Tx

PresenceStatus = Literal["active", "idle"]

# A user silent for longer than this who pings "active" has just come back online.
_NEWLY_ONLINE_SECONDS = OFFLINE_THRESHOLD_SECS - PRESENCE_PING_INTERVAL_SECS - 10
# Never-seen times compare as a day old.
_LONG_AGO = 24 * 3600


async def _presence_recipients(tx: Tx, user: User, *, force_send_update: bool) -> list[int]:
    """Who hears of the user's presence: every active user of the realm, or nobody in a
    realm above the limit unless the update is forced."""
    limit = USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS
    if force_send_update:
        return list(await active_user_ids(tx.conn, user.realm_id))
    # A realm above the limit gets no presence events: its first ids tell (a user
    # coming back online in a 1,000-user realm read all 1,000 for nothing).
    recipients = await active_user_ids(tx.conn, user.realm_id, at_most=limit + 1)
    return [] if len(recipients) > limit else list(recipients)


def _presence_event(
    user: User, last_active: float | None, last_connected: float, *, now: float
) -> dict[str, object]:
    return {
        "type": "presence",
        # Both keys; each queue keeps the one its slim_presence asks for (events/queues.py).
        "email": user.email,
        "user_id": user.id,
        "server_timestamp": now,
        "presence": {"website": legacy_presence_dict(last_active, last_connected)},
    }


# Every presence ping reads its user's row first: built once.
_OWN_PRESENCE = (
    sa.select(user_presence)
    .where(user_presence.c.user_profile_id == sa.bindparam("user_id"))
    .with_for_update()
)


def _build_next_update_id(dialect: ModuleType) -> Any:
    statement = dialect.insert(presence_sequence).values(
        realm_id=sa.bindparam("realm_id"), last_update_id=1
    )
    return statement.on_conflict_do_update(
        index_elements=["realm_id"],
        set_={"last_update_id": presence_sequence.c.last_update_id + 1},
    ).returning(presence_sequence.c.last_update_id)


_NEXT_UPDATE_ID = PerDialect(_build_next_update_id)


async def _take_update_id(tx: Tx, realm_id: int) -> int:
    """The realm's next presence update id, its count's row locked until the commit."""
    result = await tx.conn.execute(_NEXT_UPDATE_ID(tx.conn), {"realm_id": realm_id})
    return int(result.scalar_one())


async def do_update_user_presence(
    tx: Tx,
    realm: Realm,
    user: User,
    log_time: int,
    status: PresenceStatus,
    *,
    now: float,
    force_send_update: bool = False,
) -> None:
    """Record one presence report made at ``log_time`` (whole seconds)."""
    row = (await tx.conn.execute(_OWN_PRESENCE, {"user_id": user.id})).first()
    active = status == ACTIVE
    creating = row is None
    last_active: float | None = log_time if active else None
    last_connected: float = log_time
    if row is not None:
        last_active, last_connected = row.last_active_time, row.last_connected_time
    since_active = _LONG_AGO if last_active is None else log_time - last_active
    since_connected = _LONG_AGO if last_connected is None else log_time - last_connected
    became_online = active and since_active > _NEWLY_ONLINE_SECONDS

    changes: dict[str, float] = {}
    if not creating and since_connected > PRESENCE_UPDATE_MIN_FREQ_SECONDS:
        changes["last_connected_time"] = log_time
    if not creating and active and since_active > PRESENCE_UPDATE_MIN_FREQ_SECONDS:
        changes["last_active_time"] = log_time
        if last_connected is None or log_time > last_connected:
            # Keep last_connected_time >= last_active_time.
            changes["last_connected_time"] = log_time
    last_active = changes.get("last_active_time", last_active)
    last_connected = changes.get("last_connected_time", last_connected)

    # Who hears of it is read before the update id is taken (see the module's docstring).
    recipients: list[int] = []
    if not realm.setting("presence_disabled") and (force_send_update or creating or became_online):
        recipients = await _presence_recipients(tx, user, force_send_update=force_send_update)

    if creating or changes:
        update_id = await _take_update_id(tx, user.realm_id)
        if creating:
            values = {
                "last_active_time": last_active,
                "last_connected_time": last_connected,
                "last_update_id": update_id,
            }
            # Two first pings may race; the later one wins, as its event is sent last.
            statement = for_name(tx.conn.dialect.name).insert(user_presence)
            await tx.conn.execute(
                statement.values(
                    user_profile_id=user.id, realm_id=user.realm_id, **values
                ).on_conflict_do_update(index_elements=["user_profile_id"], set_=values)
            )
        else:
            await tx.conn.execute(
                sa.update(user_presence)
                .where(user_presence.c.user_profile_id == user.id)
                .values({**changes, "last_update_id": update_id})
            )
        tx.presence_writes.append(
            PresenceWrite(user.realm_id, user.id, last_active, last_connected, update_id)
        )

    if recipients:
        assert last_connected is not None
        event = _presence_event(user, last_active, last_connected, now=now)
        tx.notify(user.realm_id, event, recipients)


async def check_update_user_presence(
    tx: Tx, realm: Realm, user: User, status: PresenceStatus, *, now: float
) -> None:
    """``POST /users/me/presence``: record the report unless the user turned
    ``presence_enabled`` off (then nothing is stored, as in Zulip)."""
    if not await get_presence_enabled(tx.conn, user.id):
        return
    await do_update_user_presence(tx, realm, user, int(now), status, now=now)


async def do_presence_enabled_changed(
    tx: Tx, realm: Realm, user: User, enabled: bool, *, now: float, notify_status: bool = False
) -> None:
    """What Zulip does after ``presence_enabled`` changes (do_change_user_setting): on,
    the user is active now; off, the row is replaced by one idle long enough ago that
    every client shows the user offline. Either way the realm hears of it at once.

    ``notify_status`` (for a change made through the settings, not ``POST
    /users/me/status``): a user who has a status row is also announced with a
    ``user_status`` event carrying only ``away``, since /register derives ``away`` from
    this setting. Zulip 8.0 sends no such event, leaving clients' ``away`` stale."""
    if enabled:
        await do_update_user_presence(
            tx, realm, user, int(now), "active", now=now, force_send_update=True
        )
    else:
        await tx.conn.execute(
            sa.delete(user_presence).where(user_presence.c.user_profile_id == user.id)
        )
        await do_update_user_presence(
            tx,
            realm,
            user,
            int(now) - (OFFLINE_THRESHOLD_SECS + 120),
            "idle",
            now=now,
            force_send_update=True,
        )
    if notify_status and await get_user_status_row(tx.conn, user.id) is not None:
        event = {"type": "user_status", "user_id": user.id, "away": not enabled}
        tx.notify(user.realm_id, event, await active_user_ids(tx.conn, user.realm_id))
