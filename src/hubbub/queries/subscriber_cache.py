"""Each stream's active subscribers kept per process, read again only when they change.

A send to a stream needs its active subscribers (who get the message), and on SQLite it
reads them holding the single writer, a large part of a send's hold for the biggest
streams (bench/results/caches.md, *A stream's subscribers kept*). A process keeps what
it last read of a stream with the two counts those subscribers depend on: the stream's
subscriber changes, counted by the triggers of migration 0020, and the realm's people
version (0017: a user deactivated stops being a subscriber that counts). The send reads
both counts in the statement that reads its stream (``get_send_stream``), in its own
transaction: equal counts mean that the kept subscribers are exactly what that
transaction would read, whichever worker or command wrote last, since the database
counts every change itself.

One limit: on PostgreSQL the triggers count at the COMMIT (deferred, as 0017's), so a
transaction's own uncommitted changes of who is subscribed are not yet counted within
it. No transaction both changes a stream's subscriptions and sends to it (a send, a
scheduled message and a typing notification each have their own); one that did would
have to read the subscribers itself.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.queries.cache import VersionedCache
from hubbub.queries.streams import SubscribersVersion, get_subscriber_ids

# Streams kept at most; past it the one kept first goes, used lately or not (a realm has
# ~100 streams; many realms on one server must not grow the process without bound).
MAX_KEPT_STREAMS = 4096


class SubscriberCache:
    """Each stream's active subscribers (active users), in id order, as this process last
    read them, with their ``SubscribersVersion``."""

    def __init__(self, max_streams: int = MAX_KEPT_STREAMS) -> None:
        self._kept: VersionedCache[int, SubscribersVersion, tuple[int, ...]] = VersionedCache(
            max_streams
        )

    async def active_ids(
        self, conn: AsyncConnection, stream_id: int, version: SubscribersVersion
    ) -> tuple[int, ...]:
        """``get_subscriber_ids(conn, [stream_id])[stream_id]``, given the stream's
        ``version`` as read in ``conn``'s transaction."""

        async def read() -> tuple[int, ...]:
            return tuple((await get_subscriber_ids(conn, [stream_id]))[stream_id])

        return await self._kept.get(stream_id, version, read)
