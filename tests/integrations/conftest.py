"""Fixtures for the incoming-webhook tests: an incoming-webhook bot owned by hamlet, and a
channel "dev" that hamlet reads."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest

from hubbub.actions.users import check_create_user
from hubbub.clock import FakeClock
from hubbub.models import BotType, Stream, User
from hubbub.settings import Settings
from tests.helpers import API, TestEnv, assert_success, running_env


@dataclass
class Hook:
    env: TestEnv
    bot: User
    owner: User
    stream: Stream

    async def post(
        self,
        integration: str,
        body: bytes | str | dict[str, Any] | None,
        *,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
        method: str = "POST",
        api_key: str | None = "bot",
        form: dict[str, str] | None = None,
    ) -> httpx.Response:
        """Post ``body`` (JSON) to the integration's URL, with the bot's key in the query
        string unless ``api_key`` says otherwise (None: no key)."""
        query = dict(params or {})
        if api_key == "bot":
            query["api_key"] = self.bot.api_key
        elif api_key is not None:
            query["api_key"] = api_key
        sent_headers = {"Host": "localhost", "User-Agent": "GitHub-Hookshot/abc123"}
        sent_headers.update(headers or {})
        content: bytes | None
        if isinstance(body, dict):
            content = orjson.dumps(body)
        elif isinstance(body, str):
            content = body.encode()
        else:
            content = body
        if content is not None and form is None:
            sent_headers.setdefault("Content-Type", "application/json")
        transport = httpx.ASGITransport(app=self.env.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            return await http.request(
                method,
                f"{API}/external/{integration}",
                params=query,
                content=None if form is not None else content,
                data=form,
                headers=sent_headers,
            )

    async def latest(self, user: User | None = None) -> dict[str, Any]:
        """The newest message ``user`` (default: the owner) can see, as raw Markdown."""
        client = self.env.client(user or self.owner)
        body = assert_success(
            await client.get(
                "/messages",
                {"anchor": "newest", "num_before": 1, "num_after": 0, "apply_markdown": False},
            )
        )
        assert body["messages"], "no message was posted"
        message: dict[str, Any] = body["messages"][-1]
        return message

    async def message_count(self) -> int:
        client = self.env.client(self.owner)
        body = assert_success(
            await client.get("/messages", {"anchor": "newest", "num_before": 100, "num_after": 0})
        )
        return len(body["messages"])


async def make_hook(env: TestEnv, email: str = "github-bot@example.com") -> Hook:
    """An incoming-webhook bot owned by hamlet, and the channel "dev" hamlet reads."""
    owner = env.users["hamlet"]
    async with env.services.write() as tx:
        bot = await check_create_user(
            tx,
            env.realm,
            email=email,
            full_name="GitHub Bot",
            password=None,
            bot_type=BotType.INCOMING_WEBHOOK,
            bot_owner_id=owner.id,
            now=env.services.clock.now(),
        )
    stream = await env.subscribe("hamlet", "dev")
    return Hook(env, bot, owner, stream)


@pytest.fixture
async def hook(env: TestEnv) -> Hook:
    return await make_hook(env)


@pytest.fixture
async def clocked_hook(settings: Settings) -> AsyncIterator[tuple[Hook, FakeClock]]:
    """``hook`` on a server whose clock the test moves."""
    clock = FakeClock()
    async with running_env(settings, clock=clock) as env:
        yield await make_hook(env), clock
