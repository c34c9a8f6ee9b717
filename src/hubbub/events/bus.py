"""The event bus: queues and delivery, behind one interface with two implementations.

``MemoryEventBus`` (here) serves one process. On SQLite it keeps its queues in the
database as it goes (``durable_queues.py``), so that they survive a crash; otherwise it
saves them to a file on a clean shutdown (``queue_file.py``), so clients need not
re-register after a restart (Zulip saves them on shutdown too).
``RedisEventBus`` (``redis_bus.py``) keeps queues in Redis so any worker serves any poll.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from hubbub.clock import Clock
from hubbub.errors import BadEventQueueIdError, JsonableError
from hubbub.events.alarms import Alarms
from hubbub.events.durable_queues import (
    DurableQueues,
    QueueSaver,
    Saved,
    journal_row,
)
from hubbub.events.memory_queue import MemoryQueue, queue_from_file, queue_to_file
from hubbub.events.queue_file import read_queue_file, write_queue_file
from hubbub.events.queues import (
    CREDENTIAL_RECHECK_SECONDS,
    DEFAULT_MAX_QUEUE_BYTES,
    DEFAULT_MAX_QUEUES_PER_USER,
    QueueSpec,
    ShapedOnce,
    heartbeat_delay,
    queues_to_evict,
)

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

logger = logging.getLogger("hubbub.events")

HEARTBEAT_JSON = '{"type":"heartbeat"}'


@dataclass(frozen=True)
class Notice:
    """One event for some users of a realm, published after its transaction committed."""

    realm_id: int
    event: dict[str, Any]
    user_ids: tuple[int, ...]
    # A public stream's message also goes to the realm's ``all_public_streams`` queues of
    # users other than these (its recipients, who get it through ``user_ids``).
    public_stream_except: frozenset[int] | None = None
    # Its place in the journal of durable queues (``durable_queues.py``), when kept there.
    seq: int | None = None


class EventBus(Protocol):
    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def create_queue(self, spec: QueueSpec, now: float) -> None: ...

    async def get_queue(self, queue_id: str) -> QueueSpec | None: ...

    async def delete_queue(self, queue_id: str) -> None: ...

    async def publish(self, notices: list[Notice]) -> None: ...

    async def remember_credentials(self, queue_id: str, digest: str, now: float) -> None:
        """The credentials with this digest just proved, against the database, that their
        owner may poll the queue."""

    async def vouching_owner(self, queue_id: str, digest: str, now: float) -> int | None:
        """The queue's user id when the queue may vouch for these credentials, else None
        (ask the database). A bus that checks them only in the poll itself (Redis: in the
        poll's one script call) answers with the owner of any queue it knows; the poll,
        given ``credential=digest``, then raises ``CredentialsUnproved`` instead."""

    async def vouches_for(self, queue_id: str, digest: str, now: float) -> bool:
        """Whether these credentials proved themselves on the queue less than
        ``CREDENTIAL_RECHECK_SECONDS`` ago (for a request that fails before its poll)."""

    async def forget_credentials(self, user_ids: list[int]) -> None:
        """These users' credentials changed: their queues trust none until proved again."""

    async def get_events(
        self,
        queue_id: str,
        last_event_id: int | None,
        *,
        block: bool,
        now: float,
        credential: str | None = None,
    ) -> list[dict[str, Any]]:
        """The queue's events, waiting for some if ``block``. ``credential``: the digest
        the queue must still vouch for (``vouches_for``), checked before the poll
        changes anything; ``CredentialsUnproved`` if it does not."""

    async def expire_queues(self, now: float) -> int: ...

    async def release_polls(self) -> None:
        """Server shutting down: answer every waiting poll now, and later ones at once."""

    def waiting_polls(self) -> int:
        """How many long-polls wait in this process (benchmarks wait for them to park)."""


def credentials_fresh(stored: str | None, verified_at: float, given: str, now: float) -> bool:
    return (
        stored is not None
        and now - verified_at < CREDENTIAL_RECHECK_SECONDS
        and hmac.compare_digest(stored, given)
    )


class CredentialsUnproved(Exception):
    """The queue no longer vouches for the credentials a poll presented (never proved on
    it, or proved too long ago, or forgotten): they must be checked against the database."""


def pruned_error(last_event_id: int) -> JsonableError:
    return JsonableError(f"An event newer than {last_event_id} has already been pruned!")


class MemoryEventBus:
    def __init__(
        self,
        clock: Clock,
        *,
        state_file: Path | None = None,
        durable: DurableQueues | None = None,
        heartbeat_seconds: float | None = None,
        max_queues_per_user: int = DEFAULT_MAX_QUEUES_PER_USER,
        max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
    ) -> None:
        self.clock = clock
        # With ``durable`` the queues live in the database, and ``state_file`` is only
        # read, once, for the queues an older version saved there.
        self.state_file = state_file
        self.durable = durable
        self.heartbeat_seconds = heartbeat_seconds
        self.max_queues_per_user = max_queues_per_user
        self.max_queue_bytes = max_queue_bytes
        self._alarms = Alarms()
        self._queues: dict[str, MemoryQueue] = {}
        self._by_user: dict[int, set[str]] = {}
        # realm id -> its queues registered with ``all_public_streams``.
        self._public: dict[int, set[str]] = {}
        # Only a started bus (a server) saves queues: a command-line process that merely
        # shares the data directory must not overwrite the server's saved queues.
        self._started = False
        self._releasing = False
        # Durable queues: the last journal seq given out and the last published.
        self._seq = 0
        self._published_seq = 0
        self.saver = None if durable is None else QueueSaver(durable, self._queues)

    @property
    def journaling(self) -> bool:
        """Whether this process's writes journal their events (a started durable bus)."""
        return self.durable is not None and self._started

    def waiting_polls(self) -> int:
        return sum(queue.waiter is not None for queue in self._queues.values())

    async def release_polls(self) -> None:
        self._releasing = True
        for queue in self._queues.values():
            queue.wake()

    async def journal(self, conn: AsyncConnection, notices: list[Notice]) -> list[Notice]:
        """Number ``notices`` and journal them in ``conn``'s write transaction, which must
        be the one whose commit they follow (and then be published in this order)."""
        assert self.durable is not None
        self._seq = max(self._seq, await self.durable.last_seq(conn))
        numbered = []
        for notice in notices:
            self._seq += 1
            numbered.append(replace(notice, seq=self._seq))
        await self.durable.append(
            conn,
            [
                journal_row(n.seq or 0, n.realm_id, n.event, n.user_ids, n.public_stream_except)
                for n in numbered
            ],
        )
        return numbered

    async def start(self) -> None:
        self._started = True
        if self.durable is not None:
            self._restore(await self.durable.load())
        saved = read_queue_file(self.state_file) if self.state_file is not None else []
        try:
            restored = [queue_from_file(item) for item in saved]
        except (ValueError, KeyError, TypeError):
            logger.exception("could not restore event queues from %s", self.state_file)
            restored = []
        if restored and self.durable is not None:
            await self._import(restored)
        for queue in restored:
            self._add(queue)
        if restored:
            logger.info("restored %d event queues from %s", len(restored), self.state_file)
        if self.state_file is not None:
            self.state_file.unlink(missing_ok=True)
        if self.saver is not None:
            self.saver.start(lambda: self._published_seq)

    async def _import(self, queues: list[MemoryQueue]) -> None:
        assert self.durable is not None
        self._seq = await self.durable.import_queues(queues, self._seq)
        self._published_seq = self._seq

    def _restore(self, saved: Saved) -> None:
        """Rebuild the queues from the database: each from its base, replaying the
        journal's later events through the same routing and shaping as ``publish``."""
        now = self.clock.now()
        for item in saved.queues:
            queue = MemoryQueue(item.spec, now, next_id=item.base_id + 1)
            queue.base = queue.saved_base = (item.base_id, item.base_seq)
            self._add(queue)
        for row in saved.rows:
            if row.queue_id is None:
                notice = Notice(
                    row.realm_id or 0, row.event, row.user_ids, row.public_stream_except, row.seq
                )
                self._deliver(notice, replaying=True)
                continue
            target = self._queues.get(row.queue_id)
            if target is not None and target.base[1] < row.seq:
                target.push(row.event, len(orjson.dumps(row.event)), row.seq)
        self._seq = self._published_seq = saved.last_seq
        assert self.saver is not None
        self.saver.trimmed = min((q.base[1] for q in self._queues.values()), default=saved.last_seq)
        if saved.queues:
            logger.info("restored %d event queues from the database", len(saved.queues))

    async def close(self) -> None:
        for queue in self._queues.values():
            queue.wake()
        if not self._started:
            return
        if self.saver is not None:
            await self.saver.stop(self._published_seq)
            return
        if self.state_file is None:
            return
        saved = [queue_to_file(q) for q in self._queues.values()]
        write_queue_file(self.state_file, saved)

    async def flush_saved(self, *, background: bool = True) -> None:
        if self.saver is not None:
            await self.saver.flush(self._published_seq, background=background)

    def _add(self, queue: MemoryQueue) -> None:
        self._queues[queue.spec.queue_id] = queue
        self._by_user.setdefault(queue.spec.user_id, set()).add(queue.spec.queue_id)
        if queue.spec.all_public_streams:
            self._public.setdefault(queue.spec.realm_id, set()).add(queue.spec.queue_id)

    async def create_queue(self, spec: QueueSpec, now: float) -> None:
        owned = [self._queues[q] for q in self._by_user.get(spec.user_id, ())]
        candidates = [(q.spec.queue_id, q.waiter is None, q.last_access) for q in owned]
        for queue_id in queues_to_evict(candidates, self.max_queues_per_user):
            logger.info("user %d has too many event queues; removed %s", spec.user_id, queue_id)
            await self.delete_queue(queue_id)
        queue = MemoryQueue(spec, now)
        self._add(queue)
        if self.journaling:
            assert self.durable is not None
            queue.base = (-1, self._published_seq)
            try:
                await self.durable.save_queue(spec, *queue.base)
            except BaseException:
                self._remove(queue)
                raise
            queue.saved_base = queue.base

    async def get_queue(self, queue_id: str) -> QueueSpec | None:
        queue = self._queues.get(queue_id)
        return None if queue is None else queue.spec

    async def delete_queue(self, queue_id: str) -> None:
        queue = self._queues.get(queue_id)
        if queue is None:
            raise BadEventQueueIdError(queue_id)
        self._remove(queue)

    def _remove(self, queue: MemoryQueue) -> None:
        queue_id = queue.spec.queue_id
        self._queues.pop(queue_id, None)
        self._by_user.get(queue.spec.user_id, set()).discard(queue_id)
        self._public.get(queue.spec.realm_id, set()).discard(queue_id)
        if self.saver is not None:
            self.saver.deleted.add(queue_id)
        queue.wake()

    async def publish(self, notices: list[Notice]) -> None:
        for notice in notices:
            self._deliver(notice)

    def _deliver(self, notice: Notice, *, replaying: bool = False) -> None:
        """Put the notice's event on its queues; ``replaying`` the journal on start, only
        on those whose base is older than it."""
        seq = notice.seq or 0
        if notice.seq is not None:
            self._published_seq = max(self._published_seq, notice.seq)
        queue_ids = [q for u in notice.user_ids for q in self._by_user.get(u, ())]
        if notice.public_stream_except is not None:
            queue_ids += [
                q
                for q in self._public.get(notice.realm_id, ())
                if self._queues[q].spec.user_id not in notice.public_stream_except
            ]
        shapes = ShapedOnce(notice.event)
        for queue_id in queue_ids:
            queue = self._queues.get(queue_id)
            if queue is None:
                continue  # dropped as too full by an earlier notice of this publish
            if replaying and queue.base[1] >= seq:
                continue
            shaped = shapes.shape(queue.spec)
            if shaped is None:
                continue
            size = len(shapes.json(queue.spec) or "")
            if queue.held_bytes + size > self.max_queue_bytes:
                self._drop_overfull(queue)
                continue
            queue.push(shaped, size, seq)

    def _drop_overfull(self, queue: MemoryQueue) -> None:
        """A queue whose client has not collected its events for so long that they pass
        the bound goes; the client's next poll gets BAD_EVENT_QUEUE_ID and registers
        again, as it does after an idle queue expired."""
        queue_id = queue.spec.queue_id
        logger.info("event queue %s held over %d bytes; removed", queue_id, self.max_queue_bytes)
        self._remove(queue)

    async def remember_credentials(self, queue_id: str, digest: str, now: float) -> None:
        queue = self._queues.get(queue_id)
        if queue is not None:
            queue.credential, queue.verified_at = digest, now

    async def vouching_owner(self, queue_id: str, digest: str, now: float) -> int | None:
        # In this process's memory the check costs nothing: made here, before anything
        # else.
        if not await self.vouches_for(queue_id, digest, now):
            return None
        return self._queues[queue_id].spec.user_id

    async def vouches_for(self, queue_id: str, digest: str, now: float) -> bool:
        queue = self._queues.get(queue_id)
        return queue is not None and credentials_fresh(
            queue.credential, queue.verified_at, digest, now
        )

    async def forget_credentials(self, user_ids: list[int]) -> None:
        for user_id in user_ids:
            for queue_id in self._by_user.get(user_id, ()):
                self._queues[queue_id].credential = None

    async def get_events(
        self,
        queue_id: str,
        last_event_id: int | None,
        *,
        block: bool,
        now: float,
        credential: str | None = None,
    ) -> list[dict[str, Any]]:
        if credential is not None and not await self.vouches_for(queue_id, credential, now):
            raise CredentialsUnproved()
        queue = self._queues.get(queue_id)
        if queue is None:
            raise BadEventQueueIdError(queue_id)
        if last_event_id is not None:
            if last_event_id < queue.pruned_through:
                raise pruned_error(last_event_id)
            queue.prune(last_event_id)
        queue.last_access = now
        if queue.events or not block or self._releasing:
            return list(queue.events) if queue.saving is None else await self._deliverable(queue)
        # A newer poll on the same queue ends this one.
        queue.poll_generation += 1
        generation = queue.poll_generation
        queue.wake()
        loop = asyncio.get_running_loop()
        waiter = queue.waiter = loop.create_future()
        slot = self._alarms.add(waiter, self._heartbeat_delay())
        try:
            if await waiter and not queue.events:
                queue.push({"type": "heartbeat"}, len(HEARTBEAT_JSON), self._published_seq)
                if self.journaling and self.saver is not None:
                    # Everything before it is acknowledged: the queue starts again here.
                    queue.base = (queue.next_id - 1, self._published_seq)
                    self.saver.save_heartbeat(queue)
        finally:
            self._alarms.discard(waiter, slot)
            if queue.waiter is waiter:
                queue.waiter = None
            queue.last_access = self.clock.now()
        if queue.poll_generation != generation or self._queues.get(queue_id) is not queue:
            return []
        return list(queue.events) if queue.saving is None else await self._deliverable(queue)

    async def _deliverable(self, queue: MemoryQueue) -> list[dict[str, Any]]:
        """The queue's events, once the base of a heartbeat among them is saved: a
        client must never see a heartbeat that a replay after a crash would not know."""
        while queue.saving is not None:
            await asyncio.shield(queue.saving)
        return list(queue.events)

    def _heartbeat_delay(self) -> float:
        if self.heartbeat_seconds is not None:
            return self.heartbeat_seconds
        return heartbeat_delay()

    async def expire_queues(self, now: float) -> int:
        expired = [
            queue_id
            for queue_id, queue in self._queues.items()
            if queue.waiter is None and now - queue.last_access > queue.spec.lifespan_seconds
        ]
        for queue_id in expired:
            await self.delete_queue(queue_id)
        return len(expired)
