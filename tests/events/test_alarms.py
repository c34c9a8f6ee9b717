"""Heartbeat alarms: polls due in the same tenth of a second share one loop timer; polls
woken by events, a batch a turn of the loop."""

from __future__ import annotations

import asyncio
import gc
import weakref

from hubbub.events.alarms import SLOT_SECONDS, WAKE_BATCH, Alarms, wake_soon


async def test_waiters_ring_at_their_deadline_as_timed_out() -> None:
    loop = asyncio.get_running_loop()
    alarms = Alarms()
    soon: asyncio.Future[bool] = loop.create_future()
    later: asyncio.Future[bool] = loop.create_future()
    started = loop.time()
    alarms.add(soon, 0.05)
    alarms.add(later, 0.4)

    assert await soon is True
    waited = loop.time() - started
    assert 0.05 <= waited < 0.05 + SLOT_SECONDS + 0.1
    assert not later.done()

    assert await later is True
    assert loop.time() - started >= 0.4
    assert len(alarms) == 0


async def test_polls_due_together_share_one_timer() -> None:
    loop = asyncio.get_running_loop()
    alarms = Alarms()
    waiters: list[asyncio.Future[bool]] = [loop.create_future() for _ in range(1000)]
    slots = {alarms.add(waiter, 30.0) for waiter in waiters}
    # Added within a few milliseconds: one slot, or two if a slot boundary fell between.
    assert len(slots) <= 2
    assert len(alarms) == 1000
    for waiter in waiters:
        for slot in slots:
            alarms.discard(waiter, slot)
    assert len(alarms) == 0


async def test_a_discarded_waiter_is_not_woken() -> None:
    loop = asyncio.get_running_loop()
    alarms = Alarms()
    answered: asyncio.Future[bool] = loop.create_future()
    other: asyncio.Future[bool] = loop.create_future()
    slot = alarms.add(answered, 0.05)
    alarms.add(other, 0.05)
    alarms.discard(answered, slot)

    assert await other is True
    await asyncio.sleep(SLOT_SECONDS)
    assert not answered.done()
    assert len(alarms) == 0


async def test_an_already_woken_waiter_keeps_its_result() -> None:
    loop = asyncio.get_running_loop()
    alarms = Alarms()
    woken: asyncio.Future[bool] = loop.create_future()
    alarms.add(woken, 0.05)
    woken.set_result(False)  # an event arrived first
    await asyncio.sleep(0.05 + 2 * SLOT_SECONDS)
    assert woken.result() is False


async def test_polls_woken_by_events_are_woken_a_batch_a_turn_in_order() -> None:
    """``wake_soon``: WAKE_BATCH polls each turn of the loop, so that what arrived
    meanwhile (here, this test's own coroutine) runs between two batches."""
    loop = asyncio.get_running_loop()
    waiters: list[asyncio.Future[bool]] = [loop.create_future() for _ in range(2 * WAKE_BATCH + 1)]
    gone: asyncio.Future[bool] = loop.create_future()
    gone.cancel()  # a poll whose client went away: skipped
    wake_soon(gone)
    for waiter in waiters:
        wake_soon(waiter)
    wake_soon(waiters[0])  # woken twice: once
    assert not any(w.done() for w in waiters)  # nothing before the loop turns
    woken: list[list[int]] = []
    while not all(w.done() for w in waiters):
        await asyncio.sleep(0)
        woken.append([i for i, w in enumerate(waiters) if w.done()])
    batch = list(range(WAKE_BATCH))
    assert woken == [batch, list(range(2 * WAKE_BATCH)), list(range(2 * WAKE_BATCH + 1))]
    assert {w.result() for w in waiters} == {False}  # woken by events, not timed out


def test_wake_ups_keep_no_event_loop_alive() -> None:
    """A loop that woke polls can be collected once it is closed (tests run many)."""

    async def wake_one() -> None:
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        wake_soon(waiter)
        assert await waiter is False

    loop = asyncio.new_event_loop()
    loop.run_until_complete(wake_one())
    loop.close()
    gone = weakref.ref(loop)
    del loop
    gc.collect()
    assert gone() is None
