"""Heartbeat alarms for waiting long-polls: one loop timer per tenth of a second, not per poll.

Every waiting poll must be answered with a heartbeat 45-55 s after it started waiting. A
timer each (``loop.call_later``) costs ~600 bytes per poll (the timer handle, its argument
tuple and context), which at 10,000 idle polls is 6 MB of issue 9's 100 MB budget. Polls
whose deadlines fall in the same slot share one timer instead; a poll costs one set entry.
"""

from __future__ import annotations

import asyncio
import math

# Deadlines are rounded up to this many seconds: a heartbeat is at most this late.
SLOT_SECONDS = 0.1


def wake(waiter: asyncio.Future[bool], timed_out: bool = True) -> None:
    """End a poll's wait (``timed_out``: by its heartbeat alarm)."""
    if not waiter.done():
        waiter.set_result(timed_out)


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
