"""The lock of SQLite's single writer (``db/writer_lock.py``): requests' writes go before
background writes queued beside them, a background write is not held off for good, and
the writer passes straight to the next waiter."""

from __future__ import annotations

import asyncio

import pytest

from hubbub.db import writer_lock
from hubbub.db.writer_lock import WriterLock


async def _take(lock: WriterLock, name: str, order: list[str], *, background: bool) -> None:
    async with lock.held(background=background):
        order.append(name)
        await asyncio.sleep(0)


async def _queue(lock: WriterLock, *waiters: tuple[str, bool]) -> list[str]:
    """Start each waiter, in turn, while the lock is held; release it; the order they
    held it in."""
    order: list[str] = []
    await lock.acquire()
    tasks = []
    for name, background in waiters:
        tasks.append(asyncio.create_task(_take(lock, name, order, background=background)))
        await asyncio.sleep(0)  # queued in this order
    lock.release()
    await asyncio.gather(*tasks)
    return order


async def test_requests_writes_go_before_background_writes_queued_earlier() -> None:
    lock = WriterLock()
    order = await _queue(
        lock, ("slice 1", True), ("send 1", False), ("slice 2", True), ("send 2", False)
    )
    assert order == ["send 1", "send 2", "slice 1", "slice 2"]
    assert not lock.locked()


async def test_a_background_write_goes_when_no_request_waits() -> None:
    lock = WriterLock()
    order = await _queue(lock, ("slice", True))
    assert order == ["slice"]
    async with lock.held(background=True):  # a free writer: taken at once
        assert lock.locked()
    assert not lock.locked()


async def test_a_background_write_that_waited_its_patience_goes_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under a flood that never leaves the writer free, the jobs still run."""
    monkeypatch.setattr(writer_lock, "BACKGROUND_PATIENCE_SECONDS", 0.02)
    lock = WriterLock()
    order: list[str] = []
    await lock.acquire()
    slice_ = asyncio.create_task(_take(lock, "slice", order, background=True))
    await asyncio.sleep(0.03)
    send = asyncio.create_task(_take(lock, "send", order, background=False))
    await asyncio.sleep(0)
    lock.release()
    await asyncio.gather(slice_, send)
    assert order == ["slice", "send"]


async def test_the_writer_passes_to_the_next_waiter_not_to_a_newcomer() -> None:
    lock = WriterLock()
    order: list[str] = []
    await lock.acquire()
    waiting = asyncio.create_task(_take(lock, "waiting", order, background=False))
    await asyncio.sleep(0)
    lock.release()
    # The waiter has not run yet; the writer is already its.
    assert lock.locked()
    newcomer = asyncio.create_task(_take(lock, "newcomer", order, background=False))
    await asyncio.gather(waiting, newcomer)
    assert order == ["waiting", "newcomer"]
    assert not lock.locked()


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    lock = WriterLock()
    order: list[str] = []
    await lock.acquire()
    cancelled = asyncio.create_task(_take(lock, "cancelled", order, background=False))
    after = asyncio.create_task(_take(lock, "after", order, background=True))
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    lock.release()
    await after
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert order == ["after"]
    assert not lock.locked()


async def test_a_waiter_cancelled_as_the_writer_reaches_it_passes_it_on() -> None:
    lock = WriterLock()
    order: list[str] = []
    await lock.acquire()
    cancelled = asyncio.create_task(_take(lock, "cancelled", order, background=False))
    after = asyncio.create_task(_take(lock, "after", order, background=False))
    await asyncio.sleep(0)
    lock.release()  # handed to the first waiter, which has not run yet
    cancelled.cancel()
    await after
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert order == ["after"]
    assert not lock.locked()


async def test_releasing_a_free_lock_is_an_error() -> None:
    with pytest.raises(RuntimeError):
        WriterLock().release()
