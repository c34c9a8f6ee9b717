"""The Redis event bus: queues and their events live in Redis, so any worker process can
serve any poll, and queues outlive every worker.

Keys (``ns`` is the namespace, ``hubbub`` by default):
- ``ns:q:<id>``: hash with the queue's spec (JSON), next event id, pruned-through id,
  last access time, poll generation, the credentials last proved on it
  (``<time>:<digest>``) and the size of the events it holds (``bytes``);
- ``ns:qe:<id>``: list of the queue's events (JSON with their ids), oldest first;
- ``ns:uq:<user_id>``: set of the user's queue ids (for delivery);
- ``ns:queues``: sorted set of queue ids scored by when they expire unless used again;
- ``ns:published:<token>``: the mark of one publish, kept for a minute.
A poll waits on a per-process wake-up, fed by one pub/sub subscription on ``ns:wake``,
whose messages name the queues woken, separated by spaces; a poll announcing itself (to
end older polls of its queue) names its queue as ``<id>@<token>``, so that it does not
wake itself.

Which calls may go twice (``redis_connection``): the pure reads go once more after a
broken connection (``read_again``); the rest change the queues and are never resent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from typing import Any

import orjson
from redis.asyncio import Redis
from redis.asyncio.client import PubSub

from hubbub.clock import Clock
from hubbub.errors import BadEventQueueIdError
from hubbub.events.alarms import Alarms, wake, wake_soon
from hubbub.events.bus import CredentialsUnproved, Notice, credentials_fresh, pruned_error
from hubbub.events.queues import (
    CREDENTIAL_RECHECK_SECONDS,
    DEFAULT_MAX_QUEUE_BYTES,
    DEFAULT_MAX_QUEUES_PER_USER,
    HEARTBEAT_JITTER_SECONDS,
    HEARTBEAT_MIN_SECONDS,
    QueueSpec,
    ShapedOnce,
    heartbeat_delay,
    queues_to_evict,
)
from hubbub.events.redis_scripts import MEMBERS, POLL, PUSH, READ_WOKEN, REMEMBER
from hubbub.redis_connection import UNREACHABLE, read_again

logger = logging.getLogger("hubbub.events")

# Seconds the mark of a publish's transaction is kept: long enough to ask for it after
# its reply was lost (``RedisEventBus._push_and_wake``).
PUBLISHED_MARK_SECONDS = 60


def _text(raw: object) -> str:
    """A reply as text: the client leaves replies as bytes."""
    return raw.decode() if isinstance(raw, bytes) else str(raw)


class RedisEventBus:
    def __init__(
        self,
        redis: Redis,
        clock: Clock,
        *,
        heartbeat_seconds: float | None = None,
        namespace: str = "hubbub",
        max_queues_per_user: int = DEFAULT_MAX_QUEUES_PER_USER,
        max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
    ) -> None:
        self.redis = redis
        self.clock = clock
        self.heartbeat_seconds = heartbeat_seconds
        self.max_queues_per_user = max_queues_per_user
        self.max_queue_bytes = max_queue_bytes
        self._alarms = Alarms()
        self.ns = namespace
        self._push = redis.register_script(PUSH)
        self._poll = redis.register_script(POLL)
        self._remember = redis.register_script(REMEMBER)
        self._read_woken = redis.register_script(READ_WOKEN)
        self._members = redis.register_script(MEMBERS)
        self._specs: dict[str, QueueSpec] = {}
        # Waiting polls of this process by queue: bare futures (see MemoryEventBus).
        self._waiters: dict[str, set[asyncio.Future[bool]]] = {}
        # What the listener read for a poll it woke: (generation, raw events), or None
        # when the queue is gone.
        self._read_for: dict[asyncio.Future[bool], tuple[int, list[bytes]] | None] = {}
        # Marks this process's announcements of its own polls (see _token).
        self._instance = secrets.token_hex(4)
        self._listener: asyncio.Task[None] | None = None
        self._pubsub: PubSub | None = None
        self._releasing = False
        self._closing = False

    async def release_polls(self) -> None:
        self._releasing = True
        for waiters in self._waiters.values():
            for waiter in waiters:
                wake(waiter, timed_out=False)

    def waiting_polls(self) -> int:
        return sum(len(waiters) for waiters in self._waiters.values())

    def _q(self, queue_id: str) -> str:
        return f"{self.ns}:q:{queue_id}"

    def _qe(self, queue_id: str) -> str:
        return f"{self.ns}:qe:{queue_id}"

    def _uq(self, user_id: int) -> str:
        return f"{self.ns}:uq:{user_id}"

    def _pq(self, realm_id: int) -> str:
        """The realm's queues registered with ``all_public_streams``."""
        return f"{self.ns}:pq:{realm_id}"

    async def start(self) -> None:
        self._pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        await self._pubsub.subscribe(f"{self.ns}:wake")
        self._listener = asyncio.create_task(self._listen(self._pubsub))

    async def _listen(self, pubsub: PubSub) -> None:
        lost = False
        # Stopped by ``close`` with this flag as well as by cancelling: on Python 3.11 a
        # cancellation that comes as redis-py finishes a write is lost (its
        # ``asyncio.wait_for`` returns the write's result instead), and the listener
        # would go on reading for ever.
        while not self._closing:
            try:
                # After a failure redis-py connects again and subscribes again on the next
                # read.
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not lost:
                    logger.error("event bus: lost the Redis subscription (%s); retrying", exc)
                    lost = True
                await asyncio.sleep(0.5)
                continue
            if lost:
                # Wake-ups published while the subscription was down reached nobody: every
                # waiting poll looks at its queue again.
                logger.warning("event bus: subscribed to Redis again")
                lost = False
                for waiters in self._waiters.values():
                    for waiter in waiters:
                        wake_soon(waiter)
            if message is None or message["type"] != "message":
                continue
            data: bytes = message["data"]
            # One message names every queue a publish touched (queue ids have no spaces),
            # or one poll announcing itself.
            held: list[tuple[str, str]] = []
            for item in data.decode().split():
                queue_id, _, token = item.partition("@")
                if queue_id in self._waiters:
                    held.append((queue_id, token))
            # One queue (a poll announcing itself, a message to one user's queue): its
            # poll reads it anyway, so reading it here too would only add a round trip
            # to every re-armed poll, made one after another by this listener.
            if len(held) > 1:
                await self._read_for_woken([queue_id for queue_id, _ in held])
            for queue_id, token in held:
                for waiter in self._waiters.get(queue_id, ()):
                    if not token or token != self._token(waiter):
                        wake_soon(waiter)

    def _token(self, waiter: asyncio.Future[bool]) -> str:
        """What names a waiting poll in its own announcement (unique while it waits)."""
        return f"{self._instance}{id(waiter):x}"

    async def _read_for_woken(self, queue_ids: list[str]) -> None:
        """Read the woken queues for their waiting polls, all in one call
        (``redis_scripts.READ_WOKEN``)."""
        keys = [f"{self.ns}:queues"]
        args: list[Any] = []
        now = self.clock.now()
        # A waiting poll has its queue's spec cached (get_events loaded it); without it
        # there is no lifespan to renew the queue by, so that poll reads for itself.
        queue_ids = [q for q in queue_ids if q in self._specs]
        for queue_id in queue_ids:
            keys += (self._q(queue_id), self._qe(queue_id))
            args += (queue_id, now + self._specs[queue_id].lifespan_seconds)
        if not queue_ids:
            return
        try:
            # A read that also renews the expiries it read: harmless twice.
            replies = await read_again(lambda: self._read_woken(keys=keys, args=args))
        except Exception:
            # Each woken poll then reads its own queue, as it would have anyway.
            logger.exception("event bus: could not read the woken queues")
            return
        for queue_id, reply in zip(queue_ids, replies, strict=True):
            read = (int(reply[0]), list(reply[1])) if reply else None
            for waiter in self._waiters.get(queue_id, ()):
                if not waiter.done():
                    self._read_for[waiter] = read

    async def close(self) -> None:
        self._closing = True
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
        for waiters in self._waiters.values():
            for waiter in waiters:
                wake(waiter, timed_out=False)
        if self._pubsub is not None:
            await self._pubsub.aclose()  # type: ignore[no-untyped-call]

    async def create_queue(self, spec: QueueSpec, now: float) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(
                self._q(spec.queue_id),
                mapping={
                    "spec": orjson.dumps(spec.to_dict()),
                    "next_id": 0,
                    "pruned": -1,
                    "generation": 0,
                },
            )
            pipe.sadd(self._uq(spec.user_id), spec.queue_id)
            pipe.smembers(self._uq(spec.user_id))
            if spec.all_public_streams:
                pipe.sadd(self._pq(spec.realm_id), spec.queue_id)
            pipe.zadd(f"{self.ns}:queues", {spec.queue_id: now + spec.lifespan_seconds})
            replies = await pipe.execute()
        self._specs[spec.queue_id] = spec
        others = [q.decode() for q in replies[2] if q.decode() != spec.queue_id]
        if len(others) >= self.max_queues_per_user:
            await self._evict(spec.user_id, others)

    async def _evict(self, user_id: int, others: list[str]) -> None:
        """Remove the user's queues beyond the bound, those used longest ago first (the
        expiry index says when each was last used: its expiry less its lifespan)."""
        specs = await self._load_specs(set(others))
        stale = [q for q in others if q not in specs]
        if stale:  # ids left in the user's set by a queue that is gone
            await self.redis.srem(self._uq(user_id), *stale)
        others = [q for q in others if q in specs]
        scores = await read_again(lambda: self._scores(others)) if others else []
        owned = [
            (q, True, float(score or 0) - specs[q].lifespan_seconds)
            for q, score in zip(others, scores, strict=True)
        ]
        for queue_id in queues_to_evict(owned, self.max_queues_per_user):
            logger.info("user %d has too many event queues; removed %s", user_id, queue_id)
            await self._remove(queue_id)

    async def _scores(self, queue_ids: list[str]) -> list[float | None]:
        """The queues' expiry times (``ns:queues``), in one round trip."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for queue_id in queue_ids:
                pipe.zscore(f"{self.ns}:queues", queue_id)
            return await pipe.execute()

    async def _remove(self, queue_id: str) -> None:
        """``delete_queue``, for a queue that may have gone meanwhile."""
        with contextlib.suppress(BadEventQueueIdError):
            await self.delete_queue(queue_id)

    async def get_queue(self, queue_id: str) -> QueueSpec | None:
        spec = self._specs.get(queue_id)
        if spec is not None:
            exists: int = await read_again(lambda: self.redis.exists(self._q(queue_id)))
            if exists:
                return spec
        raw = await read_again(lambda: self.redis.hget(self._q(queue_id), "spec"))
        if raw is None:
            self._specs.pop(queue_id, None)
            return None
        spec = QueueSpec.from_dict(orjson.loads(raw))
        self._specs[queue_id] = spec
        return spec

    async def delete_queue(self, queue_id: str) -> None:
        spec = await self.get_queue(queue_id)
        if spec is None:
            raise BadEventQueueIdError(queue_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._q(queue_id), self._qe(queue_id))
            pipe.srem(self._uq(spec.user_id), queue_id)
            pipe.srem(self._pq(spec.realm_id), queue_id)
            pipe.zrem(f"{self.ns}:queues", queue_id)
            pipe.publish(f"{self.ns}:wake", queue_id)
            await pipe.execute()
        self._specs.pop(queue_id, None)

    async def publish(self, notices: list[Notice]) -> None:
        user_ids = sorted({u for notice in notices for u in notice.user_ids})
        public_realms = sorted({n.realm_id for n in notices if n.public_stream_except is not None})
        if not user_ids and not public_realms:
            return
        sets = [self._uq(u) for u in user_ids] + [self._pq(r) for r in public_realms]
        memberships = await read_again(lambda: self._members(keys=sets))
        queues_of = {
            user_id: [q.decode() for q in members]
            for user_id, members in zip(user_ids, memberships[: len(user_ids)], strict=True)
        }
        public_of = {
            realm_id: [q.decode() for q in members]
            for realm_id, members in zip(public_realms, memberships[len(user_ids) :], strict=True)
        }
        specs = await self._load_specs(
            {q for queues in (*queues_of.values(), *public_of.values()) for q in queues}
        )
        # One script call per notice (keys and bodies for ``redis_scripts.PUSH``). A queue
        # deleted meanwhile makes its push a no-op (the script checks).
        pushes: list[tuple[list[str], list[str | int]]] = []
        woken: set[str] = set()
        for notice in notices:
            targets = [q for u in notice.user_ids for q in queues_of.get(u, ())]
            if notice.public_stream_except is not None:
                targets += [
                    q
                    for q in public_of.get(notice.realm_id, ())
                    if q in specs and specs[q].user_id not in notice.public_stream_except
                ]
            keys: list[str] = []
            bodies: list[str | int] = [self.max_queue_bytes]
            shapes = ShapedOnce(notice.event)
            for queue_id in targets:
                spec = specs.get(queue_id)
                body = shapes.json(spec) if spec is not None else None
                if body is None:
                    continue
                keys += (self._q(queue_id), self._qe(queue_id))
                bodies.append(body)
                woken.add(queue_id)
            if keys:
                pushes.append((keys, bodies))
        if woken:
            over = await self._push_and_wake(pushes, sorted(woken))
            await self._drop_overfull(over)

    async def _push_and_wake(
        self, pushes: list[tuple[list[str], list[str | int]]], woken: list[str]
    ) -> list[bytes]:
        """Run the pushes and one wake-up message naming every woken queue, in one round
        trip; the hashes of the queues found too full.

        Never sent twice, yet not given up when only its reply was lost: it runs as one
        transaction that also sets a mark of its own, so whether Redis ran it is known by
        asking for the mark on a fresh connection. If it ran, the events are delivered
        (the queues it found too full then wait for the next push to report them again);
        if not, the error goes to the caller (``Services.publish_committed`` keeps the
        events in the outbox, to be published once Redis answers)."""
        mark = f"{self.ns}:published:{secrets.token_hex(8)}"
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(mark, 1, ex=PUBLISHED_MARK_SECONDS)
            for keys, bodies in pushes:
                # Sent whole (EVAL, which Redis looks up by its SHA-1 and compiles once):
                # redis-py would otherwise first check that the pipeline's scripts are
                # loaded, a round trip more per publish.
                pipe.eval(PUSH, len(keys), *keys, *bodies)
            pipe.publish(f"{self.ns}:wake", " ".join(woken))
            try:
                replies = await pipe.execute()
            except UNREACHABLE:
                ran: int = await read_again(lambda: self.redis.exists(mark))
                if ran:
                    logger.warning("event bus: a publish's reply was lost; Redis had run it")
                    return []
                raise
        return [key for reply in replies[1:-1] for key in reply]

    async def _drop_overfull(self, hashes: list[bytes]) -> None:
        """Remove the queues a push found too full (``redis_scripts.PUSH``): their clients
        stopped collecting events long ago; if they come back, BAD_EVENT_QUEUE_ID has them
        register again."""
        prefix = len(self._q(""))
        for queue_id in sorted({key.decode()[prefix:] for key in hashes}):
            logger.info(
                "event queue %s held over %d bytes; removed", queue_id, self.max_queue_bytes
            )
            await self._remove(queue_id)

    async def remember_credentials(self, queue_id: str, digest: str, now: float) -> None:
        await self._remember(keys=[self._q(queue_id)], args=[f"{now!r}:{digest}"])

    async def vouching_owner(self, queue_id: str, digest: str, now: float) -> int | None:
        # The credentials are checked by the poll's own script call (``redis_scripts.POLL``), which
        # spares every re-armed poll a round trip; here only the queue's owner, from this
        # process's cache of specs.
        spec = self._specs.get(queue_id) or await self.get_queue(queue_id)
        return None if spec is None else spec.user_id

    async def vouches_for(self, queue_id: str, digest: str, now: float) -> bool:
        raw = await read_again(lambda: self.redis.hget(self._q(queue_id), "cred"))
        if raw is None:
            return False
        verified_at, _, stored = _text(raw).partition(":")
        return credentials_fresh(stored, float(verified_at), digest, now)

    async def forget_credentials(self, user_ids: list[int]) -> None:
        sets = [self._uq(u) for u in user_ids]
        memberships = await read_again(lambda: self._members(keys=sets))
        queue_ids = sorted({q.decode() for members in memberships for q in members})
        if queue_ids:
            async with self.redis.pipeline(transaction=False) as pipe:
                for queue_id in queue_ids:
                    pipe.hdel(self._q(queue_id), "cred")
                await pipe.execute()

    async def _load_specs(self, queue_ids: set[str]) -> dict[str, QueueSpec]:
        """Specs of the given queues, from this process's cache or in one round trip."""
        missing = sorted(q for q in queue_ids if q not in self._specs)
        if missing:
            raws = await read_again(lambda: self._raw_specs(missing))
            for queue_id, raw in zip(missing, raws, strict=True):
                if raw is not None:
                    self._specs[queue_id] = QueueSpec.from_dict(orjson.loads(raw))
        return {q: self._specs[q] for q in queue_ids if q in self._specs}

    async def _raw_specs(self, queue_ids: list[str]) -> list[bytes | None]:
        async with self.redis.pipeline(transaction=False) as pipe:
            for queue_id in queue_ids:
                pipe.hget(self._q(queue_id), "spec")
            return await pipe.execute()

    async def _events(self, queue_id: str) -> list[dict[str, Any]]:
        raws = await read_again(lambda: self.redis.lrange(self._qe(queue_id), 0, -1))
        return [orjson.loads(raw) for raw in raws]

    async def get_events(
        self,
        queue_id: str,
        last_event_id: int | None,
        *,
        block: bool,
        now: float,
        credential: str | None = None,
    ) -> list[dict[str, Any]]:
        key = self._q(queue_id)
        spec = self._specs.get(queue_id) or await self.get_queue(queue_id)
        if spec is None:
            if credential is not None:
                raise CredentialsUnproved()  # who asks comes first, then which queue
            raise BadEventQueueIdError(queue_id)
        # While polled, a queue cannot expire; should this worker die mid-poll, it expires
        # a lifespan after the poll would have ended.
        poll_allowance = HEARTBEAT_MIN_SECONDS + HEARTBEAT_JITTER_SECONDS if block else 0.0
        expires = now + spec.lifespan_seconds + poll_allowance
        waiter: asyncio.Future[bool] | None = None
        if block and not self._releasing:
            # The wake-up is registered before the read, so none that comes while the
            # read is on its way is lost.
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(queue_id, set()).add(waiter)
        waiting = False
        try:
            reply = await self._poll(
                keys=[key, self._qe(queue_id), f"{self.ns}:queues"],
                args=[
                    "" if last_event_id is None else last_event_id,
                    expires,
                    queue_id,
                    "" if waiter is None else f"{self.ns}:wake",
                    "" if waiter is None else f"{queue_id}@{self._token(waiter)}",
                    "" if credential is None else credential,
                    now - CREDENTIAL_RECHECK_SECONDS,
                ],
            )
            status = int(reply[0])
            if status == -3:
                raise CredentialsUnproved()
            if status == -2:
                self._specs.pop(queue_id, None)
                raise BadEventQueueIdError(queue_id)
            if status == -1:
                raise pruned_error(last_event_id if last_event_id is not None else -1)
            generation, raws = int(reply[1]), reply[2]
            if raws or waiter is None:
                return [orjson.loads(raw) for raw in raws]
            waiting = True
        finally:
            if waiter is not None and not waiting:
                self._forget_waiter(queue_id, waiter)
        return await self._wait(queue_id, spec, waiter, generation)

    def _forget_waiter(self, queue_id: str, waiter: asyncio.Future[bool]) -> None:
        waiters = self._waiters.get(queue_id)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiters[queue_id]
        self._read_for.pop(waiter, None)

    async def _wait(
        self, queue_id: str, spec: QueueSpec, waiter: asyncio.Future[bool], generation: int
    ) -> list[dict[str, Any]]:
        """Wait for the queue's events as poll ``generation``, which found none."""
        key = self._q(queue_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._heartbeat_delay()
        renewed = False
        try:
            while True:
                # Only a woken poll looks again: its waiter was registered before the
                # last read, so nothing has come since unless it was woken.
                if waiter.done():
                    # Woken, with the queue read by the listener (if it could): events
                    # there are the answer, unless a newer poll has taken over. A read
                    # made before this poll took its generation says nothing; otherwise a
                    # fresh wake-up before looking again, so none is missed.
                    if waiter in self._read_for:
                        read = self._read_for.pop(waiter)
                        if read is None or read[0] > generation or self._releasing:
                            return []
                        if read[0] == generation and read[1]:
                            renewed = True  # the listener renewed the expiry
                            return [orjson.loads(raw) for raw in read[1]]
                    self._forget_waiter(queue_id, waiter)
                    waiter = loop.create_future()
                    self._waiters.setdefault(queue_id, set()).add(waiter)
                    raws, current = await read_again(lambda: self._events_and_generation(queue_id))
                    if current is None:
                        return []  # deleted meanwhile
                    if int(current) != generation or self._releasing:
                        return []
                    if raws:
                        return [orjson.loads(raw) for raw in raws]
                remaining = deadline - loop.time()
                if remaining <= 0:
                    over = await self._push(
                        keys=[key, self._qe(queue_id)],
                        args=[self.max_queue_bytes, orjson.dumps({"type": "heartbeat"}).decode()],
                    )
                    if over:
                        await self._drop_overfull(over)
                        return []
                    return await self._events(queue_id)
                slot = self._alarms.add(waiter, remaining)
                try:
                    await waiter
                finally:
                    self._alarms.discard(waiter, slot)
        finally:
            self._forget_waiter(queue_id, waiter)
            if not renewed:
                await self.redis.zadd(
                    f"{self.ns}:queues",
                    {queue_id: self.clock.now() + spec.lifespan_seconds},
                    xx=True,
                )

    async def _events_and_generation(self, queue_id: str) -> list[Any]:
        """The queue's raw events and its poll generation (None: the queue is gone)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.lrange(self._qe(queue_id), 0, -1)
            pipe.hget(self._q(queue_id), "generation")
            return await pipe.execute()

    def _heartbeat_delay(self) -> float:
        if self.heartbeat_seconds is not None:
            return self.heartbeat_seconds
        return heartbeat_delay()

    async def expire_queues(self, now: float) -> int:
        """Remove queues whose expiry time has passed (see ``ns:queues``)."""
        expired = 0
        index = f"{self.ns}:queues"
        due = await read_again(lambda: self.redis.zrangebyscore(index, "-inf", now))
        for raw in due:
            queue_id = _text(raw)
            # Remove from the index first: only the worker that wins this deletes the queue.
            if await self.redis.zrem(index, queue_id):
                with contextlib.suppress(BadEventQueueIdError):
                    await self.delete_queue(queue_id)
                    expired += 1
        return expired
