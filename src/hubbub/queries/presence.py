"""Reading presence: the realm's presence dictionaries, in the modern and the legacy form.

A user's presence is two times (whole UNIX seconds, as Zulip's presence queue stores
them): ``last_connected_time`` (a client of theirs was open) and ``last_active_time`` (they
were using it). Clients decide who is online from these and ``server_timestamp`` with the
140-second offline threshold that /register announces; the server only reports raw times.

Two forms (Zulip 8.0):
- modern (``slim_presence``), keyed by user id string: ``{active_timestamp, idle_timestamp}``;
- legacy, keyed by API email: ``{"website": {client, status, timestamp, pushable},
  "aggregated": {client, status, timestamp}}`` (feature level 178 made ``website`` the only
  client and ``pushable`` always false).

Unlike Zulip, a user who connected but was never active (``last_active_time`` NULL) is
reported as ``active_timestamp`` 0 and, in the legacy form, idle since they connected;
Zulip substitutes the date the user joined, which no ``presence`` event can carry, so
clients could not keep that value current (see events/presence_state.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.fast import fetch_rows
from hubbub.db.tables import user_presence, user_profile, user_setting
from hubbub.models import Realm
from hubbub.queries.user_settings import get_stored_user_settings

# Zulip 8.0's settings (zproject/default_settings.py and computed_settings.py).
OFFLINE_THRESHOLD_SECS = 140
PRESENCE_PING_INTERVAL_SECS = 60
# A ping closer than this to the stored time does not rewrite it.
PRESENCE_UPDATE_MIN_FREQ_SECONDS = 55
# The legacy form calls a user "active" while the last activity is at most this much
# older than the last connection.
PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS = 70
# Beyond this many active users, presence events are not sent (clients poll instead).
USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS = 100
# /register and the presence endpoints report users connected within two weeks.
PRESENCE_WINDOW_SECONDS = 14 * 24 * 3600

ACTIVE = "active"
IDLE = "idle"


def legacy_presence_dict(last_active: float | None, last_connected: float) -> dict[str, Any]:
    """The ``website`` entry of the legacy form (and of ``presence`` events)."""
    if (
        last_active is not None
        and last_active + PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS >= last_connected
    ):
        status, timestamp = ACTIVE, last_active
    else:
        status, timestamp = IDLE, last_connected
    return {"client": "website", "status": status, "timestamp": int(timestamp), "pushable": False}


def legacy_user_presence(last_active: float | None, last_connected: float) -> dict[str, Any]:
    website = legacy_presence_dict(last_active, last_connected)
    status, timestamp = website["status"], website["timestamp"]
    return {
        "website": website,
        "aggregated": {"client": "website", "status": status, "timestamp": timestamp},
    }


def modern_user_presence(last_active: float | None, last_connected: float) -> dict[str, Any]:
    return {
        "active_timestamp": int(last_active or 0),
        "idle_timestamp": int(last_connected),
    }


def _last_connected(row: Any) -> float:
    # A row always gets last_connected_time; the join date covers a hand-made NULL.
    return float(
        row.last_connected_time if row.last_connected_time is not None else row.date_joined
    )


async def get_presence_row(conn: AsyncConnection, user_id: int) -> Any | None:
    return (
        await conn.execute(
            sa.select(user_presence).where(user_presence.c.user_profile_id == user_id)
        )
    ).first()


async def get_user_presence_legacy(conn: AsyncConnection, user_id: int) -> dict[str, Any] | None:
    """One user's legacy presence, however old, or None without a row."""
    row = (
        await conn.execute(
            sa.select(
                user_presence.c.last_active_time,
                user_presence.c.last_connected_time,
                user_profile.c.date_joined,
            )
            .join(user_profile, user_profile.c.id == user_presence.c.user_profile_id)
            .where(user_presence.c.user_profile_id == user_id)
        )
    ).first()
    if row is None:
        return None
    return legacy_user_presence(row.last_active_time, _last_connected(row))


# Every presence ping reads it (each client once a minute): built once.
_REALM_PRESENCES = (
    sa.select(
        user_presence.c.user_profile_id,
        user_presence.c.last_active_time,
        user_presence.c.last_connected_time,
        user_profile.c.email,
        user_profile.c.date_joined,
    )
    .join(user_profile, user_profile.c.id == user_presence.c.user_profile_id)
    .where(
        user_presence.c.realm_id == sa.bindparam("realm_id"),
        user_presence.c.last_connected_time >= sa.bindparam("since"),
        user_profile.c.is_active,
        ~user_profile.c.is_bot,
    )
    .order_by(user_presence.c.user_profile_id)
)


def _entry(row: tuple[Any, ...], slim: bool) -> tuple[str, dict[str, Any]]:
    """One user's key and entry of the realm's presence, from a ``_REALM_PRESENCES`` row."""
    user_id, active, connected, email, joined = row
    last_connected = joined if connected is None else connected
    if slim:
        return str(user_id), modern_user_presence(active, last_connected)
    return email, legacy_user_presence(active, last_connected)


async def _presence_rows(conn: AsyncConnection, realm: Realm, now: float) -> list[tuple[Any, ...]]:
    """The realm's ``_REALM_PRESENCES`` rows; none when it has presence disabled."""
    if realm.setting("presence_disabled"):
        return []
    params = {"realm_id": realm.id, "since": now - PRESENCE_WINDOW_SECONDS}
    return [tuple(row) for row in await fetch_rows(conn, _REALM_PRESENCES, params)]


async def get_realm_presences(
    conn: AsyncConnection, realm: Realm, *, now: float, slim: bool
) -> dict[str, dict[str, Any]]:
    """Presence of the realm's active human users connected in the last two weeks; empty
    when the realm has presence disabled (Zulip's ``get_presences_for_realm``)."""
    return dict(_entry(row, slim) for row in await _presence_rows(conn, realm, now))


# How long a server process answers pings from the realm's rows as it last read them.
# Each ping read every row of the realm (1,000 on a 1,000-user realm) to answer with
# them: ~5.5 ms of a ping's ~7 ms of CPU (bench/inprocess.py presence, 1,000 users). The
# process's own presence writes and user changes reach the kept rows at once (see
# ``PresenceAnswers``); another worker's are seen within this time, well within the minute
# between a client's pings. Zulip 8.0 itself records pings through a queue worker, so its
# answers also trail the latest pings.
PRESENCE_ANSWER_SECONDS = 1.0
_REALMS_MAX = 1_000


@dataclass(frozen=True)
class PresenceWrite:
    """A user's presence times as a committed write left them."""

    realm_id: int
    user_id: int
    last_active: float | None
    last_connected: float


@dataclass
class _RealmPresences:
    """A realm's ``_REALM_PRESENCES`` rows by user id, as read at ``now`` (the services'
    clock) and ``read_at`` (``time.monotonic``), and, by form (``slim``), each row's entry
    of the answer serialized (``"key":{...}``). A write changes one entry: with each
    client pinging once a minute every ping wrote, and serializing the answer again from
    all of its rows was 4 % of the event loop's thread at 750 active users (py-spy)."""

    now: float
    read_at: float
    rows: dict[int, tuple[Any, ...]]
    entries: dict[bool, dict[int, bytes]] = field(default_factory=dict)

    def fresh(self, now: float) -> bool:
        # The services' clock too: tests move it by days, past the two-week window.
        return (
            time.monotonic() - self.read_at <= PRESENCE_ANSWER_SECONDS
            and abs(now - self.now) <= PRESENCE_ANSWER_SECONDS
        )

    @classmethod
    def read(
        cls, rows: list[tuple[Any, ...]], now: float, before: _RealmPresences | None
    ) -> _RealmPresences:
        """The realm as just read; the entries of rows unchanged since ``before`` are kept,
        so that each second's read serializes only what changed."""
        by_user = {row[0]: row for row in rows}
        entries: dict[bool, dict[int, bytes]] = {}
        if before is not None:
            for slim, kept in before.entries.items():
                entries[slim] = {
                    user_id: (
                        kept[user_id] if before.rows.get(user_id) == row else _serialized(row, slim)
                    )
                    for user_id, row in by_user.items()
                }
        return cls(now, time.monotonic(), by_user, entries)

    def answer(self, slim: bool) -> bytes:
        entries = self.entries.get(slim)
        if entries is None:
            entries = self.entries[slim] = {
                user_id: _serialized(row, slim) for user_id, row in self.rows.items()
            }
        return b"{" + b",".join(entries.values()) + b"}"


@dataclass
class PresenceAnswers:
    """The presence answers one server process keeps (``Services.presence``): each realm's
    rows for ``PRESENCE_ANSWER_SECONDS``, kept current with the process's own commits."""

    realms: dict[int, _RealmPresences] = field(default_factory=dict)

    async def answer(
        self, conn: AsyncConnection, realm: Realm, *, now: float, slim: bool
    ) -> orjson.Fragment:
        """``get_realm_presences`` as JSON, for the answers that only serialize it (the
        /register state is a dictionary that events update, so it reads the rows itself)."""
        if realm.setting("presence_disabled"):
            return orjson.Fragment(b"{}")
        found = self.realms.get(realm.id)
        if found is None or not found.fresh(now):
            found = _RealmPresences.read(await _presence_rows(conn, realm, now), now, found)
            if len(self.realms) >= _REALMS_MAX:
                self.realms.clear()
            self.realms[realm.id] = found
        return orjson.Fragment(found.answer(slim))

    def written(self, writes: Iterable[PresenceWrite]) -> None:
        """Presence writes of this process have committed: the kept rows take them."""
        for write in writes:
            found = self.realms.get(write.realm_id)
            if found is None:
                continue
            row = found.rows.get(write.user_id)
            if row is None:
                # Someone the rows do not hold (a first ping, or back after two weeks):
                # their email and join date are not at hand, so the realm is read again.
                del self.realms[write.realm_id]
                continue
            row = (write.user_id, write.last_active, write.last_connected, *row[3:])
            found.rows[write.user_id] = row
            for slim, entries in found.entries.items():
                entries[write.user_id] = _serialized(row, slim)

    def forget(self, realm_ids: Iterable[int]) -> None:
        """Users of these realms changed (deactivated, reactivated, a new email, ...):
        their next answer reads the rows again."""
        for realm_id in realm_ids:
            self.realms.pop(realm_id, None)


def _serialized(row: tuple[Any, ...], slim: bool) -> bytes:
    """A ``_REALM_PRESENCES`` row's entry of the answer, ``"key":{...}``."""
    key, entry = _entry(row, slim)
    return orjson.dumps({key: entry})[1:-1]


async def get_presence_response(
    conn: AsyncConnection, realm: Realm, kept: PresenceAnswers, *, now: float, slim: bool
) -> dict[str, Any]:
    return {
        "presences": await kept.answer(conn, realm, now=now, slim=slim),
        "server_timestamp": now,
    }


def _presence_enabled(settings: dict[str, Any]) -> bool:
    return bool(settings.get("presence_enabled", True))


async def get_presence_enabled(conn: AsyncConnection, user_id: int) -> bool:
    """The user's ``presence_enabled`` setting (True unless they turned it off)."""
    return _presence_enabled(await get_stored_user_settings(conn, user_id))


async def get_presence_disabled_user_ids(conn: AsyncConnection, realm_id: int) -> set[int]:
    """Active users of the realm who turned ``presence_enabled`` off."""
    rows = await conn.execute(
        sa.select(user_setting.c.user_profile_id, user_setting.c.settings)
        .join(user_profile, user_profile.c.id == user_setting.c.user_profile_id)
        .where(
            user_profile.c.realm_id == realm_id,
            user_profile.c.is_active,
            # Cheap pre-filter; the JSON decides.
            user_setting.c.settings.contains("presence_enabled"),
        )
    )
    return {user_id for user_id, text in rows if not _presence_enabled(orjson.loads(text))}
