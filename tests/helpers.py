"""Test helpers: an in-process API client that checks every documented success body."""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import httpx
import orjson
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.applications import Starlette

from hubbub.actions.realm_settings import do_set_realm_property
from hubbub.actions.realms import do_create_realm
from hubbub.actions.streams import StreamOptions, bulk_add_subscriptions, do_create_stream
from hubbub.actions.users import check_create_user
from hubbub.app import create_app
from hubbub.clock import Clock, FakeClock
from hubbub.db.dialects import user_message_tables
from hubbub.db.engine import Database
from hubbub.db.migrate import upgrade
from hubbub.events.bus import Notice
from hubbub.models import Realm, Role, Stream, User
from hubbub.queries.streams import get_stream_by_name
from hubbub.services import Services, build_services
from hubbub.settings import Settings
from tests import openapi

API = "/api/v1"


def encode(params: dict[str, Any] | None) -> dict[str, str]:
    """Zulip's wire format: strings raw, everything else as JSON text."""
    return {
        key: value if isinstance(value, str) else orjson.dumps(value).decode()
        for key, value in (params or {}).items()
    }


def basic_auth(email: str, api_key: str) -> str:
    return "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode()


@dataclass
class ApiClient:
    app: Starlette
    user: User | None = None
    host: str = "localhost"
    headers: dict[str, str] = field(default_factory=dict)
    # Off only for tests that deliberately look at undocumented shapes.
    check_spec: bool = True

    async def request(
        self, method: str, path: str, params: dict[str, Any] | None = None, **kwargs: Any
    ) -> httpx.Response:
        headers = {"Host": self.host, "User-Agent": "HubbubTests/1.0", **self.headers}
        if self.user is not None:
            headers.setdefault(
                "Authorization", basic_auth(self.user.delivery_email, self.user.api_key)
            )
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            if method == "GET":
                response = await http.request(
                    method, API + path, params=encode(params), headers=headers, **kwargs
                )
            else:
                response = await http.request(
                    method, API + path, data=encode(params), headers=headers, **kwargs
                )
        if self.check_spec and response.status_code == 200:
            self._check(method, path.split("?")[0], response)
        return response

    def _check(self, method: str, path: str, response: httpx.Response) -> None:
        template = openapi.find_template(path)
        if template is not None and openapi.documented(method, template):
            openapi.validate(method, template, 200, response.json())

    async def get(self, path: str, params: dict[str, Any] | None = None) -> httpx.Response:
        return await self.request("GET", path, params)

    async def post(self, path: str, params: dict[str, Any] | None = None) -> httpx.Response:
        return await self.request("POST", path, params)

    async def patch(self, path: str, params: dict[str, Any] | None = None) -> httpx.Response:
        return await self.request("PATCH", path, params)

    async def delete(self, path: str, params: dict[str, Any] | None = None) -> httpx.Response:
        return await self.request("DELETE", path, params)


def assert_success(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert response.status_code == 200, body
    assert body["result"] == "success", body
    assert body["msg"] == ""
    return body  # type: ignore[no-any-return]


def assert_error(
    response: httpx.Response, msg: str, *, status: int = 400, code: str | None = "BAD_REQUEST"
) -> dict[str, Any]:
    body = response.json()
    assert response.status_code == status, body
    assert body["result"] == "error", body
    assert body["msg"] == msg, body
    assert body.get("code") == code, body
    return body  # type: ignore[no-any-return]


def without_id(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` without its queue-assigned ``id``, to compare with an expected shape."""
    return {k: v for k, v in event.items() if k != "id"}


@dataclass
class TestEnv:
    """A migrated database, the app, and an organization with one user of each role."""

    app: Starlette
    services: Services
    realm: Realm = None  # type: ignore[assignment]
    users: dict[str, User] = field(default_factory=dict)

    __test__ = False  # not a test class

    async def setup(self) -> None:
        now = self.services.clock.now()
        async with self.services.db.write() as conn:
            self.realm = await do_create_realm(conn, subdomain="", name="Hubbub", now=now)
        for name, role in [
            ("desdemona", Role.OWNER),
            ("iago", Role.ADMINISTRATOR),
            ("shiva", Role.MODERATOR),
            ("hamlet", Role.MEMBER),
            ("othello", Role.MEMBER),
            ("polonius", Role.GUEST),
        ]:
            self.users[name] = await self.create_user(
                f"{name}@example.com", name.title(), role=role
            )

    async def create_user(
        self,
        email: str,
        full_name: str,
        *,
        role: Role = Role.MEMBER,
        realm: Realm | None = None,
        password: str | None = None,
        bot_owner: User | None = None,
    ) -> User:
        async with self.services.write() as tx:
            return await check_create_user(
                tx,
                realm or self.realm,
                email=email,
                full_name=full_name,
                password=password,
                role=role,
                bot_type=1 if bot_owner else None,
                bot_owner_id=bot_owner.id if bot_owner else None,
                now=self.services.clock.now(),
            )

    async def create_realm(self, subdomain: str, name: str) -> Realm:
        async with self.services.db.write() as conn:
            return await do_create_realm(
                conn, subdomain=subdomain, name=name, now=self.services.clock.now()
            )

    async def subscribe(
        self,
        user: str | User,
        stream_name: str,
        *,
        invite_only: bool = False,
        is_web_public: bool = False,
        description: str = "",
    ) -> Stream:
        """Subscribe ``user`` to ``stream_name``, creating the stream (with the given
        options) if needed; events are sent as for the API."""
        if isinstance(user, str):
            user = self.users[user]
        async with self.services.write() as tx:
            target = await get_stream_by_name(tx.conn, self.realm.id, stream_name)
            if target is None:
                options = StreamOptions(invite_only=invite_only, is_web_public=is_web_public)
                target = await do_create_stream(
                    tx,
                    self.realm,
                    stream_name,
                    options,
                    description=description,
                    now=self.services.clock.now(),
                )
            await bulk_add_subscriptions(tx, self.realm, [target], [user])
        return target

    async def reload(self, user: User) -> User:
        from hubbub.queries.users import get_user_by_id

        async with self.services.db.read() as conn:
            fresh = await get_user_by_id(conn, user.realm_id, user.id)
        assert fresh is not None
        return fresh

    async def write_elsewhere(self, statement: sa.Executable) -> None:
        """``statement`` written by a connection of its own (a database handle of its own),
        as a command or another worker would write it."""
        other = Database(self.services.settings.database_url)
        try:
            async with other.write() as conn:
                await conn.execute(statement)
        finally:
            await other.dispose()

    def client(self, user: str | User | None = None, **kwargs: Any) -> ApiClient:
        if isinstance(user, str):
            user = self.users[user]
        return ApiClient(self.app, user, **kwargs)

    @property
    def fake_clock(self) -> FakeClock:
        """The services' clock, for tests whose env was built with a ``FakeClock``."""
        clock = self.services.clock
        assert isinstance(clock, FakeClock), "this env runs on the system clock"
        return clock

    def advance(self, seconds: float) -> None:
        """Move the env's fake clock on by ``seconds``."""
        self.fake_clock.advance(seconds)

    async def set_realm(self, **settings: Any) -> None:
        """``PATCH /realm`` with ``settings``, as an owner (who may change every one)."""
        assert_success(await self.client("desdemona").patch("/realm", settings))

    async def set_realm_property(self, name: str, value: Any) -> None:
        """Set one realm property through the action, past the API's checks; ``realm``
        is the updated organization afterwards."""
        async with self.services.write() as tx:
            self.realm = await do_set_realm_property(tx, self.realm, name, value)

    async def events(
        self,
        user: str | User,
        queue: dict[str, Any] | str,
        *,
        types: Collection[str] = (),
        check_spec: bool = True,
    ) -> list[dict[str, Any]]:
        """The events waiting on ``queue`` (a ``/register`` answer, or a queue id read
        from its start), fetched at once by its owner ``user``: only those of ``types``
        when given; ``check_spec=False`` for events with keys Zulip's schemas omit."""
        if isinstance(queue, str):
            queue_id, last_event_id = queue, -1
        else:
            queue_id, last_event_id = queue["queue_id"], queue["last_event_id"]
        params = {"queue_id": queue_id, "last_event_id": last_event_id, "dont_block": True}
        body = assert_success(await self.client(user, check_spec=check_spec).get("/events", params))
        events = cast(list[dict[str, Any]], body["events"])
        return [e for e in events if e["type"] in types] if types else events


def published_notices(env: TestEnv, monkeypatch: pytest.MonkeyPatch) -> list[Notice]:
    """Every notice the env's bus publishes from now on, still published: for checking
    recipients that no queue can show (a deactivated user's, say)."""
    sent: list[Notice] = []
    bus = env.services.bus
    publish = bus.publish

    async def recording(notices: list[Notice]) -> None:
        sent.extend(notices)
        await publish(notices)

    monkeypatch.setattr(bus, "publish", recording)
    return sent


REDIS_ENV = "HUBBUB_TEST_REDIS_URL"


def redis_url_or_skip() -> str:
    """The test Redis's URL, or skip the test (a Redis variant)."""
    url = os.environ.get(REDIS_ENV)
    if not url:
        pytest.skip(f"Redis variant: set {REDIS_ENV} to run it")
    return url


TEST_NAMESPACE_PREFIX = "test-"


def with_test_redis(settings: Settings) -> Settings:
    """``settings`` using the test Redis under a fresh key namespace, or skip the test;
    ``running_env`` deletes the namespace's keys when it ends."""
    namespace = f"{TEST_NAMESPACE_PREFIX}{uuid.uuid4().hex}"
    return settings.with_(redis_url=redis_url_or_skip(), redis_namespace=namespace)


async def drop_redis_namespace(url: str, namespace: str) -> int:
    """Delete every key under ``namespace:`` (a test's own), so that test runs do not
    leave their queues and counters in the shared Redis; the number deleted."""
    # Imported here: the embedded mode's tests never load redis-py.
    from hubbub.redis_connection import connect_redis

    client = connect_redis(url)
    deleted, cursor = 0, 0
    try:
        while True:
            cursor, keys = await client.scan(cursor, match=f"{namespace}:*", count=1000)
            if keys:
                deleted += await client.unlink(*keys)
            if cursor == 0:
                return deleted
    finally:
        await client.aclose()


@asynccontextmanager
async def running_env(settings: Settings, *, clock: Clock | None = None) -> AsyncIterator[TestEnv]:
    """Services as the server builds them, a migrated database and the standard users."""
    services = build_services(settings, clock=clock)
    try:
        await upgrade(services.db)
        await services.start()
        env = TestEnv(create_app(settings, services=services), services)
        await env.setup()
        yield env
    finally:
        await services.close()
        if settings.redis_url and settings.redis_namespace.startswith(TEST_NAMESPACE_PREFIX):
            await drop_redis_namespace(settings.redis_url, settings.redis_namespace)


async def add_user_message_flags(
    conn: AsyncConnection,
    bits: int,
    *,
    user_id: int | None = None,
    message_ids: list[int] | None = None,
) -> None:
    """Set ``bits`` on the user_message rows of ``user_id`` and/or ``message_ids``, in
    each table that holds them (SQLite's ``user_message`` is a view: migration 0019)."""
    for table in user_message_tables(conn):
        where = []
        if user_id is not None:
            where.append(table.c.user_profile_id == user_id)
        if message_ids is not None:
            where.append(table.c.message_id.in_(message_ids))
        await conn.execute(sa.update(table).where(*where).values(flags=table.c.flags.op("|")(bits)))
