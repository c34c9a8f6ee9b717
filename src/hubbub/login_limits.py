"""Limits on password checks, so that guessing passwords can neither starve the server
nor go on for long.

A password check runs Argon2, which is slow and takes 64 MiB on purpose. Every check
therefore runs in a worker thread, at most ``HASH_SLOTS`` at a time per process, with a
short line of waiting checks behind them; a check that finds the line full is refused
at once with a rate-limit error instead of piling up threads and memory.

Before any check, the attempt counts against the account it names (Zulip's
``authenticate_by_username`` rule: 5 attempts in 30 minutes, forgotten after a
successful login) and against the caller's address (a wider limit, for guessing across
many accounts). Both are sliding windows in the rate limiter's store, so several worker
processes share them through Redis.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from hubbub.clock import Clock
from hubbub.credentials import check_password, dummy_password_hash
from hubbub.errors import RateLimitedError
from hubbub.ratelimit import MemoryRateLimiter, RateLimiter, RedisRateLimiter

if TYPE_CHECKING:  # the Redis client is imported only by servers that use it (idle memory)
    from redis.asyncio import Redis

# One Argon2 check at a time per process: on a small machine a second one would take the
# core that answers everyone else's requests.
HASH_SLOTS = 1
# Checks that may wait for a slot; about a second of work at Argon2's default cost.
MAX_WAITING = 8
# Seconds a refused check is told to wait before trying again.
BUSY_RETRY_AFTER = 1.0


class LoginGuard:
    def __init__(self, by_account: RateLimiter, by_address: RateLimiter) -> None:
        self.by_account = by_account
        self.by_address = by_address
        self._slots = asyncio.Semaphore(HASH_SLOTS)
        self._waiting = 0

    @staticmethod
    def account_key(realm_id: int, username: str) -> str:
        return f"login-account:{realm_id}:{username.strip().lower()}"

    async def count_attempt(self, address: str, account_key: str) -> None:
        """Record a login attempt, or raise ``RateLimitedError`` if the address or the
        account has used up its attempts (the attempt is then not made)."""
        for limiter, key in (
            (self.by_address, f"login-ip:{address}"),
            (self.by_account, account_key),
        ):
            result = await limiter.hit(key)
            if not result.allowed:
                raise RateLimitedError(round(result.reset_after, 3))

    async def succeeded(self, account_key: str) -> None:
        await self.by_account.clear(account_key)

    async def password_matches(self, password: str, password_hash: str | None) -> bool:
        """Whether ``password`` is the one hashed in ``password_hash``. Without a hash (an
        account that does not exist, or has no password) a stand-in hash is checked
        instead, so that the answer takes as long either way."""
        if self._waiting >= MAX_WAITING and self._slots.locked():
            raise RateLimitedError(BUSY_RETRY_AFTER)
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        try:
            stand_in = password_hash or await asyncio.to_thread(dummy_password_hash)
            matched = await asyncio.to_thread(check_password, password, stand_in)
        finally:
            self._slots.release()
        return matched and bool(password_hash) and bool(password)


# Zulip's authenticate_by_username rule.
ACCOUNT_ATTEMPTS = 5
ACCOUNT_WINDOW_SECONDS = 1800.0
ADDRESS_WINDOW_SECONDS = 600.0


def build_login_guard(
    address_attempts: int, clock: Clock, redis: Redis | None, namespace: str
) -> LoginGuard:
    """The guard for ``address_attempts`` attempts per address in ten minutes."""
    if redis is not None:
        return LoginGuard(
            RedisRateLimiter(redis, ACCOUNT_ATTEMPTS, ACCOUNT_WINDOW_SECONDS, clock, namespace),
            RedisRateLimiter(redis, address_attempts, ADDRESS_WINDOW_SECONDS, clock, namespace),
        )
    return LoginGuard(
        MemoryRateLimiter(ACCOUNT_ATTEMPTS, ACCOUNT_WINDOW_SECONDS, clock),
        MemoryRateLimiter(address_attempts, ADDRESS_WINDOW_SECONDS, clock),
    )
