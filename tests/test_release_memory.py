"""A server gives the memory it freed back to the operating system after each timed full
collection (``memory.release_freed_memory``), so that its RSS follows what it holds."""

from __future__ import annotations

import asyncio
import gc

import pytest

import hubbub.server
from hubbub.memory import release_freed_memory
from hubbub.server import settle_memory


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_release_freed_memory_returns_free_pages_inside_the_heap() -> None:
    # 1,000-byte buffers come from malloc; one in twenty stays, so that the freed ones lie
    # between live ones and the heap's top cannot simply shrink.
    kept: list[bytearray] = []
    freed: list[bytearray] = []
    for i in range(100_000):
        (kept if i % 20 == 0 else freed).append(bytearray(1000))
    del freed
    before = rss_mb()
    assert release_freed_memory()
    after = rss_mb()
    assert before - after > 40, (before, after)  # ~90 MB were freed
    assert len(kept) == 5000


async def test_each_full_collection_releases_freed_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []

    def release() -> bool:
        calls.append(1)
        return True

    monkeypatch.setattr(hubbub.server, "release_freed_memory", release)
    thresholds = gc.get_threshold()
    collections = settle_memory(full_collection_every=0.1)
    try:
        await asyncio.sleep(0.35)
    finally:
        collections.stop()
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    assert len(calls) >= 2
