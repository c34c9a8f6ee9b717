"""The server freezes what start-up built, so full garbage collections stay short."""

from __future__ import annotations

import gc
import weakref

from hubbub.server import settle_memory


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_settle_memory_collects_start_up_garbage_then_freezes_the_rest() -> None:
    garbage_a, garbage_b = Node(), Node()
    garbage_a.other, garbage_b.other = garbage_b, garbage_a  # a cycle: only gc frees it
    gone = weakref.ref(garbage_a)
    del garbage_a, garbage_b
    kept = Node()
    tracked_before = len(gc.get_objects())
    try:
        settle_memory()
        assert gone() is None  # collected before freezing, not frozen forever
        # The rest is out of the collector's sight: a full collection no longer walks it.
        assert gc.get_freeze_count() > 1000
        assert len(gc.get_objects()) < tracked_before // 10
        assert not any(obj is kept for obj in gc.get_objects())
    finally:
        gc.unfreeze()
    assert any(obj is kept for obj in gc.get_objects())
