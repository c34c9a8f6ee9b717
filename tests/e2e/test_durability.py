"""Durability: SIGKILL the server while clients send; after a restart every
message whose id was returned is present and intact, and no message is half-written.

"Half-written" means a ``message`` row without its recipients' ``user_message`` rows or
without its rendering, or a ``user_message`` row whose message is missing: a send is one
transaction, so a kill must leave either all of it or none of it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path

import httpx
import sqlalchemy as sa

from hubbub.db.engine import Database
from hubbub.db.tables import message, subscription, user_message
from tests.e2e.conftest import HubbubServer, start_serve, stop_serve

SENDERS = 6
# Unicode from several planes, markup the renderer must handle, and enough length that a
# torn write would show.
BODY = "durable 🚀 ünïcödé — **bold** `code` " + "x" * 2000


def _send_until_stopped(
    url: str,
    auth: tuple[str, str],
    name: str,
    stop: threading.Event,
    acknowledged: dict[int, str],
) -> None:
    with httpx.Client(base_url=url, auth=auth, timeout=10) as client:
        number = 0
        while not stop.is_set():
            number += 1
            content = f"{name} #{number}: {BODY}"
            try:
                response = client.post(
                    "/api/v1/messages",
                    data={"type": "stream", "to": "durable", "topic": name, "content": content},
                )
            except httpx.HTTPError:  # killed mid-request: never acknowledged
                time.sleep(0.05)
                continue
            if response.status_code == 200:
                acknowledged[response.json()["id"]] = content


def _wait_for(condition: object, timeout: float = 30.0) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


async def _half_written(url: str) -> dict[str, list[int]]:
    """Messages that lack recipient rows or rendering; recipient rows without a message."""
    db = Database(url)
    try:
        async with db.read() as conn:
            subscribers = (
                await conn.execute(
                    sa.select(sa.func.count())
                    .select_from(subscription)
                    .where(subscription.c.active)
                )
            ).scalar_one()
            per_message = sa.select(user_message.c.message_id, sa.func.count().label("n")).group_by(
                user_message.c.message_id
            )
            rows = (await conn.execute(per_message)).all()
            counts = {r.message_id: r.n for r in rows}
            messages = (
                await conn.execute(sa.select(message.c.id, message.c.rendered_content))
            ).all()
    finally:
        await db.dispose()
    ids = {m.id for m in messages}
    return {
        "without_all_recipients": sorted(m.id for m in messages if counts.get(m.id) != subscribers),
        "without_rendering": sorted(m.id for m in messages if not m.rendered_content),
        "orphan_user_message_rows": sorted(counts.keys() - ids),
        "subscribers": [subscribers],
    }


def test_sigkill_mid_send_loses_nothing_acknowledged(
    tmp_path: Path, hubbub_database_url: str | None
) -> None:
    data_dir = tmp_path / "data"
    server: HubbubServer = start_serve(
        data_dir, database_url=hubbub_database_url, log_dir=tmp_path / "logs"
    )
    try:
        owner = server.owner()
        auth = (owner.email, owner.api_key)
        with httpx.Client(base_url=server.url, auth=auth, timeout=10) as client:
            member = client.post(
                "/api/v1/users",
                data={"email": "m@example.com", "password": "long password", "full_name": "Member"},
            )
            assert member.status_code == 200, member.text
            subscribed = client.post(
                "/api/v1/users/me/subscriptions",
                data={
                    "subscriptions": '[{"name": "durable"}]',
                    "principals": f'["{owner.email}", "m@example.com"]',
                },
            )
            assert subscribed.status_code == 200, subscribed.text

        stop = threading.Event()
        acknowledged: dict[int, str] = {}
        threads = [
            threading.Thread(
                target=_send_until_stopped,
                args=(server.url, auth, f"s{i}", stop, acknowledged),
                daemon=True,
            )
            for i in range(SENDERS)
        ]
        for thread in threads:
            thread.start()
        _wait_for(lambda: len(acknowledged) >= 60)
        os.kill(server.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        assert len(acknowledged) >= 60

        server = start_serve(data_dir, database_url=hubbub_database_url, log_dir=tmp_path / "logs")
        with httpx.Client(base_url=server.url, auth=auth, timeout=30) as client:
            found = client.get(
                "/api/v1/messages",
                params={
                    "anchor": "oldest",
                    "num_before": 0,
                    "num_after": 5000,
                    "narrow": '[{"operator": "stream", "operand": "durable"}]',
                    "apply_markdown": "false",
                },
            )
        assert found.status_code == 200, found.text
        stored = {m["id"]: m["content"] for m in found.json()["messages"]}
        lost = sorted(acknowledged.keys() - stored.keys())
        assert not lost, f"{len(lost)} acknowledged messages lost: {lost[:20]}"
        changed = [i for i, content in acknowledged.items() if stored[i] != content]
        assert not changed, f"acknowledged messages changed: {changed[:20]}"
        # Messages committed but not acknowledged (the kill came before the response) may
        # exist; they must be whole too.
        assert all(c.endswith(BODY) for c in stored.values())

        database_url = hubbub_database_url or f"sqlite:///{data_dir / 'hubbub.db'}"
        problems = asyncio.run(_half_written(database_url))
        assert problems["subscribers"] == [2]
        assert problems["without_all_recipients"] == []
        assert problems["without_rendering"] == []
        assert problems["orphan_user_message_rows"] == []
    finally:
        stop_serve(server)
