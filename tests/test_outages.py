"""Infrastructure failures get clear JSON answers (``outages.py``): an unreachable
database or Redis answers 503 with ``Retry-After`` within a bounded time, a full disk
507, each outage logs one line when it starts and one when it ends, and the server
recovers by itself."""

from __future__ import annotations

import errno
import os
import time
from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from hubbub.settings import Settings
from tests.helpers import TestEnv, assert_success, running_env
from tests.tcp_cut import CuttableRelay, cuttable_relay


def _outage_lines(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(text in r.getMessage() for r in caplog.records if r.name == "hubbub.outages")


@pytest.fixture
async def relayed_postgres(settings: Settings) -> AsyncIterator[tuple[Settings, CuttableRelay]]:
    # Only PostgreSQL is reached over the network; the tests using this fixture run on it
    # alone (their ``database_url`` parameter).
    url = make_url(settings.database_url)
    assert url.get_backend_name() == "postgresql"
    async with cuttable_relay(url.host or "127.0.0.1", url.port or 5432) as relay:
        through = url.set(host="127.0.0.1", port=relay.port)
        yield settings.with_(database_url=through.render_as_string(hide_password=False)), relay


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_database_outage_answers_503_then_recovers(
    relayed_postgres: tuple[Settings, CuttableRelay], caplog: pytest.LogCaptureFixture
) -> None:
    settings, relay = relayed_postgres
    async with running_env(settings) as env:
        hamlet = env.client("hamlet")
        assert_success(await hamlet.get("/users/me"))
        relay.cut()
        started = time.monotonic()
        for _ in range(5):
            response = await hamlet.get("/users/me")
            assert response.status_code == 503, response.json()
            assert response.json()["result"] == "error"
            assert response.headers["Retry-After"] == "5"
        # Refused connections fail at once; a silent network waits for the connect
        # timeout (five seconds), never for the whole outage.
        assert time.monotonic() - started < 30
        assert _outage_lines(caplog, "database unreachable") == 1
        assert not [r for r in caplog.records if r.exc_info]
        relay.restore()
        assert_success(await hamlet.get("/users/me"))
        assert _outage_lines(caplog, "working again") == 1


# SQLite's page limit stands for a full disk.
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_sqlite_disk_full_answers_507_and_stores_nothing(
    env: TestEnv, caplog: pytest.LogCaptureFixture
) -> None:
    async with env.services.db.write() as conn:
        pages = (await conn.execute(sa.text("PRAGMA page_count"))).scalar_one()
        await conn.execute(sa.text(f"PRAGMA max_page_count = {pages}"))
    othello = env.client("othello")
    recipient = f"[{env.users['hamlet'].id}]"
    failed = None
    for n in range(200):
        response = await othello.post(
            "/messages", {"type": "direct", "to": recipient, "content": f"{n} " + "x" * 5000}
        )
        if response.status_code != 200:
            failed = response
            break
    assert failed is not None, "the page limit never filled"
    assert failed.status_code == 507
    assert failed.json() == {
        "result": "error",
        "msg": "The server is out of storage space; nothing was saved.",
    }
    assert _outage_lines(caplog, "storage full") == 1
    async with env.services.db.write() as conn:
        await conn.execute(sa.text("PRAGMA max_page_count = 1073741823"))
    sent = assert_success(
        await othello.post("/messages", {"type": "direct", "to": recipient, "content": "fine"})
    )
    body = assert_success(
        await othello.get("/messages", {"anchor": "newest", "num_before": 1, "num_after": 0})
    )
    assert [m["id"] for m in body["messages"]] == [sent["id"]]


async def test_upload_to_a_full_disk_answers_507_and_leaves_no_file(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(source: str, target: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    # Storage moves each written file into place with os.replace.
    monkeypatch.setattr(os, "replace", full)
    response = await env.client("hamlet").request(
        "POST", "/user_uploads", files={"file": ("a.txt", b"hello", "text/plain")}
    )
    assert response.status_code == 507, response.json()
    uploads = env.services.settings.data_dir / "uploads"
    assert [p for p in uploads.rglob("*") if p.is_file()] == []
