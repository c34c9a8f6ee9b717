"""The embedded server's event queues, kept in its SQLite database so that they survive a
crash: a client that polls again after the server was killed and restarted gets every
event it had not yet acknowledged, under the ids it expects, and no BAD_EVENT_QUEUE_ID.

Two tables hold them (migration 0029):

- ``event_journal``: every event the in-memory bus publishes, unshaped, with its
  recipients, numbered by ``seq`` in publishing order. It is written by the transaction
  of the change the event describes (``Services.write``), so an event is kept exactly
  when its change committed: there is no moment at which a change is committed and its
  event is not.
- ``event_queue_saved``: each queue's registration and a *base* ``(base_id, base_seq)``:
  the queue's events after id ``base_id`` are, in order, the journal's events after
  ``base_seq`` that the queue wants. Replaying the journal from each base through the
  bus's own routing and shaping rebuilds every queue's events with the same ids.

Replay gives the same ids because, on SQLite, the bus publishes in the order the writes
commit: there is one writer, and between a commit and its publish nothing suspends
(``db/engine.py`` returns the writer's connection inline), so no other write commits in
between. The only events that are not the journal's are heartbeats: one is given to a
queue only when the client has acknowledged everything, and its queue's base moves
past it (saved in one transaction shared by the heartbeats of a short window) before
the queue delivers anything, so a heartbeat a client saw is never missing from a replay.

Hot path: a write that publishes events adds one multi-row INSERT to its transaction.
Acknowledgements move the bases in memory; the bus saves the bases that moved, the
queues that went, and deletes journal rows every queue has acknowledged, every few
seconds (``FLUSH_SECONDS``) and on shutdown, in one background transaction. A base saved
late only means a longer replay: the events between it and the client's acknowledgement
come back with their old ids, and the client's next poll prunes them.

PostgreSQL has no single writer (commits and publishes may interleave), so an in-memory
bus on it keeps the older way: queues saved to a file on a clean shutdown.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.engine import Database
from hubbub.db.tables import event_journal, event_queue_saved
from hubbub.events.memory_queue import MemoryQueue
from hubbub.events.queues import QueueSpec

logger = logging.getLogger("hubbub.events")

# How often moved bases, removed queues and acknowledged journal rows are written.
FLUSH_SECONDS = 3.0
# How long a heartbeat waits for others to share its transaction.
HEARTBEAT_BATCH_SECONDS = 0.05


@dataclass(frozen=True)
class JournalRow:
    seq: int
    realm_id: int | None
    # Set for an event already shaped for this one queue; its recipients are then empty.
    queue_id: str | None
    event: dict[str, Any]
    user_ids: tuple[int, ...]
    public_stream_except: frozenset[int] | None


@dataclass(frozen=True)
class SavedQueue:
    spec: QueueSpec
    base_id: int
    base_seq: int


@dataclass
class Saved:
    queues: list[SavedQueue]
    # The journal rows some queue may still need, in order.
    rows: list[JournalRow]
    # The highest seq the database mentions: numbering goes on from there.
    last_seq: int


def journal_row(
    seq: int,
    realm_id: int | None,
    event: Mapping[str, object],
    user_ids: Iterable[int] = (),
    public_stream_except: frozenset[int] | None = None,
    queue_id: str | None = None,
) -> dict[str, object]:
    return {
        "seq": seq,
        "realm_id": realm_id,
        "queue_id": queue_id,
        "event": orjson.dumps(event).decode(),
        "user_ids": orjson.dumps(list(user_ids)).decode(),
        "public_stream_except": (
            None
            if public_stream_except is None
            else orjson.dumps(sorted(public_stream_except)).decode()
        ),
    }


_LAST_SEQ = sa.select(sa.func.max(event_journal.c.seq))


class DurableQueues:
    """The tables' reads and writes; the bus (``MemoryEventBus``) decides what to write."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def last_seq(self, conn: AsyncConnection) -> int:
        """The highest seq journaled, read in ``conn``'s write transaction: another process
        on the same database file (a command, a second server in tests) may have written
        rows since this one last numbered any."""
        found = (await conn.execute(_LAST_SEQ)).scalar()
        return int(found or 0)

    async def append(self, conn: AsyncConnection, rows: list[dict[str, object]]) -> None:
        """Journal these rows in ``conn``'s transaction (the change's own)."""
        if rows:
            await conn.execute(sa.insert(event_journal), rows)

    async def save_queue(self, spec: QueueSpec, base_id: int, base_seq: int) -> None:
        async with self.db.write() as conn:
            await conn.execute(
                sa.insert(event_queue_saved).values(
                    queue_id=spec.queue_id,
                    spec=orjson.dumps(spec.to_dict()).decode(),
                    base_id=base_id,
                    base_seq=base_seq,
                )
            )

    async def import_queues(self, queues: list[MemoryQueue], seq: int) -> int:
        """Queues of an older version's shutdown file go into the database, each pending
        event as a journal row for that queue alone, numbered after ``seq``; the last
        seq given out."""
        saved, rows = [], []
        for queue in queues:
            queue.base = queue.saved_base = (queue.next_id - len(queue.events) - 1, seq)
            saved.append(
                {
                    "queue_id": queue.spec.queue_id,
                    "spec": orjson.dumps(queue.spec.to_dict()).decode(),
                    "base_id": queue.base[0],
                    "base_seq": queue.base[1],
                }
            )
            marks = deque[tuple[int, int]]()
            for event, (size, _) in zip(queue.events, queue.marks, strict=True):
                seq += 1
                marks.append((size, seq))
                shaped = {k: v for k, v in event.items() if k != "id"}
                rows.append(journal_row(seq, None, shaped, queue_id=queue.spec.queue_id))
            queue.marks = marks
        async with self.db.write() as conn:
            if saved:
                await conn.execute(sa.insert(event_queue_saved), saved)
            await self.append(conn, rows)
        return seq

    async def save(
        self,
        bases: Mapping[str, tuple[int, int]],
        deleted: Iterable[str] = (),
        trim_through: int | None = None,
        *,
        background: bool = True,
    ) -> None:
        """Move saved bases, forget removed queues and delete journal rows up to
        ``trim_through``, in one transaction."""
        async with self.db.write(background=background) as conn:
            await self.save_in(conn, bases, deleted, trim_through)

    async def save_in(
        self,
        conn: AsyncConnection,
        bases: Mapping[str, tuple[int, int]],
        deleted: Iterable[str] = (),
        trim_through: int | None = None,
    ) -> None:
        if bases:
            table = event_queue_saved
            await conn.execute(
                sa.update(table)
                .where(table.c.queue_id == sa.bindparam("q"))
                .values(base_id=sa.bindparam("i"), base_seq=sa.bindparam("s")),
                [{"q": q, "i": i, "s": s} for q, (i, s) in bases.items()],
            )
        gone = sorted(deleted)
        if gone:
            await conn.execute(
                sa.delete(event_queue_saved).where(event_queue_saved.c.queue_id.in_(gone))
            )
        if trim_through is not None:
            await conn.execute(sa.delete(event_journal).where(event_journal.c.seq <= trim_through))

    async def load(self) -> Saved:
        async with self.db.read() as conn:
            queue_rows = (await conn.execute(sa.select(event_queue_saved))).all()
            queues = [
                SavedQueue(QueueSpec.from_dict(orjson.loads(r.spec)), r.base_id, r.base_seq)
                for r in queue_rows
            ]
            start = min((q.base_seq for q in queues), default=None)
            last = (await conn.execute(sa.select(sa.func.max(event_journal.c.seq)))).scalar()
            journal: Sequence[sa.Row[Any]] = []
            if start is not None:
                journal = (
                    await conn.execute(
                        sa.select(event_journal)
                        .where(event_journal.c.seq > start)
                        .order_by(event_journal.c.seq)
                    )
                ).all()
        rows = [
            JournalRow(
                r.seq,
                r.realm_id,
                r.queue_id,
                orjson.loads(r.event),
                tuple(orjson.loads(r.user_ids)),
                None
                if r.public_stream_except is None
                else frozenset(orjson.loads(r.public_stream_except)),
            )
            for r in journal
        ]
        last_seq = max([last or 0, *(q.base_seq for q in queues)])
        return Saved(queues, rows, last_seq)


class QueueSaver:
    """What a durable bus writes besides the journal: heartbeats' bases before they are
    delivered, and, every ``FLUSH_SECONDS`` and on shutdown, moved bases, removed queues
    and the journal rows every queue has acknowledged."""

    def __init__(self, durable: DurableQueues, queues: Mapping[str, MemoryQueue]) -> None:
        self.durable = durable
        self.queues = queues
        # Queues removed since the last save; the journal rows deleted up to here.
        self.deleted: set[str] = set()
        self.trimmed = 0
        # The heartbeats waiting for their shared transaction, and its outcome.
        self._batch: set[str] = set()
        self._batch_done: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, published_seq: Callable[[], int]) -> None:
        self._spawn(self._flush_periodically(published_seq))

    async def stop(self, published_seq: int) -> None:
        """A clean shutdown: the last progress saved, so that the next start replays
        little."""
        for task in list(self._tasks):
            task.cancel()
        await self.flush(published_seq, background=False)

    def crash(self) -> None:
        """Stop writing at once, as a killed process does (for tests)."""
        for task in list(self._tasks):
            task.cancel()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _flush_periodically(self, published_seq: Callable[[], int]) -> None:
        while True:
            await asyncio.sleep(FLUSH_SECONDS)
            await self.flush(published_seq())

    async def flush(self, published_seq: int, *, background: bool = True) -> None:
        """Save the bases that moved and the queues that went; delete the journal rows
        every queue has acknowledged (all up to ``published_seq`` when there is no queue).
        Nothing to do: no transaction."""
        queues = self.queues
        trim = min((q.base[1] for q in queues.values()), default=published_seq)
        moved = any(q.base != q.saved_base for q in queues.values() if q.saved_base)
        if not (moved or self.deleted or trim > self.trimmed):
            return
        deleted: set[str] = set()
        bases: dict[str, tuple[int, int]] = {}
        try:
            async with self.durable.db.write(background=background) as conn:
                # Read inside the transaction: a heartbeat's base saved just before must
                # not be overwritten by an older one.
                bases = {
                    queue_id: q.base
                    for queue_id, q in queues.items()
                    if q.saved_base is not None and q.base != q.saved_base
                }
                deleted, self.deleted = self.deleted, set()
                trim = min((q.base[1] for q in queues.values()), default=published_seq)
                await self.durable.save_in(conn, bases, deleted, trim)
        except Exception:
            self.deleted |= deleted
            logger.exception("could not save the event queues' progress")
            return
        self.trimmed = trim
        self._saved(bases)

    def _saved(self, bases: Mapping[str, tuple[int, int]]) -> None:
        for queue_id, base in bases.items():
            if (queue := self.queues.get(queue_id)) is not None:
                queue.saved_base = base

    def save_heartbeat(self, queue: MemoryQueue) -> None:
        """Save the queue's base, moved past a heartbeat; the queue delivers nothing
        until that has committed (``MemoryQueue.saving``)."""
        if self._batch_done is None:
            self._batch_done = asyncio.get_running_loop().create_future()
            self._spawn(self._save_heartbeats(self._batch_done))
        self._batch.add(queue.spec.queue_id)
        queue.saving = self._batch_done

    async def _save_heartbeats(self, done: asyncio.Future[None]) -> None:
        """The heartbeats of a short window share one transaction."""
        batch: set[str] = set()
        try:
            await asyncio.sleep(HEARTBEAT_BATCH_SECONDS)
            batch, self._batch, self._batch_done = self._batch, set(), None
            async with self.durable.db.write(background=True) as conn:
                bases = {
                    queue_id: q.base
                    for queue_id in batch
                    if (q := self.queues.get(queue_id)) is not None and q.saved_base is not None
                }
                await self.durable.save_in(conn, bases)
            self._saved(bases)
        except Exception:
            logger.exception("could not save the event queues' heartbeats")
        finally:
            if self._batch_done is done:
                batch, self._batch, self._batch_done = self._batch, set(), None
            for queue_id in batch:
                if (q := self.queues.get(queue_id)) is not None and q.saving is done:
                    q.saving = None
            if not done.done():
                done.set_result(None)
