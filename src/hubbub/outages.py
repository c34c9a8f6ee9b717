"""Answers for the failures an operator's infrastructure causes, not the request.

When the database or Redis cannot be reached, or the disk is full, a request gets a JSON
error that says so, with ``Retry-After`` where waiting helps, instead of a 500 and a
traceback. Such failures come in runs (an outage lasts seconds or minutes, every request
hits it), so the log gets one line when a kind of outage starts and one when it ends,
not one per request.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
import sys

from sqlalchemy import exc as sa_exc

from hubbub.errors import ApiError

logger = logging.getLogger("hubbub.outages")

# Seconds a client is asked to wait before it tries again.
RETRY_AFTER_SECONDS = 5


class ServiceUnavailableError(ApiError):
    code = None
    http_status = 503

    def __init__(self) -> None:
        super().__init__("The server is temporarily unavailable; try again in a moment.")

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(RETRY_AFTER_SECONDS)}


class OutOfStorageError(ApiError):
    code = None
    http_status = 507

    def __init__(self) -> None:
        super().__init__("The server is out of storage space; nothing was saved.")


def _is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    orig = exc.orig if isinstance(exc, sa_exc.DBAPIError) else exc
    if isinstance(orig, sqlite3.OperationalError | sqlite3.DatabaseError):
        return getattr(orig, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or (
            "database or disk is full" in str(orig)
        )
    return False


def _redis_unreachable(exc: BaseException) -> bool:
    # Looked up, not imported: without Redis (the embedded mode) redis-py is never loaded,
    # and then no exception can be one of its.
    exceptions = sys.modules.get("redis.exceptions")
    return exceptions is not None and isinstance(
        exc, exceptions.ConnectionError | exceptions.TimeoutError
    )


def _unreachable_service(exc: BaseException) -> str | None:
    """Which service ``exc`` says cannot be reached: "database", "redis" or None."""
    if _redis_unreachable(exc):
        return "redis"
    if isinstance(exc, sa_exc.TimeoutError):
        # No pooled connection came free: the database is not answering.
        return "database"
    if isinstance(exc, sa_exc.DBAPIError):
        if exc.connection_invalidated or isinstance(exc.orig, OSError):
            return "database"
        name = type(exc.orig).__name__ if exc.orig is not None else ""
        if name in ("ConnectionDoesNotExistError", "CannotConnectNowError", "InterfaceError"):
            return "database"
        return None
    if isinstance(exc, OSError | TimeoutError):
        # Opening a connection (asyncpg raises the socket's error as it is).
        return "database"
    return None


class OutageLog:
    """Logs the start and the end of each kind of outage once."""

    def __init__(self) -> None:
        self.down: set[str] = set()

    def failed(self, kind: str, exc: BaseException) -> None:
        if kind not in self.down:
            self.down.add(kind)
            if kind == "storage":
                logger.error("storage full: %s; answering 507 until writes succeed", exc)
            else:
                logger.error("%s unreachable: %s; answering 503 until it is back", kind, exc)

    def succeeded(self) -> None:
        if self.down:
            logger.warning("%s working again", " and ".join(sorted(self.down)))
            self.down.clear()


def is_transient(exc: BaseException) -> bool:
    """Whether trying the same work again later may well succeed: a lost race on a unique
    index, an unreachable database or Redis, a full disk."""
    from hubbub.db.engine import is_unique_violation

    return is_unique_violation(exc) or _is_disk_full(exc) or _unreachable_service(exc) is not None


def outage_error(exc: BaseException, log: OutageLog) -> ApiError | None:
    """The error to answer for ``exc`` if it is an infrastructure failure, else None."""
    if _is_disk_full(exc):
        log.failed("storage", exc)
        return OutOfStorageError()
    kind = _unreachable_service(exc)
    if kind is None:
        return None
    log.failed(kind, exc)
    return ServiceUnavailableError()
