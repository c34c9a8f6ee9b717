"""What SQLAlchemy's execution adds to a send's writes on SQLite: the CPU time of
``sqlite.insert_message`` (the message's INSERT and its staged rows straight to the
writer's driver connection) against the same two statements through SQLAlchemy
(``conn.execute`` of the INSERT, ``exec_driver_sql`` of the rows), on a temporary
database, alternating, in rounds of one write transaction each.

    .venv/bin/python bench/insert_message.py --recipients 30
    .venv/bin/python bench/insert_message.py --recipients 1000 --rounds 10

Foreign keys are off on this database (no realm, users or streams are seeded): both ways
pay the same for them, and what is timed is the statements' way to SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.dialects import sqlite
from hubbub.db.dialects.sqlite_staged import INSERT_STAGED
from hubbub.db.engine import Database
from hubbub.db.migrate import upgrade
from hubbub.db.tables import message

_THROUGH_SQLALCHEMY = sa.insert(message).returning(message.c.id)

Insert = Callable[[AsyncConnection, dict[str, Any], dict[int, int]], Awaitable[int]]


async def through_sqlalchemy(
    conn: AsyncConnection, values: dict[str, Any], flags: dict[int, int]
) -> int:
    message_id = int((await conn.execute(_THROUGH_SQLALCHEMY, values)).scalar_one())
    rows = [(message_id, user_id, flags[user_id]) for user_id in sorted(flags)]
    await conn.exec_driver_sql(INSERT_STAGED, rows)
    return message_id


def _no_foreign_keys(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=OFF")
    cursor.close()


async def measure(recipients: int, rounds: int, per_round: int) -> dict[str, list[float]]:
    directory = tempfile.mkdtemp(prefix="hubbub-insert-")
    db = Database(f"sqlite:///{Path(directory) / 'hubbub.db'}")
    sa.event.listen(db.write_engine.sync_engine, "connect", _no_foreign_keys)
    await upgrade(db)
    await db.checkpoint()  # as a server: its writer's small COMMITs inline
    values = {
        "realm_id": 1,
        "sender_id": 1,
        "recipient_id": 1,
        "topic": "a topic",
        "content": "a short message of the kind people send",
        "rendered_content": "<p>a short message of the kind people send</p>",
        "rendered_content_version": 1,
        "date_sent": 1.0,
        "sending_client": "bench",
        "has_attachment": False,
        "has_image": False,
        "has_link": False,
        "is_me_message": False,
    }
    flags = dict.fromkeys(range(1, recipients + 1), 0)
    ways: dict[str, Insert] = {
        "SQLAlchemy": through_sqlalchemy,
        "driver (insert_message)": sqlite.insert_message,
    }
    found: dict[str, list[float]] = {name: [] for name in ways}
    try:
        for _ in range(rounds):
            for name, insert in ways.items():
                async with db.write() as conn:
                    started = time.process_time()
                    for _ in range(per_round):
                        await insert(conn, values, flags)
                    found[name].append((time.process_time() - started) / per_round * 1e6)
            await db.checkpoint()
    finally:
        await db.dispose()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipients", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=200)
    args = parser.parse_args()
    found = asyncio.run(measure(args.recipients, args.rounds, args.per_round))
    for name, times in found.items():
        print(
            f"{name}: CPU a send's INSERTs, {args.recipients} recipients: median "
            f"{statistics.median(times):.1f} µs, best {min(times):.1f} µs "
            f"({args.rounds} rounds of {args.per_round})"
        )


if __name__ == "__main__":
    main()
