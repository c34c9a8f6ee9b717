"""The in-memory bus's queues kept in the database (events/durable_queues.py): rebuilt
after a crash with the same ids and pending events, trimmed once acknowledged."""

from __future__ import annotations

import errno
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import sqlalchemy as sa

from hubbub.clock import FakeClock
from hubbub.db.engine import Database
from hubbub.db.tables import event_journal, event_queue_saved
from hubbub.events.bus import MemoryEventBus, Notice
from hubbub.events.durable_queues import DurableQueues
from hubbub.events.queue_file import write_queue_file
from hubbub.events.queues import QueueSpec
from hubbub.settings import Settings
from tests.helpers import running_env


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url)
    try:
        yield database
    finally:
        await database.dispose()


def _bus(db: Database, **kwargs: Any) -> MemoryEventBus:
    return MemoryEventBus(FakeClock(), durable=DurableQueues(db), **kwargs)


async def _crash(bus: MemoryEventBus) -> None:
    """What a SIGKILL leaves: nothing more is written (no flush, no shutdown save)."""
    assert bus.saver is not None
    bus.saver.crash()


async def _publish(bus: MemoryEventBus, db: Database, *notices: Notice) -> None:
    async with db.write() as conn:
        numbered = await bus.journal(conn, list(notices))
    await bus.publish(numbered)


def _note(n: int, *user_ids: int) -> Notice:
    return Notice(1, {"type": "custom", "n": n}, user_ids or (1,))


async def _rows(db: Database, table: sa.Table) -> int:
    async with db.read() as conn:
        return int((await conn.execute(sa.select(sa.func.count()).select_from(table))).scalar_one())


async def _poll(bus: MemoryEventBus, queue_id: str, last: int | None) -> list[dict[str, Any]]:
    return await bus.get_events(queue_id, last, block=False, now=0.0)


async def test_a_crash_keeps_the_queue_its_ids_and_unacknowledged_events(db: Database) -> None:
    bus = _bus(db)
    await bus.start()
    await bus.create_queue(QueueSpec("a", 1, 1, None), 0.0)
    await bus.create_queue(QueueSpec("b", 2, 1, ["custom"]), 0.0)
    for n in range(5):
        await _publish(bus, db, _note(n, 1, 2))
    await _publish(bus, db, _note(5, 2))  # not for queue a
    assert [e["id"] for e in await _poll(bus, "a", 2)] == [3, 4]
    await _crash(bus)

    restored = _bus(db)
    await restored.start()
    # The acknowledgement was never saved: the events after it come back with their ids,
    # and the client's acknowledgement prunes them again.
    assert [(e["id"], e["n"]) for e in await _poll(restored, "a", 2)] == [(3, 3), (4, 4)]
    assert [e["n"] for e in await _poll(restored, "b", None)] == [0, 1, 2, 3, 4, 5]
    await _publish(restored, db, _note(6, 1))
    assert [(e["id"], e["n"]) for e in await _poll(restored, "a", 4)] == [(5, 6)]
    await restored.close()


async def test_saved_progress_trims_the_journal(db: Database) -> None:
    bus = _bus(db)
    await bus.start()
    await bus.create_queue(QueueSpec("a", 1, 1, None), 0.0)
    await bus.create_queue(QueueSpec("b", 2, 1, None), 0.0)
    for n in range(4):
        await _publish(bus, db, _note(n, 1, 2))
    await _poll(bus, "a", 3)
    await _poll(bus, "b", 1)
    await bus.flush_saved()
    # Queue b still needs the events after its second.
    assert await _rows(db, event_journal) == 2
    await bus.delete_queue("b")
    await bus.flush_saved()
    assert await _rows(db, event_journal) == 0
    assert await _rows(db, event_queue_saved) == 1
    await _crash(bus)

    restored = _bus(db)
    await restored.start()
    assert await restored.get_queue("b") is None
    assert await _poll(restored, "a", 3) == []
    await _publish(restored, db, _note(9, 1))
    assert [(e["id"], e["n"]) for e in await _poll(restored, "a", 3)] == [(4, 9)]
    await restored.close()


async def test_a_heartbeat_seen_before_a_crash_keeps_the_ids_after_it(db: Database) -> None:
    bus = _bus(db, heartbeat_seconds=0.01)
    await bus.start()
    await bus.create_queue(QueueSpec("a", 1, 1, None), 0.0)
    await _publish(bus, db, _note(0))
    await _poll(bus, "a", 0)
    beat = await bus.get_events("a", 0, block=True, now=0.0)
    assert beat == [{"type": "heartbeat", "id": 1}]
    await _publish(bus, db, _note(1))
    await _crash(bus)

    restored = _bus(db)
    await restored.start()
    assert [(e["id"], e["n"]) for e in await _poll(restored, "a", 1)] == [(2, 1)]
    await restored.close()


async def test_a_queue_registered_while_writes_commit_gets_what_follows(db: Database) -> None:
    bus = _bus(db)
    await bus.start()
    await _publish(bus, db, _note(0))  # before the queue: never in it
    await bus.create_queue(QueueSpec("a", 1, 1, None), 0.0)
    await _publish(bus, db, _note(1))
    await _crash(bus)
    restored = _bus(db)
    await restored.start()
    assert [(e["id"], e["n"]) for e in await _poll(restored, "a", None)] == [(0, 1)]
    await restored.close()


async def test_a_clean_shutdown_leaves_no_file_and_a_short_journal(
    db: Database, tmp_path: Path
) -> None:
    state_file = tmp_path / "event_queues.json"
    bus = _bus(db, state_file=state_file)
    await bus.start()
    await bus.create_queue(QueueSpec("a", 1, 1, None), 0.0)
    await _publish(bus, db, _note(0), _note(1))
    await _poll(bus, "a", 0)
    await bus.close()
    assert not state_file.exists()
    assert await _rows(db, event_journal) == 1
    restored = _bus(db, state_file=state_file)
    await restored.start()
    assert [(e["id"], e["n"]) for e in await _poll(restored, "a", 0)] == [(1, 1)]
    await restored.close()


async def test_an_older_servers_shutdown_file_is_read_once(db: Database, tmp_path: Path) -> None:
    state_file = tmp_path / "event_queues.json"
    spec = QueueSpec("old", 1, 1, None)
    old = [
        {
            "spec": spec.to_dict(),
            "last_access": 0.0,
            "next_id": 3,
            "events": [{"type": "custom", "n": 1, "id": 1}, {"type": "custom", "n": 2, "id": 2}],
            "pruned_through": 0,
        }
    ]
    state_file.write_bytes(orjson.dumps(old))
    bus = _bus(db, state_file=state_file)
    await bus.start()
    assert not state_file.exists()
    await _publish(bus, db, _note(3))
    await _crash(bus)

    restored = _bus(db, state_file=state_file)
    await restored.start()
    events = await _poll(restored, "old", 1)
    assert [(e["id"], e["n"]) for e in events] == [(2, 2), (3, 3)]
    await restored.close()


async def test_a_rolled_back_write_journals_nothing(settings: Settings) -> None:
    async with running_env(settings) as env:
        bus = env.services.bus
        if not isinstance(bus, MemoryEventBus) or bus.durable is None:
            assert not settings.effective_database_url.startswith("sqlite")
            return
        before = await _rows(env.services.db, event_journal)
        with pytest.raises(RuntimeError):
            async with env.services.write() as tx:
                tx.notify(1, {"type": "custom"}, [1])
                raise RuntimeError("rolled back")
        assert await _rows(env.services.db, event_journal) == before
        async with env.services.write() as tx:
            tx.notify(1, {"type": "custom"}, [1])
        assert await _rows(env.services.db, event_journal) == before + 1


def test_a_full_disk_keeps_the_previous_shutdown_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "event_queues.json"
    assert write_queue_file(path, [{"spec": {}}])
    previous = path.read_bytes()

    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("hubbub.events.queue_file.os.fsync", full)
    with caplog.at_level(logging.ERROR, logger="hubbub.events"):
        assert not write_queue_file(path, [{"spec": {}}, {"spec": {}}])
    assert path.read_bytes() == previous
    assert not path.with_suffix(".tmp").exists()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "the disk is full" in lines[0] and "kept the previous" in lines[0]
