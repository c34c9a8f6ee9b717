"""The event bus: queues and delivery, behind one interface with two implementations.

``MemoryEventBus`` (here) serves one process and saves its queues to a file on a clean
shutdown, so clients need not re-register after a restart (Zulip does the same).
``RedisEventBus`` (``redis_bus.py``) keeps queues in Redis so any worker serves any poll.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from hubbub.clock import Clock
from hubbub.errors import BadEventQueueIdError, JsonableError
from hubbub.events.alarms import Alarms, wake_soon
from hubbub.events.queues import (
    CREDENTIAL_RECHECK_SECONDS,
    DEFAULT_MAX_QUEUE_BYTES,
    DEFAULT_MAX_QUEUES_PER_USER,
    QueueSpec,
    ShapedOnce,
    heartbeat_delay,
    queues_to_evict,
)

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


@dataclass
class _MemoryQueue:
    spec: QueueSpec
    last_access: float
    next_id: int = 0
    events: deque[dict[str, Any]] = field(default_factory=deque)
    # Highest event id removed because a client acknowledged it.
    pruned_through: int = -1
    # The currently connected poll, woken by new events or by a newer poll: a bare future
    # (its result says whether the heartbeat timer fired), the lightest thing to wait on,
    # since thousands of idle polls each hold one.
    waiter: asyncio.Future[bool] | None = None
    poll_generation: int = 0
    # Digest of the credentials last proved on this queue, and when (never saved to disk).
    credential: str | None = None
    verified_at: float = 0.0
    # The size of each event held (its JSON), and their sum: what the queue holds.
    sizes: deque[int] = field(default_factory=deque)
    held_bytes: int = 0

    def push(self, event: dict[str, Any], size: int) -> None:
        self.events.append({**event, "id": self.next_id})
        self.sizes.append(size)
        self.held_bytes += size
        self.next_id += 1
        self.wake()

    def wake(self) -> None:
        if self.waiter is not None:
            wake_soon(self.waiter)

    def prune(self, last_event_id: int) -> None:
        while self.events and self.events[0]["id"] <= last_event_id:
            self.events.popleft()
            self.held_bytes -= self.sizes.popleft()
        self.pruned_through = max(self.pruned_through, last_event_id)


class MemoryEventBus:
    def __init__(
        self,
        clock: Clock,
        *,
        state_file: Path | None = None,
        heartbeat_seconds: float | None = None,
        max_queues_per_user: int = DEFAULT_MAX_QUEUES_PER_USER,
        max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
    ) -> None:
        self.clock = clock
        self.state_file = state_file
        self.heartbeat_seconds = heartbeat_seconds
        self.max_queues_per_user = max_queues_per_user
        self.max_queue_bytes = max_queue_bytes
        self._alarms = Alarms()
        self._queues: dict[str, _MemoryQueue] = {}
        self._by_user: dict[int, set[str]] = {}
        # realm id -> its queues registered with ``all_public_streams``.
        self._public: dict[int, set[str]] = {}
        # Only a started bus (a server) saves queues: a command-line process that merely
        # shares the data directory must not overwrite the server's saved queues.
        self._started = False
        self._releasing = False

    def waiting_polls(self) -> int:
        return sum(queue.waiter is not None for queue in self._queues.values())

    async def release_polls(self) -> None:
        self._releasing = True
        for queue in self._queues.values():
            queue.wake()

    async def start(self) -> None:
        self._started = True
        if self.state_file is None or not self.state_file.exists():
            return
        try:
            saved = orjson.loads(self.state_file.read_bytes())
            for item in saved:
                sizes = deque(len(orjson.dumps(event)) for event in item["events"])
                queue = _MemoryQueue(
                    QueueSpec.from_dict(item["spec"]),
                    item["last_access"],
                    next_id=item["next_id"],
                    events=deque(item["events"]),
                    pruned_through=item["pruned_through"],
                    sizes=sizes,
                    held_bytes=sum(sizes),
                )
                self._add(queue)
            logger.info("restored %d event queues from %s", len(saved), self.state_file)
        except (OSError, ValueError, KeyError, TypeError):
            logger.exception("could not restore event queues from %s", self.state_file)
        self.state_file.unlink(missing_ok=True)

    async def close(self) -> None:
        for queue in self._queues.values():
            queue.wake()
        if self.state_file is None or not self._started:
            return
        saved = [
            {
                "spec": q.spec.to_dict(),
                "last_access": q.last_access,
                "next_id": q.next_id,
                "events": list(q.events),
                "pruned_through": q.pruned_through,
            }
            for q in self._queues.values()
        ]
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.state_file.with_suffix(".tmp")
        temporary.unlink(missing_ok=True)
        # Created readable by the server's user only: the queues hold private messages.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(orjson.dumps(saved))
        temporary.replace(self.state_file)

    def _add(self, queue: _MemoryQueue) -> None:
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
        self._add(_MemoryQueue(spec, now))

    async def get_queue(self, queue_id: str) -> QueueSpec | None:
        queue = self._queues.get(queue_id)
        return None if queue is None else queue.spec

    async def delete_queue(self, queue_id: str) -> None:
        queue = self._queues.pop(queue_id, None)
        if queue is None:
            raise BadEventQueueIdError(queue_id)
        self._by_user.get(queue.spec.user_id, set()).discard(queue_id)
        self._public.get(queue.spec.realm_id, set()).discard(queue_id)
        queue.wake()

    async def publish(self, notices: list[Notice]) -> None:
        for notice in notices:
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
                shaped = shapes.shape(queue.spec)
                if shaped is None:
                    continue
                size = len(shapes.json(queue.spec) or "")
                if queue.held_bytes + size > self.max_queue_bytes:
                    self._drop_overfull(queue)
                    continue
                queue.push(shaped, size)

    def _drop_overfull(self, queue: _MemoryQueue) -> None:
        """A queue whose client has not collected its events for so long that they pass
        the bound goes; the client's next poll gets BAD_EVENT_QUEUE_ID and registers
        again, as it does after an idle queue expired."""
        queue_id = queue.spec.queue_id
        logger.info("event queue %s held over %d bytes; removed", queue_id, self.max_queue_bytes)
        self._queues.pop(queue_id, None)
        self._by_user.get(queue.spec.user_id, set()).discard(queue_id)
        self._public.get(queue.spec.realm_id, set()).discard(queue_id)
        queue.wake()

    async def remember_credentials(self, queue_id: str, digest: str, now: float) -> None:
        queue = self._queues.get(queue_id)
        if queue is not None:
            queue.credential, queue.verified_at = digest, now

    async def vouching_owner(self, queue_id: str, digest: str, now: float) -> int | None:
        # In-process, the check costs nothing: made here, before anything else.
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
            return list(queue.events)
        # A newer poll on the same queue ends this one.
        queue.poll_generation += 1
        generation = queue.poll_generation
        queue.wake()
        loop = asyncio.get_running_loop()
        waiter = queue.waiter = loop.create_future()
        slot = self._alarms.add(waiter, self._heartbeat_delay())
        try:
            if await waiter:
                queue.push({"type": "heartbeat"}, len(HEARTBEAT_JSON))
        finally:
            self._alarms.discard(waiter, slot)
            if queue.waiter is waiter:
                queue.waiter = None
            queue.last_access = self.clock.now()
        if queue.poll_generation != generation or self._queues.get(queue_id) is not queue:
            return []
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
