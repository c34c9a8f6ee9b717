"""Heartbeat alarms for waiting long-polls: one loop timer per tenth of a second, not per
poll; and the wake-up of polls by new events, in batches (``wake_soon``).

Every waiting poll must be answered with a heartbeat 45-55 s after it started waiting. A
timer each (``loop.call_later``) would hold a timer handle, its argument tuple and its
context for every idle client, a noticeable share of the idle-poll memory budget. Polls
whose deadlines fall in the same slot share one timer instead; a poll costs one set entry.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections import deque

# Deadlines are rounded up to this many seconds: a heartbeat is at most this late.
SLOT_SECONDS = 0.1


def wake(waiter: asyncio.Future[bool], timed_out: bool = True) -> None:
    """End a poll's wait (``timed_out``: by its heartbeat alarm)."""
    if not waiter.done():
        waiter.set_result(timed_out)


# Polls woken by new events per turn of the event loop (``wake_soon``). Small, because a
# turn's length is what every other request waits for at each of its awaits: a request
# that awaits ten times waits ten turns, and a turn that answers b woken polls also takes
# in about b re-armed ones. Under the active-user load (``bench/load.py``) large batches
# left every request waiting through long turns, and two a turn did best; a poll woken
# later also finds more events to answer at once (bench/results/long-polls.md, *Two
# polls a turn, and two frames fewer per waiting poll*).
WAKE_BATCH = 2


class _Wakeups:
    """The polls ``wake_soon`` has yet to wake on one event loop, WAKE_BATCH a turn. It
    holds no reference to its loop, the key of its entry in ``_wakeups``."""

    def __init__(self) -> None:
        self._pending: deque[asyncio.Future[bool]] = deque()
        self._scheduled = False

    def add(self, waiter: asyncio.Future[bool], loop: asyncio.AbstractEventLoop) -> None:
        self._pending.append(waiter)
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._run, loop)

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        for _ in range(min(WAKE_BATCH, len(self._pending))):
            wake(self._pending.popleft(), timed_out=False)
        if self._pending:
            loop.call_soon(self._run, loop)
        else:
            self._scheduled = False


_wakeups: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Wakeups] = (
    weakref.WeakKeyDictionary()
)


def wake_soon(waiter: asyncio.Future[bool]) -> None:
    """End a poll's wait for new events, within some turns of the loop: WAKE_BATCH polls
    a turn, in the order given. A message to a big stream wakes a poll per subscriber, and
    each woken poll's answer takes the loop's thread for a moment; woken at once, they ran
    back to back, and every request that arrived meanwhile waited for all of them
    (``bench/load.py``: every endpoint's latency rose together, with the core not full).
    In small batches, the loop takes in the requests that arrived, and runs the next step
    of those it holds, between two batches (bench/results/long-polls.md)."""
    if waiter.done():
        return
    loop = waiter.get_loop()
    wakeups = _wakeups.get(loop)
    if wakeups is None:
        wakeups = _wakeups[loop] = _Wakeups()
    wakeups.add(waiter, loop)


class Alarms:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots: dict[int, set[asyncio.Future[bool]]] = {}

    def add(self, waiter: asyncio.Future[bool], delay: float) -> int:
        """Wake ``waiter`` (as timed out) ``delay`` seconds from now; returns its slot."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # A new event loop (tests run several in turn): the old one's timers are gone.
            self._loop, self._slots = loop, {}
        slot = math.ceil((loop.time() + delay) / SLOT_SECONDS)
        waiters = self._slots.get(slot)
        if waiters is None:
            waiters = self._slots[slot] = set()
            loop.call_at(slot * SLOT_SECONDS, self._ring, slot)
        waiters.add(waiter)
        return slot

    def discard(self, waiter: asyncio.Future[bool], slot: int) -> None:
        """The poll ended before its alarm."""
        waiters = self._slots.get(slot)
        if waiters is not None:
            waiters.discard(waiter)

    def _ring(self, slot: int) -> None:
        for waiter in self._slots.pop(slot, ()):
            wake(waiter)

    def __len__(self) -> int:
        return sum(len(waiters) for waiters in self._slots.values())
