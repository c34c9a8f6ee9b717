"""Message benchmark: a realm of 1,000 users, 100 streams and 1,000,000 messages.

Seeds the realm (users, streams and subscriptions through the API, messages bulk-inserted
into the database with SQLAlchemy Core, all from a fixed random seed), restarts
``hubbub serve`` on it and measures, from this process:

- ``GET /messages`` with a stream + topic narrow (100 messages);
- ``GET /messages`` with full-text search narrows;
- ``POST /register`` (the full initial state) for realm users;
- ``POST /messages`` at a target rate (streams of various sizes, direct messages);
- the time from sending a stream message until each of N long-polling clients subscribed to
  the largest stream has it.

    .venv/bin/python bench/messages.py --scale 0.01
    .venv/bin/python bench/messages.py                     # 1,000 users, 1,000,000 messages
    .venv/bin/python bench/messages.py --scale 0.1 \
        --database-url postgresql://postgres@127.0.0.1/hubbub_bench_msgs \
        --redis-url redis://127.0.0.1:6379/0

The server process, its start-up and shut-down, the HTTP client and the statistics come from
``bench/longpoll.py``. See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import html
import itertools
import random
import shutil
import string
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import orjson
import sqlalchemy as sa
from longpoll import (
    RESULTS_DIR,
    Connection,
    ConnectionClosed,
    PollClient,
    Poller,
    Server,
    api_call,
    backend_config,
    basic_auth,
    bounded,
    client_collector_paused,
    latency_summary,
    log,
    ms,
    raise_nofile_limit,
    result_header,
    run_and_save,
    tree_cpu_seconds,
    tree_peak_rss_mb,
    tree_rss_mb,
    wait_until_quiet,
)
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from hubbub.actions.message_recipients import (
    get_or_create_group_recipient,
    get_or_create_recipient,
    stream_recipient_id,
)
from hubbub.db.engine import Database
from hubbub.db.tables import message, stream, user_message_rows, user_profile
from hubbub.queries.message_dicts import RECIPIENT_PERSONAL

# Zulip's flag bits (DESIGN.md §5).
READ = 1
MENTIONED = 8
IS_PRIVATE = 2048

# Shares of the seeded messages.
DIRECT_SHARE = 0.10  # direct messages; a quarter of them to groups of 3-5 people
BIG_STREAM_SHARE = 0.005  # to the streams every user is subscribed to
MENTION_SHARE = 0.03  # stream messages that mention one subscriber
RECENT_SHARE = 0.10  # the newest messages, where unread rows are
RECENT_UNREAD = 0.25  # a recipient's row of a recent message is unread with this chance
SEED_BATCH = 5000  # messages per transaction
SEED_SPAN_SECONDS = 365 * 86400  # messages spread over the last year

BUDGETS_MS = {
    "send": 20.0,
    "delivery": 100.0,
    "fetch_topic": 20.0,
    "search": 50.0,
    "register": 100.0,
}
IDLE_RSS_BUDGET_MB = 80.0


@dataclass
class SeedUser:
    id: int
    email: str
    full_name: str
    api_key: str = ""

    @property
    def auth(self) -> str:
        return basic_auth(self.email, self.api_key)


@dataclass
class SeedStream:
    id: int
    name: str
    subscribers: list[int]
    big: bool
    topics: list[str] = field(default_factory=list)
    topic_weights: list[float] = field(default_factory=list)
    recipient_id: int = 0


@dataclass
class Realm:
    """What was seeded: enough to pick realistic requests afterwards."""

    owner: str = ""
    users: list[SeedUser] = field(default_factory=list)
    streams: list[SeedStream] = field(default_factory=list)
    vocabulary: list[str] = field(default_factory=list)
    groups: list[list[int]] = field(default_factory=list)
    # (stream index, topic) -> number of seeded messages
    topic_counts: dict[tuple[int, str], int] = field(default_factory=dict)

    by_id: dict[int, SeedUser] = field(default_factory=dict)

    def user(self, user_id: int) -> SeedUser:
        return self.by_id[user_id]


def save_realm(realm: Realm, path: Path) -> None:
    """What ``--keep DIR`` saves as ``DIR/realm.json`` beside the seeded data directory."""
    data = {
        "owner": realm.owner,
        "users": [dataclasses.asdict(u) for u in realm.users],
        "streams": [dataclasses.asdict(s) for s in realm.streams],
        "vocabulary": realm.vocabulary,
        "groups": realm.groups,
        "topic_counts": [[i, t, n] for (i, t), n in realm.topic_counts.items()],
    }
    path.write_bytes(orjson.dumps(data))


def load_realm(path: Path) -> Realm:
    data = orjson.loads(path.read_bytes())
    realm = Realm(
        owner=data["owner"],
        users=[SeedUser(**u) for u in data["users"]],
        streams=[SeedStream(**s) for s in data["streams"]],
        vocabulary=data["vocabulary"],
        groups=data["groups"],
        topic_counts={(i, t): n for i, t, n in data["topic_counts"]},
    )
    realm.by_id = {u.id: u for u in realm.users}
    return realm


# --- sizes and text ----------------------------------------------------------------------


@dataclass
class Sizes:
    users: int
    streams: int
    big_streams: int
    messages: int
    groups: int

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Sizes:
        users = max(4, round(args.users * args.scale))
        streams = max(3, round(args.streams * args.scale))
        return cls(
            users=users,
            streams=streams,
            big_streams=max(1, round(streams * 0.03)),
            messages=max(1000, round(args.messages * args.scale)),
            groups=max(3, round(50 * args.scale)),
        )


def make_vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    """Pronounceable pseudo-words (no stemming surprises in FTS), most frequent first."""
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]
    words: dict[str, None] = {}
    while len(words) < size:
        words["".join(rng.choices(syllables, k=rng.randint(2, 4)))] = None
    return list(words)


def zipf_cum_weights(n: int, s: float = 1.0) -> list[float]:
    return list(itertools.accumulate(1 / (rank + 1) ** s for rank in range(n)))


# --- seeding ------------------------------------------------------------------------------


class Seeder:
    def __init__(self, args: argparse.Namespace, server: Server, sizes: Sizes) -> None:
        self.args = args
        self.server = server
        self.sizes = sizes
        self.rng = random.Random(args.seed)
        self.realm = Realm()
        self.realm.vocabulary = make_vocabulary(self.rng)
        self.word_weights = zipf_cum_weights(len(self.realm.vocabulary))
        self.progress = Progress(
            TextColumn("{task.description:<22}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            transient=False,
        )

    def database_url(self) -> str:
        if self.args.database_url:
            return str(self.args.database_url)
        return f"sqlite+aiosqlite:///{(self.server.workdir / 'data' / 'hubbub.db').resolve()}"

    async def through_api(self, owner: str) -> None:
        """Users, streams and subscriptions, as an administrator would make them."""
        realm, sizes, rng = self.realm, self.sizes, self.rng
        realm.owner = owner
        host, port = self.server.host, self.server.port
        password = "bench-" + "".join(rng.choices(string.ascii_letters, k=12))
        users_task = self.progress.add_task("users (API)", total=sizes.users, rate="")

        async def make_user(i: int) -> SeedUser:
            conn = Connection(host, port)
            try:
                email = f"user{i}@bench.example.com"
                name = f"Bench User {i}"
                data = await api_call(
                    conn,
                    "POST",
                    "/users",
                    auth=owner,
                    form={"email": email, "password": password, "full_name": name},
                )
                self.progress.advance(users_task)
                return SeedUser(id=data["user_id"], email=email, full_name=name)
            finally:
                conn.close()

        realm.users = await bounded(8, [lambda i=i: make_user(i) for i in range(sizes.users)])
        realm.by_id = {u.id: u for u in realm.users}
        user_ids = [u.id for u in realm.users]

        streams_task = self.progress.add_task("streams (API)", total=sizes.streams, rate="")
        for index in range(sizes.streams):
            big = index < sizes.big_streams
            if big:
                subscribers = list(user_ids)
            else:
                count = min(len(user_ids), rng.randint(10, 50))
                subscribers = sorted(rng.sample(user_ids, count))
            name = f"all hands {index}" if big else f"stream {index}"
            realm.streams.append(SeedStream(id=0, name=name, subscribers=subscribers, big=big))
        conn = Connection(host, port)
        try:
            for s in realm.streams:
                await api_call(
                    conn,
                    "POST",
                    "/users/me/subscriptions",
                    auth=owner,
                    form={
                        "subscriptions": orjson.dumps([{"name": s.name}]).decode(),
                        "principals": orjson.dumps(s.subscribers).decode(),
                    },
                )
                self.progress.advance(streams_task)
        finally:
            conn.close()
        for s in realm.streams:
            n_topics = rng.randint(3, 8) if s.big else rng.randint(5, 40)
            s.topics = [
                " ".join(rng.choices(realm.vocabulary[:500], k=rng.randint(1, 3))) + f" {t}"
                for t in range(n_topics)
            ]
            s.topic_weights = zipf_cum_weights(n_topics, 0.9)
        members = list(user_ids)
        realm.groups = [
            sorted(rng.sample(members, min(len(members), rng.randint(3, 5))))
            for _ in range(sizes.groups)
        ]

    async def read_back(self, db: Database) -> int:
        """API keys and stream ids from the database; returns the realm id."""
        realm = self.realm
        async with db.read() as conn:
            rows = (
                await conn.execute(
                    sa.select(user_profile.c.id, user_profile.c.api_key, user_profile.c.realm_id)
                )
            ).all()
            keys = {row.id: row.api_key for row in rows}
            realm_id = int(rows[0].realm_id)
            by_name = {
                row.name: row.id
                for row in await conn.execute(sa.select(stream.c.id, stream.c.name))
            }
        for u in realm.users:
            u.api_key = keys[u.id]
        for s in realm.streams:
            s.id = by_name[s.name]
        return realm_id

    async def messages(self) -> dict[str, Any]:
        """Bulk-insert ``message`` and ``user_message`` rows (the server is stopped)."""
        sizes, realm, rng = self.sizes, self.realm, self.rng
        db = Database(self.database_url())
        if db.is_sqlite:
            # Seeding only: the rows are consistent by construction, and a crash means
            # seeding again. A large page cache keeps the user_message indexes in memory.
            sa.event.listen(db.engine.sync_engine, "connect", _fast_sqlite_seeding)
        started = time.monotonic()
        generate_s = insert_s = 0.0
        try:
            realm_id = await self.read_back(db)
            rebuild = await _sqlite_drop_secondary(db) if db.is_sqlite else []
            async with db.write() as conn:
                for s in realm.streams:
                    s.recipient_id = await stream_recipient_id(conn, s.id)
                personal = {
                    u.id: await get_or_create_recipient(conn, RECIPIENT_PERSONAL, u.id)
                    for u in realm.users
                }
                group_rids = [
                    await get_or_create_group_recipient(conn, realm_id, members)
                    for members in realm.groups
                ]
                first_id = (
                    int((await conn.execute(sa.select(sa.func.max(message.c.id)))).scalar() or 0)
                    + 1
                )
            normal = [s for s in realm.streams if not s.big] or realm.streams
            big = [s for s in realm.streams if s.big]
            stream_weights = zipf_cum_weights(len(normal), 0.7)
            user_ids = [u.id for u in realm.users]
            vocab, word_weights = realm.vocabulary, self.word_weights
            total = sizes.messages
            recent_from = int(total * (1 - RECENT_SHARE))
            now = time.time()
            t_first = now - SEED_SPAN_SECONDS
            step = (SEED_SPAN_SECONDS - 3600) / total
            stream_index = {id(s): i for i, s in enumerate(realm.streams)}
            counts = {"stream": 0, "big_stream": 0, "direct": 0, "group_direct": 0}
            rows_total = unread_total = mentions = 0
            task = self.progress.add_task("messages (SQL)", total=total, rate="")

            async def insert_batch(
                msg_rows: list[dict[str, Any]], um_rows: list[tuple[int, int, int]]
            ) -> float:
                insert_started = time.perf_counter()
                async with db.write() as conn:
                    await conn.execute(sa.text("SELECT 1"))  # opens the transaction
                    raw = (await conn.get_raw_connection()).driver_connection
                    assert raw is not None
                    msg_tuples = [tuple(row.values()) for row in msg_rows]
                    if db.dialect_name == "postgresql":
                        # COPY is far faster than executemany through asyncpg.
                        await raw.copy_records_to_table(
                            message.name, records=msg_tuples, columns=list(msg_rows[0])
                        )
                        # user_message is a view (migrations 0019 and 0021): its
                        # user-major table, as rows settled long ago.
                        await raw.copy_records_to_table(
                            user_message_rows.name, records=um_rows, columns=UM_COLUMNS
                        )
                    else:
                        # The driver's own executemany of tuples: SQLAlchemy's, of dicts,
                        # spent as long in Python as SQLite did inserting.
                        await raw.executemany(
                            _insert_sql(message.name, list(msg_rows[0])), msg_tuples
                        )
                        await raw.executemany(
                            _insert_sql(user_message_rows.name, UM_COLUMNS), um_rows
                        )
                return time.perf_counter() - insert_started

            pending: asyncio.Future[float] | None = None
            for batch_start in range(0, total, SEED_BATCH):
                batch_started = time.perf_counter()
                msg_rows: list[dict[str, Any]] = []
                um_rows: list[tuple[int, int, int]] = []
                for n in range(batch_start, min(total, batch_start + SEED_BATCH)):
                    if n % 200 == 0:
                        await asyncio.sleep(0)  # let the previous batch's insert go on
                    mid = first_id + n
                    words = rng.choices(vocab, cum_weights=word_weights, k=rng.randint(4, 30))
                    recent = n >= recent_from
                    r = rng.random()
                    mentioned = 0
                    if r < DIRECT_SHARE:
                        topic = ""
                        if r < DIRECT_SHARE * 0.75:
                            sender, other = rng.sample(user_ids, 2)
                            rid = personal[other]
                            recipients = [sender, other]
                            counts["direct"] += 1
                        else:
                            g = rng.randrange(len(realm.groups))
                            recipients = realm.groups[g]
                            rid = group_rids[g]
                            sender = rng.choice(recipients)
                            counts["group_direct"] += 1
                        base = IS_PRIVATE
                    else:
                        if r < DIRECT_SHARE + BIG_STREAM_SHARE and big:
                            target = rng.choice(big)
                            counts["big_stream"] += 1
                        else:
                            target = rng.choices(normal, cum_weights=stream_weights)[0]
                            counts["stream"] += 1
                        topic = rng.choices(target.topics, cum_weights=target.topic_weights)[0]
                        key = (stream_index[id(target)], topic)
                        realm.topic_counts[key] = realm.topic_counts.get(key, 0) + 1
                        recipients = target.subscribers
                        rid = target.recipient_id
                        sender = rng.choice(recipients)
                        base = 0
                        if rng.random() < MENTION_SHARE:
                            mentioned = rng.choice(recipients)
                    content = " ".join(words)
                    rendered = html.escape(content)
                    if mentioned:
                        name = realm.user(mentioned).full_name
                        content = f"@**{name}** {content}"
                        rendered = (
                            f'<span class="user-mention" data-user-id="{mentioned}">'
                            f"@{html.escape(name)}</span> {rendered}"
                        )
                        mentions += 1
                    msg_rows.append(
                        {
                            "id": mid,
                            "realm_id": realm_id,
                            "sender_id": sender,
                            "recipient_id": rid,
                            "topic": topic,
                            "content": content,
                            "rendered_content": f"<p>{rendered}</p>",
                            "rendered_content_version": 1,
                            "date_sent": t_first + n * step,
                            "sending_client": "bench",
                        }
                    )
                    for uid in recipients:
                        flags = base
                        if uid == mentioned:
                            flags |= MENTIONED
                        if uid == sender or not recent or rng.random() >= RECENT_UNREAD:
                            flags |= READ
                        else:
                            unread_total += 1
                        um_rows.append((uid, mid, flags))
                generate_s += time.perf_counter() - batch_started
                # The database works on this batch (in aiosqlite's or asyncpg's I/O) while
                # the next one is generated.
                if pending is not None:
                    insert_s += await pending
                pending = asyncio.ensure_future(insert_batch(msg_rows, um_rows))
                rows_total += len(um_rows)
                done = batch_start + len(msg_rows)
                rate = done / max(time.monotonic() - started, 1e-6)
                self.progress.update(
                    task, completed=done, rate=f"{rate:,.0f} msg/s, {rows_total:,} rows"
                )
            if pending is not None:
                insert_s += await pending
            finish_started = time.monotonic()
            if rebuild:
                await _sqlite_restore(db, rebuild)
            async with db.write() as conn:
                for s in realm.streams:
                    await conn.execute(
                        sa.update(stream)
                        .where(stream.c.id == s.id)
                        .values(
                            first_message_id=sa.select(sa.func.min(message.c.id))
                            .where(message.c.recipient_id == s.recipient_id)
                            .scalar_subquery()
                        )
                    )
                if db.dialect_name == "postgresql":
                    await conn.exec_driver_sql(
                        "SELECT setval(pg_get_serial_sequence('message', 'id'),"
                        " (SELECT max(id) FROM message))"
                    )
            async with db.engine.connect() as conn:
                if db.dialect_name == "postgresql":
                    # Autovacuum would soon vacuum and analyze rows that arrived over months.
                    # Unvacuumed, the first read of each page of a bulk load sets its rows'
                    # hint bits (writes) and index-only scans visit the heap: a /register
                    # for a user whose rows nothing had read took up to 0.7 s more.
                    conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                    await conn.exec_driver_sql("VACUUM (ANALYZE)")
                else:
                    await conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            finish = time.monotonic() - finish_started
        finally:
            await db.dispose()
        return {
            "messages": total,
            "by_kind": counts,
            "user_message_rows": rows_total,
            "unread_rows": unread_total,
            "mentions": mentions,
            "first_message_id": first_id,
            "generate_s": round(generate_s, 1),
            "insert_s": round(insert_s, 1),
            "finish_s": round(finish, 1),
        }


UM_COLUMNS = ["user_profile_id", "message_id", "flags"]


def _insert_sql(table: str, columns: list[str]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


async def _sqlite_drop_secondary(db: Database) -> list[str]:
    """Drop the message tables' secondary indexes and full-text trigger for the bulk load;
    the statements that make them again.

    Kept row by row, they outgrew the page cache halfway through the 1,000,000 messages
    and the load crawled at 5,000 messages a minute; built once afterwards (and the
    full-text index rebuilt from ``message``, its content table) they cost minutes.
    """
    async with db.write() as conn:
        rows = (
            await conn.exec_driver_sql(
                "SELECT type, name, sql FROM sqlite_master"
                " WHERE tbl_name IN ('message', 'user_message_rows') AND sql IS NOT NULL"
                " AND (type = 'index' OR name = 'message_fts_insert')"
            )
        ).all()
        for kind, name, _sql in rows:
            await conn.exec_driver_sql(f'DROP {kind.upper()} "{name}"')
    return [sql for _kind, _name, sql in rows]


async def _sqlite_restore(db: Database, statements: list[str]) -> None:
    async with db.write() as conn:
        for sql in statements:
            await conn.exec_driver_sql(sql)
        await conn.exec_driver_sql("INSERT INTO message_fts(message_fts) VALUES ('rebuild')")


def _fast_sqlite_seeding(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=OFF")
    cursor.execute("PRAGMA synchronous=OFF")
    cursor.execute("PRAGMA cache_size=-1000000")
    cursor.close()


# --- load generation ----------------------------------------------------------------------


@dataclass
class Samples:
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, text: str) -> None:
        self.errors[text] = self.errors.get(text, 0) + 1

    def summary(self) -> dict[str, Any]:
        return {
            "count": len(self.latencies),
            **latency_summary(self.latencies),
            "errors": sum(self.errors.values()),
            "error_kinds": dict(list(self.errors.items())[:5]),
        }


async def timed(conn: Connection, samples: Samples, method: str, path: str, **kw: Any) -> Any:
    """One request; its latency goes to ``samples`` when it succeeds."""
    started = time.perf_counter()
    try:
        response = await conn.request(method, "/api/v1" + path, **kw)
    except (OSError, ConnectionClosed) as exc:
        conn.close()
        samples.error(f"connection: {type(exc).__name__}")
        return None
    data = response.json()
    if response.status != 200 or data.get("result") != "success":
        samples.error(f"{response.status} {data.get('code')} {str(data.get('msg'))[:80]}")
        return None
    samples.latencies.append(response.arrived - started)
    return data


def get_path(path: str, params: dict[str, Any]) -> str:
    return path + "?" + urlencode(params)


class Bench:
    def __init__(self, args: argparse.Namespace, server: Server, seeder: Seeder) -> None:
        self.args = args
        self.server = server
        self.seeder = seeder
        self.realm = seeder.realm
        self.rng = random.Random(args.seed + 1)
        self.result: dict[str, Any] = {}
        self.phases: dict[str, dict[str, float]] = {}

    async def phase(self, name: str, work: Callable[[], Awaitable[Any]]) -> Any:
        pid = self.server.pid
        wall, cpu = time.monotonic(), tree_cpu_seconds(pid)
        log(f"{name} ...")
        value = await work()
        wall_s = time.monotonic() - wall
        cpu_s = tree_cpu_seconds(pid) - cpu
        self.phases[name] = {
            "wall_s": round(wall_s, 2),
            "server_cpu_s": round(cpu_s, 2),
            "server_cpu_pct": round(100 * cpu_s / max(wall_s, 1e-6), 1),
            "rss_after_mb": round(tree_rss_mb(pid), 1),
        }
        log(f"{name}: {wall_s:.1f}s wall, server CPU {cpu_s:.1f}s ({100 * cpu_s / wall_s:.0f}%)")
        return value

    # GET /messages, stream + topic

    async def fetch_topics(self) -> dict[str, Any]:
        realm, rng = self.realm, self.rng
        keys = list(realm.topic_counts)
        weights = [realm.topic_counts[k] for k in keys]
        samples, returned = Samples(), []
        conn = Connection(self.server.host, self.server.port)
        try:
            for _ in range(self.args.fetches):
                index, topic = rng.choices(keys, weights=weights)[0]
                s = realm.streams[index]
                reader = realm.user(rng.choice(s.subscribers))
                narrow = [
                    {"operator": "stream", "operand": s.id},
                    {"operator": "topic", "operand": topic},
                ]
                params = {
                    "anchor": "newest",
                    "num_before": 100,
                    "num_after": 0,
                    "narrow": orjson.dumps(narrow).decode(),
                }
                data = await timed(
                    conn, samples, "GET", get_path("/messages", params), auth=reader.auth
                )
                if data is not None:
                    returned.append(len(data["messages"]))
        finally:
            conn.close()
        return {
            **samples.summary(),
            "messages_per_response_avg": round(sum(returned) / max(1, len(returned)), 1),
            "full_pages": sum(1 for n in returned if n >= 100),
        }

    # GET /messages, search

    async def search(self) -> dict[str, Any]:
        realm, rng = self.realm, self.rng
        vocab = realm.vocabulary
        by_kind: dict[str, Samples] = {}
        overall = Samples()
        hits: list[int] = []
        conn = Connection(self.server.host, self.server.port)
        kinds = ["common word", "medium word", "rare word", "two words", "stream + word"]
        try:
            for i in range(self.args.searches):
                kind = kinds[i % len(kinds)]
                user = rng.choice(realm.users)
                narrow: list[dict[str, Any]] = []
                if kind == "common word":
                    term = vocab[rng.randrange(0, 20)]
                elif kind == "medium word":
                    term = vocab[rng.randrange(100, 500)]
                elif kind == "rare word":
                    term = vocab[rng.randrange(2000, len(vocab))]
                elif kind == "two words":
                    term = f"{vocab[rng.randrange(0, 100)]} {vocab[rng.randrange(100, 1000)]}"
                else:
                    s = rng.choice([s for s in realm.streams if user.id in s.subscribers])
                    narrow.append({"operator": "stream", "operand": s.id})
                    term = vocab[rng.randrange(20, 300)]
                narrow.append({"operator": "search", "operand": term})
                params = {
                    "anchor": "newest",
                    "num_before": self.args.search_page,
                    "num_after": 0,
                    "narrow": orjson.dumps(narrow).decode(),
                }
                samples = by_kind.setdefault(kind, Samples())
                before = len(samples.latencies)
                data = await timed(
                    conn, samples, "GET", get_path("/messages", params), auth=user.auth
                )
                if len(samples.latencies) > before:
                    overall.latencies.append(samples.latencies[-1])
                else:
                    overall.error(kind)
                if data is not None:
                    hits.append(len(data["messages"]))
        finally:
            conn.close()
        return {
            **overall.summary(),
            "num_before": self.args.search_page,
            "messages_per_response_avg": round(sum(hits) / max(1, len(hits)), 1),
            "by_kind": {k: v.summary() for k, v in by_kind.items()},
        }

    # POST /register

    async def register(self) -> dict[str, Any]:
        realm, rng = self.realm, self.rng
        samples = Samples()
        sizes: list[int] = []
        unread: list[int] = []
        conn = Connection(self.server.host, self.server.port)
        try:
            for _ in range(self.args.registers):
                user = rng.choice(realm.users)
                started = time.perf_counter()
                try:
                    response = await conn.request("POST", "/api/v1/register", auth=user.auth)
                except (OSError, ConnectionClosed) as exc:
                    conn.close()
                    samples.error(f"connection: {type(exc).__name__}")
                    continue
                if response.status != 200:
                    samples.error(f"{response.status} {response.body[:80]!r}")
                    continue
                samples.latencies.append(response.arrived - started)
                sizes.append(len(response.body))
                state = orjson.loads(response.body)
                unread.append(int((state.get("unread_msgs") or {}).get("count", 0)))
                queue_id = state["queue_id"]
                # Do not leave 1 queue per request behind (untimed).
                await conn.request(
                    "DELETE",
                    get_path("/events", {"queue_id": queue_id}),
                    auth=user.auth,
                    form={},
                )
        finally:
            conn.close()
        return {
            **samples.summary(),
            "response_kb_avg": round(sum(sizes) / max(1, len(sizes)) / 1024, 1),
            "unread_count_avg": round(sum(unread) / max(1, len(unread)), 1),
        }

    # POST /messages at a fixed rate

    def pick_send(self) -> tuple[str, SeedUser, dict[str, str]]:
        realm, rng = self.realm, self.rng
        words = rng.choices(realm.vocabulary, cum_weights=self.seeder.word_weights, k=12)
        content = " ".join(words)
        r = rng.random()
        if r < 0.10:
            if r < 0.075:
                sender, other = rng.sample(realm.users, 2)
                to = [other.id]
                kind = "direct 1:1"
            else:
                members = rng.choice(realm.groups)
                sender = realm.user(rng.choice(members))
                to = [m for m in members if m != sender.id]
                kind = "direct group"
            return (
                kind,
                sender,
                {"type": "direct", "to": orjson.dumps(to).decode(), "content": content},
            )
        big = [s for s in realm.streams if s.big]
        if r < 0.15 and big:
            s = rng.choice(big)
            kind = f"stream {len(s.subscribers)} subs"
        else:
            s = rng.choice([s for s in realm.streams if not s.big] or realm.streams)
            kind = "stream <=25 subs" if len(s.subscribers) <= 25 else "stream 26-50 subs"
        sender = realm.user(rng.choice(s.subscribers))
        if rng.random() < MENTION_SHARE:
            mentioned = realm.user(rng.choice(s.subscribers))
            content = f"@**{mentioned.full_name}** {content}"
        topic = rng.choices(s.topics, cum_weights=s.topic_weights)[0]
        form = {"type": "stream", "to": str(s.id), "topic": topic, "content": content}
        return kind, sender, form

    async def send_at_rate(self) -> dict[str, Any]:
        args = self.args
        total = max(1, round(args.send_rate * args.duration))
        pool: asyncio.Queue[Connection] = asyncio.Queue()
        for _ in range(args.send_connections):
            pool.put_nowait(Connection(self.server.host, self.server.port))
        overall = Samples()
        by_kind: dict[str, Samples] = {}
        lateness: list[float] = []
        from_due: list[float] = []
        # Latencies by the second of the run they were due in: where the slow ones bunch.
        by_second: dict[int, list[float]] = {}
        # The first --send-warmup seconds of the same stream are sent but not counted: they
        # open the connections (the client's, and the server's database pool up to its
        # size, each preparing its statements), which a running server has done long ago.
        warmup = round(args.send_rate * args.send_warmup)
        planned = [self.pick_send() for _ in range(warmup + total)]

        async def send(kind: str, sender: SeedUser, form: dict[str, str], due: float) -> None:
            conn = await pool.get()
            if due < t0:
                try:
                    await timed(conn, Samples(), "POST", "/messages", auth=sender.auth, form=form)
                finally:
                    pool.put_nowait(conn)
                return
            try:
                lateness.append(time.perf_counter() - due)
                samples = by_kind.setdefault(kind, Samples())
                before = len(samples.latencies)
                await timed(conn, samples, "POST", "/messages", auth=sender.auth, form=form)
                if len(samples.latencies) > before:
                    overall.latencies.append(samples.latencies[-1])
                    from_due.append(time.perf_counter() - due)
                    by_second.setdefault(int(due - t0), []).append(samples.latencies[-1])
                else:
                    overall.error(kind)
            finally:
                pool.put_nowait(conn)

        tasks = []
        t0 = time.perf_counter() + 0.1 + warmup / args.send_rate
        for i, (kind, sender, form) in enumerate(planned):
            due = t0 + (i - warmup) / args.send_rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.ensure_future(send(kind, sender, form, due)))
        await asyncio.gather(*tasks)
        wall = time.perf_counter() - t0
        while not pool.empty():
            pool.get_nowait().close()
        return {
            **overall.summary(),
            "target_rate": args.send_rate,
            "achieved_rate": round(len(overall.latencies) / wall, 1),
            "duration_s": args.duration,
            "warmup_s": args.send_warmup,
            "connections": args.send_connections,
            # Open-loop view: from when the request was due (includes waiting for one of
            # the connections when the server falls behind).
            "from_schedule": latency_summary(from_due),
            "start_lateness_p99_ms": ms(sorted(lateness)[int(0.99 * (len(lateness) - 1))]),
            "max_ms_by_second": [ms(max(by_second[k])) for k in sorted(by_second)],
            "by_kind": {k: v.summary() for k, v in sorted(by_kind.items())},
        }

    async def send_serial(self) -> dict[str, Any]:
        """The same mix one request at a time: the cost of a send without queueing."""
        overall = Samples()
        conn = Connection(self.server.host, self.server.port)
        try:
            for _ in range(self.args.serial_sends):
                _kind, sender, form = self.pick_send()
                await timed(conn, overall, "POST", "/messages", auth=sender.auth, form=form)
        finally:
            conn.close()
        return overall.summary()

    # delivery to long-polling clients

    async def delivery(self) -> dict[str, Any]:
        args, realm, rng = self.args, self.realm, self.rng
        pid = self.server.pid
        target = max(realm.streams, key=lambda s: len(s.subscribers))
        users = [realm.user(uid) for uid in target.subscribers][: args.pollers]
        clients = [PollClient(index=i, auth=u.auth) for i, u in enumerate(users)]
        form = {"event_types": '["message"]', "fetch_event_types": "[]"}
        todo = iter(clients)
        reg = Samples()

        async def register_worker() -> None:
            conn = Connection(self.server.host, self.server.port)
            try:
                for client in todo:
                    data = await timed(conn, reg, "POST", "/register", auth=client.auth, form=form)
                    if data is None:
                        client.dead = True
                        continue
                    client.queue_id = data["queue_id"]
                    client.last_event_id = data["last_event_id"]
            finally:
                conn.close()

        await asyncio.gather(*(register_worker() for _ in range(50)))
        clients = [c for c in clients if not c.dead]
        poller = Poller(self.server.host, self.server.port, 500)
        await poller.arm_all(clients, 0, pid)
        await wait_until_quiet(pid)
        await asyncio.sleep(1.0)
        rss_polls = tree_rss_mb(pid)
        overall: list[float] = []
        rounds: list[dict[str, Any]] = []
        errors = 0
        sender_conn = Connection(self.server.host, self.server.port)
        try:
            for number in range(1, args.deliveries + 1):
                await poller.settle_early_replies(clients)
                live = [c for c in clients if not c.dead and c.pending is not None]
                marker = f"deliverymark{number}x{rng.randrange(10**9)}"
                sender = realm.user(rng.choice(target.subscribers))
                waits = [asyncio.ensure_future(self.wait_for(poller, c, marker)) for c in live]
                await asyncio.sleep(0)
                with client_collector_paused():
                    cpu0 = tree_cpu_seconds(pid)
                    t0 = time.perf_counter()
                    sent = await api_call(
                        sender_conn,
                        "POST",
                        "/messages",
                        auth=sender.auth,
                        form={
                            "type": "stream",
                            "to": str(target.id),
                            "topic": "delivery",
                            "content": f"{marker} {' '.join(rng.sample(realm.vocabulary, 8))}",
                        },
                    )
                    post_ms = ms(time.perf_counter() - t0)
                    done, not_done = await asyncio.wait(waits, timeout=args.round_timeout)
                    server_cpu = tree_cpu_seconds(pid) - cpu0
                    for w in not_done:
                        w.cancel()
                lat = [
                    arrived - t0
                    for w in done
                    if not w.cancelled()
                    and w.exception() is None
                    and (arrived := w.result()) is not None
                ]
                overall.extend(lat)
                errors += len(live) - len(lat)
                summary = {
                    "round": number,
                    **latency_summary(lat),
                    "received": len(lat),
                    "expected": len(live),
                    "post_ms": post_ms,
                    "message_id": sent.get("id"),
                    "server_cpu_ms": ms(server_cpu),
                }
                rounds.append(summary)
                log(
                    f"delivery {number}: {len(lat)}/{len(live)}; p50 {summary['p50_ms']} "
                    f"p99 {summary['p99_ms']} max {summary['max_ms']} ms; POST {post_ms} ms"
                )
                rearm = [
                    c
                    for c, w in zip(live, waits, strict=True)
                    if w in done and not w.cancelled() and w.exception() is None and w.result()
                ]
                await poller.arm_all(rearm, 0, pid)
                await wait_until_quiet(pid)
                await asyncio.sleep(0.5)
        finally:
            sender_conn.close()
            for c in clients:
                if c.pending is not None and not c.pending.done():
                    c.pending.cancel()
                if c.conn is not None:
                    c.conn.close()
            await asyncio.sleep(0.2)
        return {
            "count": len(overall),
            **latency_summary(overall),
            "errors": errors,
            "pollers": len(clients),
            "stream_subscribers": len(target.subscribers),
            "register_p99_ms": reg.summary()["p99_ms"],
            "rss_with_polls_mb": round(rss_polls, 1),
            "rounds": rounds,
        }

    @staticmethod
    async def wait_for(poller: Poller, client: PollClient, marker: str) -> float | None:
        """When the message carrying ``marker`` reached ``client``; None on error."""
        while True:
            try:
                response = await poller.next_response(client)
            except ConnectionClosed as exc:
                client.errors.append(f"connection: {exc}")
                return None
            events = poller.absorb(client, response)
            if client.dead:
                return None
            if response.status != 200:
                await asyncio.sleep(1.0)
                await poller.arm(client)
                continue
            for event in events:
                if event.get("type") == "message" and marker in event["message"]["content"]:
                    return response.arrived
            await poller.arm(client)

    async def measure(self) -> dict[str, Any]:
        r: dict[str, Any] = {}
        r["fetch_topic"] = await self.phase("GET /messages stream+topic", self.fetch_topics)
        r["search"] = await self.phase("GET /messages search", self.search)
        r["register"] = await self.phase("POST /register", self.register)
        r["send_serial"] = await self.phase("POST /messages, one at a time", self.send_serial)
        await wait_until_quiet(self.server.pid)
        r["send"] = await self.phase("POST /messages", self.send_at_rate)
        await wait_until_quiet(self.server.pid)
        r["delivery"] = await self.phase("delivery to long-polls", self.delivery)
        return r


# --- putting it together ------------------------------------------------------------------


def budgets(r: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, budget in BUDGETS_MS.items():
        p99 = r["endpoints"][key]["p99_ms"]
        out[key] = {"p99_ms": p99, "budget_ms": budget, "ok": p99 is not None and p99 <= budget}
    # Restarted on the seeded realm (a first start also runs the migrations).
    idle = r["memory"]["idle_rss_seeded_mb"]
    out["idle_rss"] = {
        "mb": idle,
        "budget_mb": IDLE_RSS_BUDGET_MB,
        "ok": idle <= IDLE_RSS_BUDGET_MB,
    }
    out["full_scale"] = args.scale == 1.0
    return out


async def seed(args: argparse.Namespace, r: dict[str, Any], server: Server, seeder: Seeder) -> None:
    """Steps 1 and 2: users, streams and subscriptions through the API of a fresh server
    (its idle RSS recorded), then the messages straight into the database."""
    server.start()
    await server.wait_ready()
    await asyncio.sleep(1.0)
    r["memory"]["idle_rss_empty_mb"] = round(tree_rss_mb(server.pid), 1)
    owner = basic_auth(*server.owner_credentials())
    seed_started = time.monotonic()
    with seeder.progress:
        await seeder.through_api(owner)
        api_s = time.monotonic() - seed_started
        server.stop()
        shutil.move(server.stderr_path, server.workdir / "serve-seed.stderr")
        r["seed"] = await seeder.messages()
    r["seed"]["api_s"] = round(api_s, 1)
    r["seed"]["total_s"] = round(time.monotonic() - seed_started, 1)
    if not args.database_url:
        db_file = server.workdir / "data" / "hubbub.db"
        r["seed"]["sqlite_file_mb"] = round(db_file.stat().st_size / 2**20, 1)
    log(f"seeded in {r['seed']['total_s']} s: {r['seed']}")


async def amain(args: argparse.Namespace, workdir: Path) -> tuple[dict[str, Any], Server]:
    sizes = Sizes.from_args(args)
    server = Server(args, workdir)
    seeder = Seeder(args, server, sizes)
    r: dict[str, Any] = {
        **result_header(),
        "config": {
            "scale": args.scale,
            "seed": args.seed,
            "users": sizes.users,
            "streams": sizes.streams,
            "big_streams": sizes.big_streams,
            "messages": sizes.messages,
            "direct_message_groups": sizes.groups,
            **backend_config(args),
            "workers": args.workers,
            "send_rate": args.send_rate,
            "duration_s": args.duration,
            "pollers": args.pollers,
        },
    }
    memory: dict[str, Any] = {}
    r["memory"] = memory
    saved = workdir / "realm.json"
    try:
        if saved.exists():  # --keep DIR: the realm seeded there (by this or bench/load.py)
            seeder.realm = load_realm(saved)
            r["seed"] = {"reused": str(workdir)}
            log(f"reusing the realm seeded in {workdir}")
        else:
            await seed(args, r, server, seeder)
            save_realm(seeder.realm, saved)

        # 3. the server again, on the seeded database
        server.start()
        r["server"] = {"startup_s": round(await server.wait_ready(), 2)}
        await asyncio.sleep(2.0)
        pid = server.pid
        cpu_start = tree_cpu_seconds(pid)
        memory["idle_rss_seeded_mb"] = round(tree_rss_mb(pid), 1)
        log(f"server pid {pid}; idle RSS {memory['idle_rss_seeded_mb']} MB")
        bench = Bench(args, server, seeder)
        r["endpoints"] = await bench.measure()
        r["phases"] = bench.phases
        memory["rss_end_mb"] = round(tree_rss_mb(pid), 1)
        memory["peak_rss_mb"] = round(tree_peak_rss_mb(pid), 1)
        r["server_cpu_s"] = round(tree_cpu_seconds(pid) - cpu_start, 2)
    finally:
        server.stop()
        with contextlib.suppress(Exception):
            await server.drop_redis_keys()
    r["server_log_problems"] = server.problems()
    r["budgets"] = budgets(r, args)
    return r, server


ROWS = [
    ("POST /messages", "send"),
    ("POST /messages, one at a time", "send_serial"),
    ("delivery to long-polls", "delivery"),
    ("GET /messages stream+topic", "fetch_topic"),
    ("GET /messages search", "search"),
    ("POST /register", "register"),
]


# A client that starts its sends this late (p99) was itself held up: the whole machine
# stalled, and the run says nothing about the server.
CLIENT_STALL_MS = 20.0


def print_table(r: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    cfg, mem = r["config"], r["memory"]
    table = Table(
        title=f"{cfg['users']} users, {cfg['streams']} streams, {cfg['messages']:,} messages; "
        f"{cfg['database']}, {cfg['bus']} bus"
    )
    for column in (
        "endpoint",
        "count",
        "p50",
        "p95",
        "p99",
        "max",
        "budget",
        "errors",
        "CPU",
        "RSS",
    ):
        table.add_column(column, justify="left" if column == "endpoint" else "right")
    for label, key in ROWS:
        e = r["endpoints"][key]
        p = r["phases"][label]
        b = r["budgets"].get(key)
        table.add_row(
            label,
            str(e["count"]),
            f"{e['p50_ms']}",
            f"{e['p95_ms']}",
            f"{e['p99_ms']}",
            f"{e['max_ms']}",
            f"{b['budget_ms']:.0f} {'ok' if b['ok'] else 'MISSED'}" if b else "-",
            str(e["errors"]),
            f"{p['server_cpu_s']} s ({p['server_cpu_pct']}%)",
            f"{p['rss_after_mb']} MB",
        )
    Console(width=150).print(table)
    s = r["endpoints"]["send"]
    print(
        f"  POST /messages: {s['achieved_rate']}/s of {s['target_rate']}/s; from schedule "
        f"p50 {s['from_schedule']['p50_ms']} p99 {s['from_schedule']['p99_ms']} ms; by kind:"
    )
    for kind, v in s["by_kind"].items():
        print(f"    {kind:<20} {v['count']:>6}  p50 {v['p50_ms']}  p99 {v['p99_ms']}")
    late = s["start_lateness_p99_ms"]
    print(
        f"  sends started late by this client: p99 {late} ms"
        + (
            " (past 20 ms: this client's own loop stalled too, so the run's tail is the"
            " machine's, not only the server's)"
            if late > CLIENT_STALL_MS
            else ""
        )
    )
    print(
        "  search by kind (p99 ms): "
        + ", ".join(f"{k} {v['p99_ms']}" for k, v in r["endpoints"]["search"]["by_kind"].items())
    )
    print(
        f"  idle RSS: empty {mem.get('idle_rss_empty_mb', '-')} MB, "
        f"seeded {mem['idle_rss_seeded_mb']} MB "
        f"(budget {IDLE_RSS_BUDGET_MB:.0f}); end {mem['rss_end_mb']} MB, "
        f"peak {mem['peak_rss_mb']} MB"
    )
    print(f"  seeding: {r['seed']}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiplies users/streams/messages"
    )
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--send-rate", type=float, default=200.0, help="POST /messages per second")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of sending")
    parser.add_argument("--send-connections", type=int, default=64)
    parser.add_argument(
        "--send-warmup", type=float, default=2.0, help="seconds of sends before the counted ones"
    )
    parser.add_argument("--serial-sends", type=int, default=200, help="sends one at a time")
    parser.add_argument("--pollers", type=int, default=1000, help="long-polling clients")
    parser.add_argument("--deliveries", type=int, default=10, help="messages to the pollers")
    parser.add_argument("--round-timeout", type=float, default=60.0)
    parser.add_argument("--fetches", type=int, default=300, help="stream+topic fetches")
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--search-page", type=int, default=50, help="num_before of searches")
    parser.add_argument("--registers", type=int, default=200)
    parser.add_argument("--database-url", default="", help="passed to hubbub serve")
    parser.add_argument("--redis-url", default="", help="passed to hubbub serve")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="passed to hubbub serve (PostgreSQL + Redis); CPU and memory are then the sums",
    )
    parser.add_argument("--json", type=Path, help="default bench/results/messages-<scale>.json")
    parser.add_argument(
        "--keep", type=Path, help="seed into (or reuse) this directory, as bench/load.py does"
    )
    args = parser.parse_args(argv)
    if args.scale <= 0 or args.send_rate <= 0 or args.duration <= 0:
        parser.error("--scale, --send-rate and --duration must be positive")
    if args.workers > 1 and not (args.database_url and args.redis_url):
        parser.error("--workers above 1 needs --database-url (PostgreSQL) and --redis-url")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    raise_nofile_limit()
    suffix = "-postgresql" if args.database_url.startswith("postgres") else ""
    suffix += f"-w{args.workers}" if args.workers > 1 else ""
    json_path = args.json or RESULTS_DIR / f"messages-{args.scale:g}{suffix}.json"
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="hubbub-bench-msgs-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result, _ = run_and_save(lambda: amain(args, workdir), json_path)
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print_table(result)
    print(f"wrote {json_path}")
    if result["server_log_problems"]:
        print("server log (count: line):")
        for line, count in list(result["server_log_problems"].items())[:15]:
            print(f"  {count:6d}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
