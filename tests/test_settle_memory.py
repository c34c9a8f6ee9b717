"""The server freezes what start-up built and runs full garbage collections on its own
clock, so they stay short and rare (``server.settle_memory``)."""

from __future__ import annotations

import asyncio
import gc
import weakref

from hubbub.server import NO_AUTOMATIC_FULL_COLLECTION, settle_memory


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref[Node]:
    """A cycle of two nodes that only the collector frees; a reference to watch it by."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def old_cycle() -> weakref.ref[Node]:
    """A cycle that became garbage in the oldest generation: only a full collection frees it."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    gc.collect(1)  # still referenced: moved on to the oldest generation
    return weakref.ref(a)


async def test_settle_memory_collects_start_up_garbage_then_freezes_the_rest() -> None:
    gone = cycle()
    kept = Node()
    tracked_before = len(gc.get_objects())
    thresholds = gc.get_threshold()
    collections = settle_memory()
    try:
        assert gone() is None  # collected before freezing, not frozen forever
        # The rest is out of the collector's sight: a full collection no longer walks it.
        assert gc.get_freeze_count() > 1000
        assert len(gc.get_objects()) < tracked_before // 10
        assert not any(obj is kept for obj in gc.get_objects())
    finally:
        collections.stop()
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    assert any(obj is kept for obj in gc.get_objects())


async def test_full_collections_run_on_the_servers_clock_only() -> None:
    thresholds = gc.get_threshold()
    collections = settle_memory(full_collection_every=0.2)
    try:
        # Python starts no full collection itself any more...
        assert gc.get_threshold()[2] == NO_AUTOMATIC_FULL_COLLECTION
        assert gc.get_threshold()[:2] == thresholds[:2]
        gone = old_cycle()
        for _ in range(3):
            gc.collect(1)
        assert gone() is not None
        # ...the timer does, again and again.
        for _ in range(2):
            await asyncio.sleep(0.3)
            assert gone() is None
            gone = old_cycle()
    finally:
        collections.stop()
        gc.unfreeze()
        gc.set_threshold(*thresholds)
