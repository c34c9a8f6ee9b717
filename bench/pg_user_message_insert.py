"""What a big send's ``user_message`` rows cost PostgreSQL, index by index.

On a seeded realm (``bench/messages.py --keep … --database-url …``), times the statement
shape of a send (one row per recipient from two arrays, ``postgresql.insert_message``) for
``--recipients`` users and a new message id, ``--rounds`` times, in variants that each
run in a transaction rolled back afterwards, so that the realm is left as it was:

- ``all``: the user-major table as it is (``user_message_rows`` since migration 0021,
  ``user_message`` before it);
- ``-INDEX``: with that one secondary index dropped first (inside the transaction);
- ``staged``: into a table keyed by (message, user) with a (user, message, flags) index,
  created in the transaction (what SQLite's migration 0019 stages a send's rows in);
- ``staged-key-only``: the same table without its user index;
- ``move``: ``--sends`` such sends' rows, already staged, inserted into the user-major table
  in user order in one statement (what moving staged rows would cost), per row.

    .venv/bin/python bench/pg_user_message_insert.py \
        --database-url postgresql://postgres@127.0.0.1/hubbub_msgs

Prints each variant's median and range in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import asyncpg

_INSERT = (
    "INSERT INTO {table} (user_profile_id, message_id, flags)"
    " SELECT u, $2, f FROM unnest($1::int[], $3::bigint[]) AS r(u, f)"
)
_STAGED = (
    "CREATE TABLE bench_staged (message_id int NOT NULL, user_profile_id int NOT NULL,"
    " flags bigint NOT NULL DEFAULT 0, PRIMARY KEY (message_id, user_profile_id))"
)
_STAGED_USER_INDEX = "CREATE INDEX ON bench_staged (user_profile_id, message_id, flags)"
_MOVE = (
    "INSERT INTO {table} (user_profile_id, message_id, flags)"
    " SELECT user_profile_id, message_id, flags FROM bench_staged"
    " ORDER BY user_profile_id, message_id"
)
_SECONDARY = (
    "SELECT indexrelid::regclass::text FROM pg_index"
    " WHERE indrelid = $1::regclass AND NOT indisprimary ORDER BY 1"
)
# The user-major table: a view of it and of the staged rows took its name (migration 0021).
_ROWS_TABLE = "SELECT coalesce(to_regclass('user_message_rows'), 'user_message'::regclass)::text"


async def _timed(conn: asyncpg.Connection, sql: str, *args: object) -> float:
    start = time.perf_counter()
    await conn.execute(sql, *args)
    return (time.perf_counter() - start) * 1000


async def run(args: argparse.Namespace) -> None:
    conn = await asyncpg.connect(args.database_url)
    users = [
        row[0]
        for row in await conn.fetch(
            "SELECT id FROM user_profile WHERE is_active ORDER BY id LIMIT $1", args.recipients
        )
    ]
    flags = [0] * len(users)
    rows_table = str(await conn.fetchval(_ROWS_TABLE))
    indexes = [row[0] for row in await conn.fetch(_SECONDARY, rows_table)]
    message_id = int(await conn.fetchval("SELECT max(message_id) FROM user_message")) + 1000
    times: dict[str, list[float]] = {"all": [], "staged": [], "staged-key-only": []}
    times |= {f"-{name}": [] for name in indexes}
    times["move (per 1,000 rows)"] = []
    for _ in range(args.rounds):
        for variant in list(times):
            message_id += 1
            transaction = conn.transaction()
            await transaction.start()
            try:
                if variant.startswith("-"):
                    await conn.execute(f"DROP INDEX {variant[1:]}")
                    table = rows_table
                elif variant == "all":
                    table = rows_table
                else:
                    await conn.execute(_STAGED)
                    if variant != "staged-key-only":
                        await conn.execute(_STAGED_USER_INDEX)
                    table = "bench_staged"
                if variant.startswith("move"):
                    for _ in range(args.sends):
                        message_id += 1
                        await conn.execute(_INSERT.format(table=table), users, message_id, flags)
                    elapsed = await _timed(conn, _MOVE.format(table=rows_table))
                    times[variant].append(elapsed * 1000 / (args.sends * len(users)))
                else:
                    sql = _INSERT.format(table=table)
                    times[variant].append(await _timed(conn, sql, users, message_id, flags))
            finally:
                await transaction.rollback()
    await conn.close()
    print(f"{len(users)} recipients, {args.rounds} rounds (ms):")
    for variant, values in times.items():
        values.sort()
        print(
            f"  {variant:40} p50 {statistics.median(values):7.2f}"
            f"  min {values[0]:7.2f}  max {values[-1]:7.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True, help="a seeded realm's database")
    parser.add_argument("--recipients", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--sends", type=int, default=10, help="sends' rows per move")
    url = parser.parse_args()
    url.database_url = url.database_url.replace("postgresql+asyncpg://", "postgresql://")
    asyncio.run(run(url))


if __name__ == "__main__":
    main()
