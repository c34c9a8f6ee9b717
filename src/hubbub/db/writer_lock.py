"""The lock that serializes this process's write transactions on SQLite (one writer),
with the requests' writes going before the background jobs' writes that queue beside
them.

A settle slice (``sqlite_staged.settle_staged``) or the checkpoint's held pass holds the
writer for several milliseconds; in a plain first-come lock a send that queued behind
one waited for all of it, and the slowest sends of a flood met one in most cases
(bench/results/sqlite-connections.md). Here a background write takes the writer only
when no request's
write is waiting, or once it has waited BACKGROUND_PATIENCE_SECONDS: the jobs still run
under a flood that never leaves the writer free, a little later.

The writer passes straight from its holder to the next waiter (no turn of the loop in
which a newcomer could take it first)."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

# How long a background write lets requests' writes go first. The settle runs every
# second and the checkpoint's held pass when the WAL is long: either may wait this long
# without harm; a flood that kept the writer busy past it meets them as before.
BACKGROUND_PATIENCE_SECONDS = 0.25


class _Waiter:
    __slots__ = ("future", "since")

    def __init__(self, future: asyncio.Future[None]) -> None:
        self.future = future
        self.since = time.monotonic()


class WriterLock:
    """A lock with two queues: requests' writes (first come, first served) and
    background writes, which go when no request's write waits or when the oldest has
    waited BACKGROUND_PATIENCE_SECONDS."""

    def __init__(self) -> None:
        self._held = False
        self._requests: deque[_Waiter] = deque()
        self._background: deque[_Waiter] = deque()

    def locked(self) -> bool:
        return self._held

    @asynccontextmanager
    async def held(self, *, background: bool = False) -> AsyncIterator[None]:
        await self.acquire(background=background)
        try:
            yield
        finally:
            self.release()

    async def acquire(self, *, background: bool = False) -> None:
        # Someone waits only while the writer is held: it is handed over, never left free.
        if not self._held:
            self._held = True
            return
        waiter = _Waiter(asyncio.get_running_loop().create_future())
        queue = self._background if background else self._requests
        queue.append(waiter)
        try:
            await waiter.future
        except asyncio.CancelledError:
            if waiter.future.done() and not waiter.future.cancelled():
                # The writer was handed over as the task was cancelled: pass it on.
                self.release()
            elif waiter in queue:  # A release may have dropped it already (``_next``).
                queue.remove(waiter)
            raise

    def release(self) -> None:
        if not self._held:
            raise RuntimeError("WriterLock released while not held")
        waiter = self._next()
        if waiter is None:
            self._held = False
        else:
            # Handed over: the lock stays held, now by the waiter's task.
            waiter.future.set_result(None)

    def _next(self) -> _Waiter | None:
        """The waiter that takes the writer next (its future not yet done), removed
        from its queue; None when no one waits."""
        for queue in (self._requests, self._background):
            while queue and queue[0].future.done():
                queue.popleft()  # A cancelled waiter, not yet removed by its task.
        if self._background and (
            not self._requests
            or time.monotonic() - self._background[0].since >= BACKGROUND_PATIENCE_SECONDS
        ):
            return self._background.popleft()
        if self._requests:
            return self._requests.popleft()
        return None
