"""A write transaction that also collects the events its changes produce.

Events are published only after the transaction commits, and never for one that rolled
back, so a client never hears of a change that did not happen:

    async with services.write() as tx:
        await do_change_full_name(tx, user, name)   # updates rows, calls tx.notify(...)
    # committed; the events are on the bus now
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.events.bus import Notice
from hubbub.queries.presence import PresenceWrite
from hubbub.queries.subscriber_cache import SubscriberCache


@dataclass
class Tx:
    conn: AsyncConnection
    # The process's kept stream subscribers (``Services.subscribers``), which a send
    # reads instead of the stream's subscription rows while they are current.
    subscribers: SubscriberCache
    notices: list[Notice] = field(default_factory=list)
    # Work that must wait for the commit (removing a deleted upload's file, waking the
    # scheduler): run after the events are published, never after a rollback.
    after_commit: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    # Users whose credentials stop working with this commit (a new API key, deactivation,
    # a changed login email): their event queues forget who may poll them.
    stale_credentials: set[int] = field(default_factory=set)
    # Presence times this transaction wrote, for the process's kept presence answers.
    presence_writes: list[PresenceWrite] = field(default_factory=list)

    def on_commit(self, job: Callable[[], Awaitable[None]]) -> None:
        self.after_commit.append(job)

    def forget_credentials(self, user_ids: Iterable[int]) -> None:
        self.stale_credentials.update(user_ids)

    def notify(self, realm_id: int, event: dict[str, Any], user_ids: Iterable[int]) -> None:
        self.notices.append(Notice(realm_id, event, tuple(user_ids)))

    def notify_public_stream_queues(
        self, realm_id: int, event: dict[str, Any], recipients: Iterable[int]
    ) -> None:
        """Send a public stream's event to the realm's ``all_public_streams`` queues of
        users who are not among its recipients (those get it through ``notify``)."""
        self.notices.append(Notice(realm_id, event, (), frozenset(recipients)))
