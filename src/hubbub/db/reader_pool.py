"""SQLite's read connections, kept open between read transactions.

Each read transaction used to take a connection from SQLAlchemy's pool and give it back
(``AsyncEngine.connect`` and ``AsyncConnection.close``: a greenlet call each, the pool's
events, a new ``Connection``), more of the event loop's CPU than the statements of many
such transactions. Here a connection, once opened, stays checked out of that pool and
is handed from one read transaction to the next; the pool's own bound (its size and
overflow) becomes this one's, and a transaction that finds every connection busy waits
for one to come back, as it waited for the pool (up to ``timeout`` seconds).

A connection comes back for reuse only when its transaction ended cleanly; one that was
invalidated, or is still in a transaction (a cancelled rollback), is closed through
SQLAlchemy as before and its place freed.
"""

from __future__ import annotations

import asyncio
from collections import deque

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine


class ReaderPool:
    def __init__(self, engine: AsyncEngine, limit: int, timeout: float) -> None:
        self.engine = engine
        self.limit = limit
        self.timeout = timeout
        self.idle: list[AsyncConnection] = []
        self.opened = 0  # idle and in use
        self.closed = False
        # Transactions waiting, first come first served: each is handed a connection
        # given back (or None: a place was freed, open a new one).
        self._waiters: deque[asyncio.Future[AsyncConnection | None]] = deque()

    @property
    def in_use(self) -> int:
        return self.opened - len(self.idle)

    async def take(self) -> AsyncConnection:
        """An idle connection, a new one below the bound, or the next one given back."""
        if self.idle:
            return self.idle.pop()
        if self.opened < self.limit:
            self.opened += 1
        else:
            conn = await self._wait()
            if conn is not None:
                return conn
            # Handed the place of a connection that was closed: it is counted already.
        try:
            return await self.engine.connect()
        except BaseException:
            self._forget()
            raise

    async def _wait(self) -> AsyncConnection | None:
        waiter: asyncio.Future[AsyncConnection | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(self.timeout):
                return await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                # Handed a connection (or a place) while leaving: pass it on.
                handed = waiter.result()
                if handed is None:
                    self._forget()
                else:
                    await self.give_back(handed)
            else:
                self._waiters.remove(waiter)
            raise

    def _hand(self, conn: AsyncConnection | None) -> bool:
        """Give ``conn`` (or a free place) to the first transaction waiting, if any."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return True
        return False

    def _forget(self) -> None:
        """A connection's place freed: it goes to a waiting transaction, if any."""
        if not self._hand(None):
            self.opened -= 1

    async def give_back(self, conn: AsyncConnection) -> None:
        """``conn`` after its transaction: kept if it ended cleanly, else closed."""
        if self.closed or conn.invalidated or conn.in_transaction():
            self._forget()
            await conn.__aexit__(None, None, None)  # SQLAlchemy's close, in its own task
            return
        if not self._hand(conn):
            self.idle.append(conn)

    async def close(self) -> None:
        """Close the idle connections (before the engine is disposed); those in use are
        closed as they come back."""
        self.closed = True
        idle, self.idle = self.idle, []
        for conn in idle:
            self.opened -= 1
            await conn.close()
