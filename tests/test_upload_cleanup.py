"""The unclaimed-upload job: uploads no message or scheduled message links are deleted
``unclaimed_upload_days`` after upload; linked ones never are."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hubbub.clock import FakeClock
from hubbub.settings import Settings
from hubbub.workers import upload_cleanup
from tests.helpers import TestEnv, assert_success, running_env
from tests.messages_helpers import send_stream_message
from tests.uploads_helpers import upload

DAY = 86400.0


@pytest.fixture
async def env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings.with_(unclaimed_upload_days=3), clock=FakeClock()) as e:
        yield e


def stored(env: TestEnv, path_id: str) -> bool:
    return (env.services.settings.data_dir / "uploads" / path_id).exists()


async def names(env: TestEnv, user: str = "hamlet") -> list[str]:
    body = assert_success(await env.client(user).get("/attachments"))
    return sorted(a["name"] for a in body["attachments"])


async def test_unclaimed_uploads_expire(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    clock = env.fake_clock
    unclaimed = await upload(env, "hamlet", name="unclaimed.txt")
    claimed = await upload(env, "hamlet", name="claimed.txt")
    await send_stream_message(env, "hamlet", "Denmark", f"/user_uploads/{claimed}")
    clock.advance(2 * DAY)
    late = await upload(env, "hamlet", name="late.txt")
    assert await upload_cleanup.run_once(env.services) == 0
    clock.advance(1 * DAY + 1)
    # Three days after the first uploads: only the unclaimed one of them goes.
    assert await upload_cleanup.run_once(env.services) == 1
    assert await names(env) == ["claimed.txt", "late.txt"]
    assert not stored(env, unclaimed) and stored(env, claimed) and stored(env, late)
    clock.advance(2 * DAY)
    assert await upload_cleanup.run_once(env.services) == 1
    assert await names(env) == ["claimed.txt"]
    assert await upload_cleanup.run_once(env.services) == 0


async def test_cleanup_in_batches(env: TestEnv) -> None:
    paths = [await upload(env, "othello", name=f"f{i}.txt") for i in range(5)]
    env.advance(4 * DAY)
    assert await upload_cleanup.run_once(env.services, batch_size=2) == 5
    assert await names(env, "othello") == []
    assert not any(stored(env, p) for p in paths)
