"""SQLite ``user_message`` layouts compared with ``sqlite3`` alone: what a big send's rows
cost to insert and commit, and what a user's unread rows cost to read.

- ``rowid``: the layout before migration 0016, a rowid table with the (user, message)
  primary key as a second B-tree, and a partial index of unread rows with their flags.
- ``keyed``: migration 0016's, ``WITHOUT ROWID`` (the key's B-tree holds the rows), no
  unread index.
- ``staged``: the layout of migration 0019, measured before it was built
  (bench/results/sqlite-connections.md, *Sends prepared before SQLite's writer*):
  ``keyed``, with a send's rows going to a small message-major table first (keyed by
  (message, user): a big send's rows share a few leaves) and moved into ``user_message``
  every ``--merge-every`` sends in one transaction (each user's leaf written once for all
  of them). A user's unread rows are then read from both tables.

Both have the message index and the starred and direct-message partial indexes. Each
layout is built in its own file under ``--dir`` (kept, so a second run measures at once),
with ``--users`` users holding ``--rows-per-user`` rows each (a fifth unread); then
``--sends`` messages each add a row for every user, one transaction each, as a send to a
stream every user is subscribed to does. The server's writer settings: WAL,
``synchronous=NORMAL``, a 32 MB page cache; the WAL is checkpointed (PASSIVE) after each
commit, as the server's job does every second.

    .venv/bin/python bench/user_message_layout.py [--rows-per-user 10000]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import time
from pathlib import Path

COLUMNS = """(
    user_profile_id INTEGER NOT NULL,
    message_id INTEGER NOT NULL,
    flags BIGINT DEFAULT 0 NOT NULL,
    PRIMARY KEY (user_profile_id, message_id)
)"""
INDEXES = [
    "CREATE INDEX ix_message ON user_message (message_id)",
    "CREATE INDEX ix_starred ON user_message (user_profile_id, message_id) WHERE (flags & 2) != 0",
    "CREATE INDEX ix_private ON user_message (user_profile_id, message_id)"
    " WHERE (flags & 2048) != 0",
]
UNREAD_INDEX = (
    "CREATE INDEX ix_unread ON user_message (user_profile_id, message_id, flags)"
    " WHERE (flags & 1) = 0"
)
UNREAD = (
    "SELECT message_id, flags FROM user_message"
    " WHERE user_profile_id = ? AND (flags & 1) = 0 ORDER BY message_id DESC"
)
STAGE = """CREATE TABLE IF NOT EXISTS user_message_stage (
    message_id INTEGER NOT NULL,
    user_profile_id INTEGER NOT NULL,
    flags BIGINT DEFAULT 0 NOT NULL,
    PRIMARY KEY (message_id, user_profile_id)
) WITHOUT ROWID"""
MERGE = (
    "INSERT INTO user_message SELECT user_profile_id, message_id, flags"
    " FROM user_message_stage ORDER BY user_profile_id, message_id"
)
UNREAD_STAGED = (
    "SELECT message_id, flags FROM user_message"
    " WHERE user_profile_id = ? AND (flags & 1) = 0"
    " UNION ALL SELECT message_id, flags FROM user_message_stage"
    " WHERE user_profile_id = ? AND (flags & 1) = 0 ORDER BY message_id DESC"
)


def build(path: Path, layout: str, users: int, per_user: int) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(
        f"CREATE TABLE user_message {COLUMNS}{' WITHOUT ROWID' if layout == 'keyed' else ''}"
    )
    rng = random.Random(1)
    messages = per_user * users // 33  # each message reaches 33 users on average
    db.execute("BEGIN")
    for user in range(1, users + 1):
        ids = sorted(rng.sample(range(1, messages), per_user))
        rows = [(user, mid, 0 if rng.random() < 0.2 else 1) for mid in ids]
        db.executemany("INSERT INTO user_message VALUES (?, ?, ?)", rows)
    db.execute("COMMIT")
    for statement in INDEXES + ([UNREAD_INDEX] if layout == "rowid" else []):
        db.execute(statement)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def measure(path: Path, users: int, sends: int, merge_every: int = 0) -> dict[str, float]:
    """``merge_every`` > 0: the ``staged`` layout."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA cache_size=-32000")
    db.execute("PRAGMA wal_autocheckpoint=0")
    table = "user_message"
    if merge_every:
        db.execute(STAGE)
        table = "user_message_stage (user_profile_id, message_id, flags)"
    newest = db.execute("SELECT max(message_id) FROM user_message").fetchone()[0]
    insert, commit, frames, merges, merge_frames = [], [], [], [], []
    for number in range(1, sends + 1):
        newest += 1
        rows = [(user, newest, 1 if user == 1 else 0) for user in range(1, users + 1)]
        db.execute("BEGIN IMMEDIATE")
        started = time.perf_counter()
        db.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)", rows)
        inserted = time.perf_counter()
        db.execute("COMMIT")
        insert.append(inserted - started)
        commit.append(time.perf_counter() - inserted)
        frames.append(db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
        if merge_every and number % merge_every == 0:
            started = time.perf_counter()
            db.execute("BEGIN IMMEDIATE")
            db.execute(MERGE)
            db.execute("DELETE FROM user_message_stage")
            db.execute("COMMIT")
            merges.append(time.perf_counter() - started)
            merge_frames.append(db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
    reads = []
    for user in range(2, min(users, 300), 7):
        started = time.perf_counter()
        if merge_every:
            db.execute(UNREAD_STAGED, (user, user)).fetchall()
        else:
            db.execute(UNREAD, (user,)).fetchall()
        reads.append(time.perf_counter() - started)
    if merge_every:  # leave the file as built, for the next run
        db.execute("DELETE FROM user_message WHERE message_id > ?", (newest - sends,))
        db.execute("DROP TABLE user_message_stage")
    db.close()
    result = {
        "insert_ms": round(statistics.median(insert) * 1000, 2),
        "commit_ms": round(statistics.median(commit) * 1000, 2),
        "wal_frames": statistics.median(frames),
        "unread_read_ms": round(statistics.median(reads) * 1000, 2),
    }
    if merges:
        result["merge_ms"] = round(statistics.median(merges) * 1000, 2)
        result["merge_wal_frames"] = statistics.median(merge_frames)
        # What each send costs with its share of a merge.
        result["per_send_ms"] = round(
            (statistics.median(insert) + statistics.median(commit)) * 1000
            + statistics.median(merges) * 1000 / merge_every,
            2,
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--rows-per-user", type=int, default=10_000)
    parser.add_argument("--sends", type=int, default=30)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/hubbub-layouts"))
    parser.add_argument(
        "--merge-every", type=int, default=10, help="staged: sends between two merges"
    )
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    for layout in ("rowid", "keyed", "staged"):
        # The staged layout measures on the keyed file (and leaves it as it found it).
        built = "keyed" if layout == "staged" else layout
        path = args.dir / f"{built}-{args.users}x{args.rows_per_user}.db"
        if not path.exists():
            build(path, built, args.users, args.rows_per_user)
        merge_every = args.merge_every if layout == "staged" else 0
        print(layout, measure(path, args.users, args.sends, merge_every), flush=True)


if __name__ == "__main__":
    main()
