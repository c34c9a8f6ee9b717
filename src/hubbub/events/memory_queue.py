"""One client's event queue as the in-memory bus holds it (``bus.py``)."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import orjson

from hubbub.events.alarms import wake_soon
from hubbub.events.queues import QueueSpec


@dataclass
class MemoryQueue:
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
    # The size of each event held (its JSON) and the journal seq it came from; the sizes'
    # sum: what the queue holds.
    marks: deque[tuple[int, int]] = field(default_factory=deque)
    held_bytes: int = 0
    # Durable queues: the events after id base[0] are the journal's after seq base[1]
    # (``durable_queues.py``), here and as saved; a heartbeat's base being saved.
    base: tuple[int, int] = (-1, 0)
    saved_base: tuple[int, int] | None = None
    saving: asyncio.Future[None] | None = None

    def push(self, event: dict[str, Any], size: int, seq: int = 0) -> None:
        self.events.append({**event, "id": self.next_id})
        self.marks.append((size, seq))
        self.held_bytes += size
        self.next_id += 1
        self.wake()

    def wake(self) -> None:
        if self.waiter is not None:
            wake_soon(self.waiter)

    def prune(self, last_event_id: int) -> None:
        while self.events and self.events[0]["id"] <= last_event_id:
            event_id = self.events.popleft()["id"]
            size, seq = self.marks.popleft()
            self.held_bytes -= size
            self.base = (event_id, seq)
        self.pruned_through = max(self.pruned_through, last_event_id)


def queue_from_file(item: dict[str, Any]) -> MemoryQueue:
    """A queue as an older version's shutdown file (``queue_file.py``) holds it."""
    events = deque(item["events"])
    sizes = [len(orjson.dumps(event)) for event in events]
    return MemoryQueue(
        QueueSpec.from_dict(item["spec"]),
        item["last_access"],
        next_id=item["next_id"],
        events=events,
        pruned_through=item["pruned_through"],
        marks=deque((size, 0) for size in sizes),
        held_bytes=sum(sizes),
    )


def queue_to_file(queue: MemoryQueue) -> dict[str, Any]:
    return {
        "spec": queue.spec.to_dict(),
        "last_access": queue.last_access,
        "next_id": queue.next_id,
        "events": list(queue.events),
        "pruned_through": queue.pruned_through,
    }
