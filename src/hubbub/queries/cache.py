"""Values a process keeps with the version the database gave them, read again only when
the version a caller reads in its own transaction differs (``PeopleCache``,
``SubscriberCache``: the versions are counts that triggers raise, so no writer can
forget them)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Hashable)
T = TypeVar("T")


class VersionedCache(Generic[K, V, T]):
    """One value per key, with its version; at most ``limit`` keys (None: no bound), past
    which the key kept first goes, used lately or not."""

    def __init__(self, limit: int | None = None) -> None:
        self._held: dict[K, tuple[V, T]] = {}
        self._limit = limit

    async def get(self, key: K, version: V, read: Callable[[], Awaitable[T]]) -> T:
        """The value kept for ``key`` at ``version``, or ``read()``'s, then kept."""
        kept = self._held.get(key)
        if kept is not None and kept[0] == version:
            return kept[1]
        value = await read()
        self._held.pop(key, None)
        if self._limit is not None and len(self._held) >= self._limit:
            del self._held[next(iter(self._held))]
        self._held[key] = (version, value)
        return value
