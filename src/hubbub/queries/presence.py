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

Incremental fetches (feature level 263): every row carries the update id of the write that
last changed it, taken from its realm's ``presence_sequence`` in commit order (see
actions/presence.py). A client that passes the ``last_update_id`` it last saw gets only
the rows changed since, and the answer's ``presence_last_update_id`` is the newest id it
holds: the client's own when nothing changed, -1 when neither holds any. Without an id
(or with one of 0 or less) only users connected within ``history_limit_days`` (feature
level 288; 14 by default) are reported; a positive id replaces that limit.

Unlike Zulip, a user who connected but was never active (``last_active_time`` NULL) is
reported as ``active_timestamp`` 0 and, in the legacy form, idle since they connected;
Zulip substitutes the date the user joined, which no ``presence`` event can carry, so
clients could not keep that value current (see register/presence_state.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.fast import fetch_rows, fetch_value
from hubbub.db.tables import presence_sequence, user_presence, user_profile, user_setting
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
# /register and the presence endpoints report users connected within two weeks, unless
# the client names another limit (feature level 288).
PRESENCE_HISTORY_LIMIT_DAYS = 14
# A longer limit than this reaches back before any presence row (and keeps the cutoff a
# float a huge integer could not become).
_HISTORY_LIMIT_DAYS_MAX = 1_000_000

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


async def get_presence_row(conn: AsyncConnection, user_id: int) -> Any | None:
    return (
        await conn.execute(
            sa.select(user_presence).where(user_presence.c.user_profile_id == user_id)
        )
    ).first()


@dataclass(frozen=True)
class PresenceRequest:
    """Which presence rows a client asks for: those changed after ``last_update_id``
    (feature level 263), of users connected within ``history_limit_days`` (feature
    level 288); None for either is "not given"."""

    last_update_id: int | None = None
    history_limit_days: int | None = None

    def since(self, now: float) -> float | None:
        """The oldest connection time reported, or None for no limit: a positive
        ``last_update_id`` says the client has the older rows already, and replaces it
        (Zulip's get_presence_dict_by_realm)."""
        if self.last_update_id is not None and self.last_update_id > 0:
            return None
        days = self.history_limit_days
        if days is None:
            days = PRESENCE_HISTORY_LIMIT_DAYS
        return now - min(days, _HISTORY_LIMIT_DAYS_MAX) * 86400


_DEFAULT_REQUEST = PresenceRequest()

# A row's columns, by position (the reads below are by position, for speed).
_USER_ID, _ACTIVE, _CONNECTED, _EMAIL, _JOINED, _UPDATE_ID = range(6)
_PRESENCE_COLUMNS = (
    user_presence.c.user_profile_id,
    user_presence.c.last_active_time,
    user_presence.c.last_connected_time,
    user_profile.c.email,
    user_profile.c.date_joined,
    user_presence.c.last_update_id,
)
# One user's row, however old (``GET /users/{user_id_or_email}/presence``).
_USER_PRESENCE = (
    sa.select(*_PRESENCE_COLUMNS)
    .join(user_profile, user_profile.c.id == user_presence.c.user_profile_id)
    .where(user_presence.c.user_profile_id == sa.bindparam("user_id"))
)
# Every row of the realm's active human users, however old: a client with an update id
# is owed the rows changed since, whatever their age. Every presence ping reads it
# (through ``PresenceAnswers``): built once.
_REALM_PRESENCES = (
    sa.select(*_PRESENCE_COLUMNS)
    .join(user_profile, user_profile.c.id == user_presence.c.user_profile_id)
    .where(
        user_presence.c.realm_id == sa.bindparam("realm_id"),
        user_profile.c.is_active,
        ~user_profile.c.is_bot,
    )
    .order_by(user_presence.c.user_profile_id)
)
_REALM_SEQUENCE = sa.select(presence_sequence.c.last_update_id).where(
    presence_sequence.c.realm_id == sa.bindparam("realm_id")
)


def _entry(row: tuple[Any, ...], slim: bool) -> tuple[str, dict[str, Any]]:
    """One user's key and entry of the realm's presence, from a ``_REALM_PRESENCES`` row."""
    connected = row[_CONNECTED]
    # A row always gets last_connected_time; the join date covers a hand-made NULL.
    last_connected = row[_JOINED] if connected is None else connected
    if slim:
        return str(row[_USER_ID]), modern_user_presence(row[_ACTIVE], last_connected)
    return row[_EMAIL], legacy_user_presence(row[_ACTIVE], last_connected)


def _chosen(
    rows: Iterable[tuple[Any, ...]], request: PresenceRequest, now: float
) -> list[tuple[Any, ...]]:
    """The rows ``request`` asks for. A limit of 0 days asks for none at all."""
    if request.history_limit_days == 0:
        return []
    after, since = request.last_update_id, request.since(now)
    return [
        row
        for row in rows
        if (after is None or row[_UPDATE_ID] > after)
        and (since is None or (row[_CONNECTED] is not None and row[_CONNECTED] >= since))
    ]


def _reported_id(
    chosen: list[tuple[Any, ...]], request: PresenceRequest, *, bound: int | None = None
) -> int:
    """``presence_last_update_id`` for an answer holding ``chosen``: their newest update
    id, else the client's own, else -1. ``bound`` (kept rows only): every write up to
    that id is known to be in the rows, and the id reported never passes it, or the
    client's own, so that a write the rows may lack is asked for again."""
    after = request.last_update_id
    if not chosen:
        return -1 if after is None else after
    newest: int = max(row[_UPDATE_ID] for row in chosen)
    if bound is not None:
        newest = min(newest, bound if after is None else max(after, bound))
    return newest


async def _presence_rows(conn: AsyncConnection, realm: Realm) -> list[tuple[Any, ...]]:
    """The realm's ``_REALM_PRESENCES`` rows; none when it has presence disabled."""
    if realm.setting("presence_disabled"):
        return []
    return [tuple(row) for row in await fetch_rows(conn, _REALM_PRESENCES, {"realm_id": realm.id})]


async def get_realm_presences(
    conn: AsyncConnection,
    realm: Realm,
    *,
    now: float,
    slim: bool,
    request: PresenceRequest = PresenceRequest(),
) -> tuple[dict[str, dict[str, Any]], int]:
    """The presence ``request`` asks for of the realm's active human users, and its
    ``presence_last_update_id``; nothing (and -1) when the realm has presence disabled
    (Zulip's ``get_presences_for_realm``). One statement reads the rows, so that the
    newest id among them also covers every write before it (ids follow commits)."""
    if realm.setting("presence_disabled"):
        return {}, -1
    chosen = _chosen(await _presence_rows(conn, realm), request, now)
    return dict(_entry(row, slim) for row in chosen), _reported_id(chosen, request)


# How long a server process answers pings from the realm's rows as it last read them.
# Each ping read every row of the realm to answer with them, most of a ping's CPU. The
# process's own presence writes and user changes reach the kept rows at once (see
# ``PresenceAnswers``); another worker's are seen within this time, well within the minute
# between a client's pings. Zulip 8.0 itself records pings through a queue worker, so its
# answers also trail the latest pings.
PRESENCE_ANSWER_SECONDS = 1.0
_REALMS_MAX = 1_000


@dataclass(frozen=True)
class PresenceWrite:
    """A user's presence times as a committed write left them, with its update id."""

    realm_id: int
    user_id: int
    last_active: float | None
    last_connected: float
    update_id: int


@dataclass
class _RealmPresences:
    """A realm's ``_REALM_PRESENCES`` rows by user id, as read at ``now`` (the services'
    clock) and ``read_at`` (``time.monotonic``), and, by form (``slim``), each row's entry
    of the answer serialized (``"key":{...}``). A write changes one entry: with each
    client pinging once a minute every ping wrote, and serializing the answer again from
    all of its rows after each write showed in the event loop's profile under load.

    ``bound``: every write of the realm with an update id up to it is in the rows. The
    realm's count is read before the rows, so that it never claims a write they lack;
    this process's own writes may then add rows with a higher id while another
    process's write between is missing, which is why answers never report an id past
    ``bound`` (``_reported_id``).

    ``recent``: the users connected within the default two weeks as of ``now``, and
    ``recent_newest`` the newest update id among them. Most pings ask for just that (the
    mobile app sends no ``last_update_id``), and choosing them row by row for every answer
    cost more than the answer's join; the window moves on when the rows are read
    again."""

    now: float
    read_at: float
    rows: dict[int, tuple[Any, ...]]
    bound: int
    entries: dict[bool, dict[int, bytes]] = field(default_factory=dict)
    recent: set[int] = field(default_factory=set)
    recent_newest: int = -1

    def __post_init__(self) -> None:
        recent = _chosen(self.rows.values(), PresenceRequest(), self.now)
        self.recent = {row[_USER_ID] for row in recent}
        self.recent_newest = max((row[_UPDATE_ID] for row in recent), default=-1)

    def fresh(self, now: float) -> bool:
        # The services' clock too: tests move it by days, past the two-week window.
        return (
            time.monotonic() - self.read_at <= PRESENCE_ANSWER_SECONDS
            and abs(now - self.now) <= PRESENCE_ANSWER_SECONDS
        )

    @classmethod
    def read(
        cls, rows: list[tuple[Any, ...]], bound: int, now: float, before: _RealmPresences | None
    ) -> _RealmPresences:
        """The realm as just read; the entries of rows unchanged since ``before`` are kept,
        so that each second's read serializes only what changed."""
        by_user = {row[_USER_ID]: row for row in rows}
        entries: dict[bool, dict[int, bytes]] = {}
        if before is not None:
            for slim, kept in before.entries.items():
                entries[slim] = {
                    user_id: (
                        kept[user_id] if before.rows.get(user_id) == row else _serialized(row, slim)
                    )
                    for user_id, row in by_user.items()
                }
        return cls(now, time.monotonic(), by_user, bound, entries)

    def answer(self, slim: bool, request: PresenceRequest, now: float) -> tuple[bytes, int]:
        entries = self.entries.get(slim)
        if entries is None:
            entries = self.entries[slim] = {
                user_id: _serialized(row, slim) for user_id, row in self.rows.items()
            }
        if request == _DEFAULT_REQUEST:
            if len(self.recent) == len(entries):
                body = b",".join(entries.values())
            else:
                body = b",".join([entries[user_id] for user_id in self.recent])
            newest = -1 if not self.recent else min(self.recent_newest, self.bound)
            return b"{" + body + b"}", newest
        chosen = _chosen(self.rows.values(), request, now)
        body = b",".join([entries[row[_USER_ID]] for row in chosen])
        return b"{" + body + b"}", _reported_id(chosen, request, bound=self.bound)

    def take(self, write: PresenceWrite) -> bool:
        """Take a committed write of this process into the rows; False when they do not
        hold its user (their email and join date are not at hand)."""
        row = self.rows.get(write.user_id)
        if row is None:
            return False
        if write.update_id <= row[_UPDATE_ID]:
            return True  # the rows were read after it, or after a newer write
        row = (
            write.user_id,
            write.last_active,
            write.last_connected,
            row[_EMAIL],
            row[_JOINED],
            write.update_id,
        )
        self.rows[write.user_id] = row
        for slim, entries in self.entries.items():
            entries[write.user_id] = _serialized(row, slim)
        if _chosen([row], _DEFAULT_REQUEST, self.now):
            self.recent.add(write.user_id)
            self.recent_newest = max(self.recent_newest, write.update_id)
        elif write.user_id in self.recent:
            # Written as connected before the window (never by the actions): rare enough
            # to count again.
            self.recent.discard(write.user_id)
            ids = (self.rows[user_id][_UPDATE_ID] for user_id in self.recent)
            self.recent_newest = max(ids, default=-1)
        if write.update_id == self.bound + 1:
            # The next id after every write the rows hold: they still hold all up to it.
            self.bound = write.update_id
        return True


@dataclass
class PresenceAnswers:
    """The presence answers one server process keeps (``Services.presence``): each realm's
    rows for ``PRESENCE_ANSWER_SECONDS``, kept current with the process's own commits."""

    realms: dict[int, _RealmPresences] = field(default_factory=dict)

    async def answer(
        self,
        conn: AsyncConnection,
        realm: Realm,
        *,
        now: float,
        slim: bool,
        request: PresenceRequest = PresenceRequest(),
    ) -> tuple[orjson.Fragment, int]:
        """``get_realm_presences`` as JSON, for the answers that only serialize it (the
        /register state is a dictionary that events update, so it reads the rows itself)."""
        if realm.setting("presence_disabled"):
            return orjson.Fragment(b"{}"), -1
        body, last_update_id = (await self._current(conn, realm, now)).answer(slim, request, now)
        return orjson.Fragment(body), last_update_id

    async def user_presence(
        self, conn: AsyncConnection, realm: Realm, user_id: int, *, now: float
    ) -> dict[str, Any] | None:
        """One user's presence in the legacy form (``{"website", "aggregated"}``), or
        None without a row. It is built from the row the realm's answer holds at this
        moment, so that ``GET /users/{id}/presence`` and ``GET /realm/presence`` agree
        even while another worker's write is not yet in the kept rows; a user they do not
        hold (in a realm with presence disabled, or new since the rows were read) is read."""
        disabled = realm.setting("presence_disabled")
        if not disabled:
            row = (await self._current(conn, realm, now)).rows.get(user_id)
            if row is not None:
                return _entry(row, slim=False)[1]
        found = (await conn.execute(_USER_PRESENCE, {"user_id": user_id})).first()
        if found is None:
            return None
        if not disabled:
            # A first ping another process recorded since the rows were read: the realm's
            # next answer reads them again, and holds this user too.
            self.realms.pop(realm.id, None)
        return _entry(tuple(found), slim=False)[1]

    async def _current(self, conn: AsyncConnection, realm: Realm, now: float) -> _RealmPresences:
        """The realm's rows as kept, read again once older than ``PRESENCE_ANSWER_SECONDS``."""
        found = self.realms.get(realm.id)
        if found is None or not found.fresh(now):
            # The count first: on PostgreSQL each statement sees the commits made before
            # it, so the rows read next hold every write the count has reached.
            bound = await fetch_value(conn, _REALM_SEQUENCE, {"realm_id": realm.id})
            rows = await _presence_rows(conn, realm)
            found = _RealmPresences.read(rows, bound or 0, now, found)
            if len(self.realms) >= _REALMS_MAX:
                self.realms.clear()
            self.realms[realm.id] = found
        return found

    def written(self, writes: Iterable[PresenceWrite]) -> None:
        """Presence writes of this process have committed: the kept rows take them."""
        for write in writes:
            found = self.realms.get(write.realm_id)
            if found is not None and not found.take(write):
                # Someone the rows do not hold (a first ping): the realm is read again.
                del self.realms[write.realm_id]

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
    conn: AsyncConnection,
    realm: Realm,
    kept: PresenceAnswers,
    *,
    now: float,
    slim: bool,
    request: PresenceRequest = PresenceRequest(),
) -> dict[str, Any]:
    """The answer to a presence poll (Zulip's ``get_presence_response``)."""
    presences, last_update_id = await kept.answer(conn, realm, now=now, slim=slim, request=request)
    return {
        "presences": presences,
        "server_timestamp": now,
        "presence_last_update_id": last_update_id,
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
