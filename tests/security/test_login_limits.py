"""Password logins: limits per account and per address, hashing off the event loop with
bounded concurrency, and answers that do not tell which accounts exist."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

import hubbub.login_limits
from hubbub.clock import FakeClock
from hubbub.credentials import check_password
from hubbub.login_limits import HASH_SLOTS, MAX_WAITING
from hubbub.settings import Settings
from tests.helpers import TestEnv, assert_error, assert_success, running_env, with_test_redis

WRONG = "Your username or password is incorrect"


@pytest.fixture(params=["memory", "redis"])
async def login_env(
    request: pytest.FixtureRequest, settings: Settings
) -> AsyncIterator[tuple[TestEnv, FakeClock]]:
    clock = FakeClock()
    if request.param == "redis":
        settings = with_test_redis(settings)
    async with running_env(settings.with_(login_attempts_per_address=12), clock=clock) as env:
        yield env, clock


class HashProbe:
    """Counts the password checks the guard makes, and how many run at once."""

    def __init__(self, real: Callable[[str, str | None], bool]) -> None:
        self.real = real
        self.lock = threading.Lock()
        self.calls = 0
        self.running = 0
        self.most_at_once = 0
        self.threads: set[int] = set()

    def __call__(self, password: str, password_hash: str | None) -> bool:
        with self.lock:
            self.calls += 1
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            self.threads.add(threading.get_ident())
        try:
            return self.real(password, password_hash)
        finally:
            with self.lock:
                self.running -= 1


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> HashProbe:
    found = HashProbe(check_password)
    monkeypatch.setattr(hubbub.login_limits, "check_password", found)
    return found


def _login(username: str, password: str) -> dict[str, str]:
    return {"username": username, "password": password}


def assert_wrong(response: httpx.Response) -> None:
    assert_error(response, WRONG, status=401, code="AUTHENTICATION_FAILED")


async def test_an_account_gets_five_attempts_in_thirty_minutes(
    login_env: tuple[TestEnv, FakeClock],
) -> None:
    env, clock = login_env
    await env.create_user("pw@example.com", "Pass Word", password="correct horse")
    client = env.client()
    for _ in range(5):
        assert_wrong(await client.post("/fetch_api_key", _login("pw@example.com", "wrong")))
    # The sixth attempt is refused before the password is looked at, right or not.
    body = assert_error(
        await client.post("/fetch_api_key", _login("PW@example.com", "correct horse")),
        "API usage exceeded rate limit",
        status=429,
        code="RATE_LIMIT_HIT",
    )
    assert 0 < body["retry-after"] <= 1800
    clock.advance(1801)
    assert_success(await client.post("/fetch_api_key", _login("pw@example.com", "correct horse")))


async def test_a_successful_login_forgets_the_failed_ones(
    login_env: tuple[TestEnv, FakeClock],
) -> None:
    env, _ = login_env
    await env.create_user("pw@example.com", "Pass Word", password="correct horse")
    client = env.client()
    for _ in range(2):
        for _ in range(4):
            assert_wrong(await client.post("/fetch_api_key", _login("pw@example.com", "x")))
        assert_success(
            await client.post("/fetch_api_key", _login("pw@example.com", "correct horse"))
        )


async def test_an_address_gets_a_limited_number_of_attempts(
    login_env: tuple[TestEnv, FakeClock], probe: HashProbe
) -> None:
    env, clock = login_env
    client = env.client()
    # Guessing across many accounts: each account is fresh, the address is not.
    for n in range(12):
        assert_wrong(await client.post("/fetch_api_key", _login(f"u{n}@example.com", "x")))
    assert_error(
        await client.post("/fetch_api_key", _login("u99@example.com", "x")),
        "API usage exceeded rate limit",
        status=429,
        code="RATE_LIMIT_HIT",
    )
    assert probe.calls == 12
    clock.advance(601)
    assert_wrong(await client.post("/fetch_api_key", _login("u99@example.com", "x")))


async def test_password_checks_run_in_threads_a_few_at_a_time(
    settings: Settings, probe: HashProbe
) -> None:
    async with running_env(settings.with_(login_attempts_per_address=1000)) as env:
        client = env.client()
        flood = 4 * (HASH_SLOTS + MAX_WAITING)
        responses = await asyncio.gather(
            *(
                client.post("/fetch_api_key", _login(f"u{n}@example.com", "wrong"))
                for n in range(flood)
            )
        )
        statuses = sorted(r.status_code for r in responses)
        # Those beyond the slots and the short line behind them are refused at once.
        refused = [r for r in responses if r.status_code == 429]
        assert refused and statuses.count(401) <= flood - len(refused)
        assert all(r.json()["code"] == "RATE_LIMIT_HIT" for r in refused)
        assert len(refused) >= flood - (HASH_SLOTS + MAX_WAITING) * 2
        assert probe.most_at_once <= HASH_SLOTS
        assert threading.get_ident() not in probe.threads
        # The server still answers everyone else.
        assert_success(await client.get("/server_settings"))


async def test_unknown_and_wrong_look_the_same(
    login_env: tuple[TestEnv, FakeClock], probe: HashProbe
) -> None:
    env, _ = login_env
    await env.create_user("pw@example.com", "Pass Word", password="correct horse")
    client = env.client()
    unknown = await client.post("/fetch_api_key", _login("nobody@example.com", "guess"))
    wrong = await client.post("/fetch_api_key", _login("pw@example.com", "guess"))
    assert unknown.status_code == wrong.status_code == 401
    assert unknown.json() == wrong.json()
    # Both checked one password hash: the same work, so the same time.
    assert probe.calls == 2


async def test_account_states_are_told_only_for_the_right_password(
    login_env: tuple[TestEnv, FakeClock], probe: HashProbe
) -> None:
    env, _ = login_env
    user = await env.create_user("pw@example.com", "Pass Word", password="correct horse")
    assert_success(await env.client("iago").delete(f"/users/{user.id}"))
    zephyr = await env.create_realm("zephyr", "Zephyr")
    await env.create_user("zoe@zephyr.example", "Zoe", realm=zephyr, password="zoe-password")
    client = env.client()
    for username in ("pw@example.com", "zoe@zephyr.example"):
        assert_error(
            await client.post("/fetch_api_key", _login(username, "guess")),
            WRONG,
            status=401,
            code="AUTHENTICATION_FAILED",
        )
    assert_error(
        await client.post("/fetch_api_key", _login("pw@example.com", "correct horse")),
        "Account is deactivated",
        status=401,
        code="USER_DEACTIVATED",
    )
    assert_error(
        await client.post("/fetch_api_key", _login("zoe@zephyr.example", "zoe-password")),
        "Invalid subdomain",
        status=404,
        code="NONEXISTENT_SUBDOMAIN",
    )
    assert probe.calls == 4


async def test_the_old_password_of_a_change_is_limited_too(
    login_env: tuple[TestEnv, FakeClock],
) -> None:
    env, _ = login_env
    user = await env.create_user("pw@example.com", "Pass Word", password="correct horse")
    client = env.client(user)
    change = {"old_password": "guess", "new_password": "a new long passphrase"}
    for _ in range(5):
        assert_error(await client.patch("/settings", change), "Wrong password!")
    assert_error(
        await client.patch("/settings", change),
        "API usage exceeded rate limit",
        status=429,
        code="RATE_LIMIT_HIT",
    )
