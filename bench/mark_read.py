"""Mark-read benchmark: one user with 50,000 unread messages marks them read.

Runs the app in-process (httpx's ASGITransport, no HTTP server), on a fresh SQLite database
in a temporary directory or, with ``--database-url``, on an empty PostgreSQL database. It
seeds a realm with ``--users`` members of one stream, bulk-inserts ``--history`` old
messages (read by everyone) and ``--messages`` new ones (unread for the reader, read for
the others), then, ``--rounds`` times:

- ``POST /mark_all_as_read`` (one request);
- the new messages are made unread again (untimed);
- ``POST /messages/flags/narrow`` over the stream, as a client walks a long range: anchor
  ``first_unread``, ``num_after=5000`` (the server's bound), then on from
  ``last_processed_id`` with ``include_anchor=false`` until ``found_newest``;
- unread again.

    .venv/bin/python bench/mark_read.py
    psql -h 127.0.0.1 -U postgres -d test -c 'CREATE DATABASE hubbub_bench_read'
    .venv/bin/python bench/mark_read.py \
        --database-url postgresql://postgres@127.0.0.1/hubbub_bench_read
    psql -h 127.0.0.1 -U postgres -d test -c 'DROP DATABASE hubbub_bench_read'

See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import sqlalchemy as sa
from longpoll import RESULTS_DIR, git_commit, log, redacted

from hubbub.actions.message_recipients import stream_recipient_id
from hubbub.actions.realms import do_create_realm
from hubbub.actions.streams import StreamOptions, bulk_add_subscriptions, do_create_stream
from hubbub.actions.users import check_create_user
from hubbub.app import create_app
from hubbub.db.dialects import user_message_settled, user_message_tables
from hubbub.db.engine import Database
from hubbub.db.migrate import upgrade
from hubbub.db.tables import message, user_message
from hubbub.models import Role, User
from hubbub.services import Services, build_services
from hubbub.settings import Settings

READ = 1
BATCH = 10_000  # messages per seeding transaction
BUDGET_MS = 1000.0  # DESIGN.md §9: marking 50,000 messages read


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50_000, help="unread messages")
    parser.add_argument("--history", type=int, default=50_000, help="older, read messages")
    parser.add_argument("--users", type=int, default=10, help="stream subscribers")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database-url", default="", help="an empty PostgreSQL database")
    parser.add_argument("--json", type=Path, default=None)
    return parser.parse_args(argv)


class Bench:
    def __init__(self, args: argparse.Namespace, services: Services) -> None:
        self.args = args
        self.services = services
        self.app = create_app(services.settings, services=services)
        self.reader: User | None = None
        self.stream_name = "bench"
        self.new_ids: tuple[int, int] = (0, 0)

    async def seed(self) -> dict[str, Any]:
        args, services = self.args, self.services
        started = time.perf_counter()
        now = time.time()
        async with services.db.write() as conn:
            realm = await do_create_realm(conn, subdomain="", name="Bench", now=now)
        users = []
        for i in range(args.users):
            async with services.write() as tx:
                users.append(
                    await check_create_user(
                        tx,
                        realm,
                        email=f"user{i}@bench.example.com",
                        full_name=f"Bench User {i}",
                        password=None,
                        role=Role.OWNER if i == 0 else Role.MEMBER,
                        bot_type=None,
                        bot_owner_id=None,
                        now=now,
                    )
                )
        async with services.write() as tx:
            target = await do_create_stream(
                tx, realm, self.stream_name, StreamOptions(), description="", now=now
            )
            await bulk_add_subscriptions(tx, realm, [target], users)
            recipient_id = await stream_recipient_id(tx.conn, target.id)
            next_id = int(await tx.conn.scalar(sa.select(sa.func.max(message.c.id))) or 0) + 1
        self.reader = users[0]
        sender = users[-1].id
        total = args.history + args.messages
        for start in range(0, total, BATCH):
            count = min(BATCH, total - start)
            msg_rows, um_rows = [], []
            for n in range(start, start + count):
                mid = next_id + n
                msg_rows.append(
                    {
                        "id": mid,
                        "realm_id": realm.id,
                        "sender_id": sender,
                        "recipient_id": recipient_id,
                        "topic": f"topic {n % 50}",
                        "content": f"message {n}",
                        "rendered_content": f"<p>message {n}</p>",
                        "rendered_content_version": 1,
                        "date_sent": now - total + n,
                        "sending_client": "bench",
                    }
                )
                unread_for_reader = n >= args.history
                for user in users:
                    flags = 0 if user.id == self.reader.id and unread_for_reader else READ
                    um_rows.append({"user_profile_id": user.id, "message_id": mid, "flags": flags})
            await insert_rows(services.db, msg_rows, um_rows)
        self.new_ids = (next_id + args.history, next_id + total - 1)
        async with services.db.write() as conn:
            if services.db.dialect_name == "postgresql":
                await conn.exec_driver_sql(
                    "SELECT setval(pg_get_serial_sequence('message', 'id'),"
                    " (SELECT max(id) FROM message))"
                )
        await analyze(services.db)
        return {
            "messages": total,
            "user_message_rows": total * len(users),
            "unread_rows": args.messages,
            "seconds": round(time.perf_counter() - started, 1),
        }

    def client(self) -> httpx.AsyncClient:
        assert self.reader is not None
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app),
            base_url="http://localhost",
            auth=(self.reader.delivery_email, self.reader.api_key),
            headers={"User-Agent": "HubbubBench/1.0"},
        )

    async def unread_count(self) -> int:
        assert self.reader is not None
        async with self.services.db.read() as conn:
            return int(
                await conn.scalar(
                    sa.select(sa.func.count())
                    .select_from(user_message)
                    .where(
                        user_message.c.user_profile_id == self.reader.id,
                        user_message.c.flags.op("&")(READ) == 0,
                    )
                )
                or 0
            )

    async def make_unread(self) -> None:
        assert self.reader is not None
        first, last = self.new_ids
        async with self.services.db.write() as conn:
            for table in user_message_tables(conn):  # SQLite's two (migration 0019)
                await conn.execute(
                    sa.update(table)
                    .where(
                        table.c.user_profile_id == self.reader.id,
                        table.c.message_id.between(first, last),
                    )
                    .values(flags=table.c.flags.op("&")(~READ))
                )
        await analyze(self.services.db)
        assert await self.unread_count() == self.args.messages

    async def mark_all(self, http: httpx.AsyncClient) -> float:
        started = time.perf_counter()
        response = await http.post("/api/v1/mark_all_as_read")
        elapsed = time.perf_counter() - started
        body = response.json()
        assert response.status_code == 200 and body["complete"] is True, body
        assert await self.unread_count() == 0
        return elapsed

    async def narrow_walk(self, http: httpx.AsyncClient) -> dict[str, Any]:
        form: dict[str, str] = {
            "anchor": "first_unread",
            "num_before": "0",
            "num_after": "5000",
            "narrow": orjson.dumps([{"operator": "stream", "operand": self.stream_name}]).decode(),
            "op": "add",
            "flag": "read",
        }
        times: list[float] = []
        updated = processed = 0
        started = time.perf_counter()
        while True:
            t0 = time.perf_counter()
            response = await http.post("/api/v1/messages/flags/narrow", data=form)
            times.append(time.perf_counter() - t0)
            body = response.json()
            assert response.status_code == 200, body
            updated += body["updated_count"]
            processed += body["processed_count"]
            if body["found_newest"] or body["last_processed_id"] is None:
                break
            form.update(anchor=str(body["last_processed_id"]), include_anchor="false")
        total = time.perf_counter() - started
        assert updated == self.args.messages, (updated, processed)
        assert await self.unread_count() == 0
        return {
            "total_s": total,
            "requests": len(times),
            "updated": updated,
            "processed": processed,
            "per_request_ms": [round(t * 1000, 1) for t in times],
        }

    async def run(self) -> dict[str, Any]:
        rounds = []
        async with self.client() as http:
            for number in range(1, self.args.rounds + 1):
                mark_all = await self.mark_all(http)
                await self.make_unread()
                walk = await self.narrow_walk(http)
                await self.make_unread()
                log(
                    f"round {number}: mark_all_as_read {mark_all * 1000:.0f} ms; "
                    f"flags/narrow {walk['total_s'] * 1000:.0f} ms in {walk['requests']} requests"
                )
                rounds.append({"mark_all_as_read_s": mark_all, "flags_narrow": walk})
        return {"rounds": rounds}


async def insert_rows(
    db: Database, msg_rows: list[dict[str, Any]], um_rows: list[dict[str, Any]]
) -> None:
    async with db.write() as conn:
        if db.dialect_name == "postgresql":
            # COPY: far faster than executemany through asyncpg.
            await conn.execute(sa.text("SELECT 1"))  # opens the transaction
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None
            settled = user_message_settled(conn)  # user_message is a view (migration 0021)
            for table, rows in ((message, msg_rows), (settled, um_rows)):
                await raw.copy_records_to_table(
                    table.name, records=[tuple(r.values()) for r in rows], columns=list(rows[0])
                )
        else:
            await conn.execute(sa.insert(message), msg_rows)
            await conn.execute(sa.insert(user_message_settled(conn)), um_rows)


async def analyze(db: Database) -> None:
    """Fresh planner statistics, as autovacuum (PostgreSQL) or ``PRAGMA optimize`` would
    soon give a real database after such a bulk change."""
    async with db.engine.connect() as conn:
        if db.dialect_name == "postgresql":
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql("ANALYZE user_message_rows")
            await conn.exec_driver_sql("ANALYZE message")
        else:
            await conn.exec_driver_sql("ANALYZE")
            await conn.commit()


def summary(result: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    mark_all = [r["mark_all_as_read_s"] * 1000 for r in result["rounds"]]
    walks = [r["flags_narrow"]["total_s"] * 1000 for r in result["rounds"]]
    per_request = [t for r in result["rounds"] for t in r["flags_narrow"]["per_request_ms"]]
    return {
        "mark_all_as_read_ms": {"median": statistics.median(mark_all), "max": max(mark_all)},
        "flags_narrow_total_ms": {"median": statistics.median(walks), "max": max(walks)},
        "flags_narrow_request_ms": {
            "median": statistics.median(per_request),
            "max": max(per_request),
        },
        "budget_ms": BUDGET_MS * args.messages / 50_000,
    }


def print_table(report: dict[str, Any]) -> None:
    s = report["summary"]
    seed = report["seed"]
    print(
        f"\n{report['database']}: {seed['unread_rows']:,} unread of {seed['messages']:,} "
        f"messages, {seed['user_message_rows']:,} user_message rows"
    )
    for i, r in enumerate(report["rounds"], 1):
        walk = r["flags_narrow"]
        print(
            f"  round {i}: POST /mark_all_as_read {r['mark_all_as_read_s'] * 1000:7.1f} ms | "
            f"POST /messages/flags/narrow x{walk['requests']} {walk['total_s'] * 1000:7.1f} ms "
            f"(per request {min(walk['per_request_ms'])}-{max(walk['per_request_ms'])} ms)"
        )
    budget = s["budget_ms"]
    for name, key in (
        ("mark_all_as_read", "mark_all_as_read_ms"),
        ("flags/narrow, whole walk", "flags_narrow_total_ms"),
    ):
        verdict = "met" if s[key]["max"] <= budget else "NOT met"
        print(
            f"  {name}: median {s[key]['median']:.1f} ms, max {s[key]['max']:.1f} ms "
            f"(budget {budget:.0f} ms: {verdict})"
        )


async def amain(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    settings = Settings(data_dir=workdir, database_url=args.database_url, rate_limit=0)
    services = build_services(settings)
    try:
        await upgrade(services.db)
        await services.start()
        bench = Bench(args, services)
        log("seeding")
        seed = await bench.seed()
        log(f"seeded {seed['user_message_rows']:,} rows in {seed['seconds']} s")
        result = await bench.run()
    finally:
        await services.close()
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "python": platform.python_version(),
        "database": services.db.dialect_name,
        "database_url": redacted(args.database_url) if args.database_url else "sqlite (temp)",
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "seed": seed,
        **result,
    }
    report["summary"] = summary(result, args)
    return report


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hubbub-bench-read-") as tmp:
        report = asyncio.run(amain(args, Path(tmp)))
    print_table(report)
    suffix = "-postgresql" if report["database"] == "postgresql" else ""
    path = args.json or RESULTS_DIR / f"mark_read{suffix}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    log(f"wrote {path}")
    s = report["summary"]
    met = all(s[k]["max"] <= s["budget_ms"] for k in ("mark_all_as_read_ms",))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
