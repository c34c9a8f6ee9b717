"""The load benchmark: simulated active users against a seeded realm, ramped up until the
server is no longer healthy.

Seeds (or reuses, with ``--keep DIR``) the realm of ``bench/messages.py`` — 1,000 users, 100
streams, 1,000,000 messages at ``--scale 1`` — starts ``hubbub serve`` as a separate
process, and drives it from this one with simulated active users. Each user (a client of
one seeded account; above 1,000 users accounts get several clients, like several devices):

- registers an event queue and holds a long-poll on ``GET /events`` all the time;
- reports presence every minute;
- every ``--think`` seconds on average (exponentially distributed) does one of: read a
  topic (``GET /messages`` stream + topic, 100 messages), read a stream (50), read a
  direct-message conversation, search, send to one of its streams (rarely an all-users
  one), send a direct message, mark what it received as read, or reload (a full
  ``POST /register``, then ``DELETE /events`` of the old queue).

The ramp (``--active 250,500,1000,...``) adds users step by step; each step warms up, then
measures for ``--duration`` seconds: per endpoint the count, p50/p95/p99 and errors; the
time from each send until every listening client's long-poll returns it; the server's CPU
and resident memory (all its processes); the driver's own CPU. A step is healthy when the
average request takes at most 100 ms, the p99 at most 2 s and at most 0.025% of requests
fail (long-polls are not timed: they wait by design). The largest healthy step is the
result. Prints a table and writes JSON (default ``bench/results/load-<scale>[-db].json``).

    .venv/bin/python bench/load.py --scale 0.01 --active 20,50 --duration 20
    .venv/bin/python bench/load.py --keep /tmp/hubbub-load --active 250,500,1000,2000
    .venv/bin/python bench/load.py --keep /tmp/hubbub-load --pristine --active 2000
    .venv/bin/python bench/load.py --keep /tmp/hubbub-load-pg --pristine --active 1500 \\
        --database-url postgresql://postgres@127.0.0.1/hubbub_load \\
        --redis-url redis://127.0.0.1:6379/0   # the copy: database hubbub_load_pristine
    .venv/bin/python bench/load.py --scale 0.1 --workers 2 \\
        --database-url postgresql://postgres@127.0.0.1/hubbub_load \\
        --redis-url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import re
import shutil
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from longpoll import (
    RESULTS_DIR,
    Connection,
    ConnectionClosed,
    Response,
    Server,
    backend_config,
    basic_auth,
    bounded,
    latency_summary,
    log,
    raise_nofile_limit,
    result_header,
    run_and_save,
    tree_cpu_seconds,
    tree_rss_mb,
)
from messages import Realm, Seeder, SeedStream, SeedUser, Sizes, get_path, load_realm, save_realm

# Health, as the issue defines it.
HEALTHY_AVG_S = 0.100
HEALTHY_P99_S = 2.0
HEALTHY_ERROR_RATE = 0.00025
LAG_TICK_S = 0.01

# The mix of actions of an active user (relative weights).
MIX = {
    "read topic": 30,
    "read stream": 10,
    "read direct messages": 5,
    "search": 5,
    "send to stream": 14,
    "send direct message": 5,
    "mark as read": 28,
    "reload": 3,
}
LIGHT_EVENT_TYPES = [
    "message",
    "update_message",
    "delete_message",
    "update_message_flags",
    "reaction",
    "typing",
    "presence",
]
MARK = re.compile(r"loadmark(\d+x\d+)")


# --- what was measured ---------------------------------------------------------------------


@dataclass
class Step:
    """Everything measured while one step's window is open."""

    users: int
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, dict[str, int]] = field(default_factory=dict)
    polls: int = 0
    delivery: list[float] = field(default_factory=list)
    # How late the driver's own event loop ran a timer (``Load.watch_lag``): a response
    # that arrives while the driver is busy (a fan-out's 1,500 poll answers) is timed
    # when the driver gets to it, so a step whose lag is high says as much about the
    # driver as about the server.
    driver_lag: list[float] = field(default_factory=list)

    def ok(self, endpoint: str, seconds: float) -> None:
        self.latencies.setdefault(endpoint, []).append(seconds)

    def error(self, endpoint: str, text: str) -> None:
        kinds = self.errors.setdefault(endpoint, {})
        kinds[text] = kinds.get(text, 0) + 1

    def summary(self, wall_s: float) -> dict[str, Any]:
        endpoints: dict[str, Any] = {}
        for name in sorted(set(self.latencies) | set(self.errors)):
            values = self.latencies.get(name, [])
            errors = self.errors.get(name, {})
            endpoints[name] = {
                "count": len(values) + sum(errors.values()),
                "per_s": round((len(values) + sum(errors.values())) / wall_s, 2),
                "avg_ms": round(1000 * sum(values) / len(values), 2) if values else None,
                **latency_summary(values),
                "errors": sum(errors.values()),
                "error_kinds": dict(list(errors.items())[:5]),
            }
        timed = [v for values in self.latencies.values() for v in values]
        failed = sum(sum(kinds.values()) for kinds in self.errors.values())
        requests = len(timed) + failed + self.polls
        avg = sum(timed) / len(timed) if timed else 0.0
        p99 = latency_summary(timed)["p99_ms"] or 0.0
        error_rate = failed / requests if requests else 0.0
        return {
            "users": self.users,
            "endpoints": endpoints,
            "all_requests": {
                "count": len(timed) + failed,
                "per_s": round((len(timed) + failed) / wall_s, 1),
                "avg_ms": round(avg * 1000, 2),
                **latency_summary(timed),
                "errors": failed,
                "error_rate": round(error_rate, 6),
            },
            "long_polls_returned": self.polls,
            "delivery": {"count": len(self.delivery), **latency_summary(self.delivery)},
            "driver_lag": latency_summary(self.driver_lag),
            "healthy": avg <= HEALTHY_AVG_S
            and p99 <= HEALTHY_P99_S * 1000
            and error_rate <= HEALTHY_ERROR_RATE,
        }


def describe(response: Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return f"{response.status} (not JSON)"
    return f"{response.status} {data.get('code')} {str(data.get('msg'))[:60]}"


# --- one simulated user --------------------------------------------------------------------


class ActiveUser:
    def __init__(self, load: Load, index: int, user: SeedUser, streams: list[SeedStream]) -> None:
        self.load = load
        self.index = index
        self.user = user
        self.auth = user.auth
        self.streams = streams
        self.rng = random.Random(load.args.seed * 1_000_003 + index)
        host, port = load.server.host, load.server.port
        self.poll_conn = Connection(host, port)
        self.conn = Connection(host, port)
        self.lock = asyncio.Lock()  # one request at a time on ``conn``
        self.queue_id = ""
        self.last_event_id = -1
        self.received: deque[int] = deque(maxlen=100)
        self.sent = 0
        self.tasks: list[asyncio.Task[None]] = []

    async def call(
        self, endpoint: str, method: str, path: str, form: dict[str, Any] | None = None
    ) -> Any:
        """One request on the action connection; its latency or error is recorded."""
        encoded = (
            {k: v if isinstance(v, str) else orjson.dumps(v).decode() for k, v in form.items()}
            if form is not None
            else None
        )
        async with self.lock:
            started = time.perf_counter()
            try:
                response = await self.conn.request(
                    method, "/api/v1" + path, auth=self.auth, form=encoded
                )
            except (OSError, ConnectionClosed) as exc:
                self.conn.close()
                self.load.step.error(endpoint, f"connection: {type(exc).__name__}")
                return None
        data = response.json() if response.body else {}
        if response.status != 200 or data.get("result") != "success":
            self.load.step.error(endpoint, describe(response))
            return None
        self.load.step.ok(endpoint, response.arrived - started)
        return data

    async def register(self, endpoint: str, full: bool) -> bool:
        form: dict[str, Any] = {}
        if not full:
            # Connecting: events of every kind a client shows, a small initial state.
            form = {"event_types": LIGHT_EVENT_TYPES, "fetch_event_types": ["message"]}
        data = await self.call(endpoint, "POST", "/register", form)
        if data is None:
            return False
        old = self.queue_id
        self.queue_id, self.last_event_id = data["queue_id"], data["last_event_id"]
        if old and full:
            # A reloading client lets its old queue go.
            await self.call("DELETE /events", "DELETE", "/events", {"queue_id": old})
        return True

    async def start(self) -> bool:
        if not await self.register("POST /register (connect)", full=False):
            return False
        self.tasks = [
            asyncio.create_task(self.poll_loop()),
            asyncio.create_task(self.presence_loop()),
            asyncio.create_task(self.action_loop()),
        ]
        return True

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.poll_conn.close()
        self.conn.close()

    async def poll_loop(self) -> None:
        while True:
            queue_id = self.queue_id
            path = get_path("/events", {"queue_id": queue_id, "last_event_id": self.last_event_id})
            try:
                response = await self.poll_conn.request("GET", "/api/v1" + path, auth=self.auth)
            except (OSError, ConnectionClosed) as exc:
                self.poll_conn.close()
                self.load.step.error("GET /events", f"connection: {type(exc).__name__}")
                await asyncio.sleep(1.0)
                continue
            data = response.json()
            if response.status != 200 or data.get("result") != "success":
                if queue_id != self.queue_id:
                    continue  # the old queue of a reload, deleted on purpose
                self.load.step.error("GET /events", describe(response))
                if data.get("code") == "BAD_EVENT_QUEUE_ID":
                    await self.register("POST /register (connect)", full=False)
                else:
                    await asyncio.sleep(1.0)
                continue
            self.load.step.polls += 1
            for event in data["events"]:
                self.last_event_id = max(self.last_event_id, event["id"])
                if event["type"] != "message":
                    continue
                self.received.append(event["message"]["id"])
                mark = MARK.search(event["message"]["content"])
                sent_at = self.load.sent_at.get(mark.group(1)) if mark else None
                if sent_at is not None:
                    self.load.step.delivery.append(response.arrived - sent_at)

    async def presence_loop(self) -> None:
        await asyncio.sleep(self.rng.uniform(0, 60))
        while True:
            form = {"status": "active", "new_user_input": True}
            await self.call("POST /users/me/presence", "POST", "/users/me/presence", form)
            await asyncio.sleep(60)

    async def action_loop(self) -> None:
        actions, weights = list(MIX), list(MIX.values())
        while True:
            await asyncio.sleep(self.rng.expovariate(1 / self.load.args.think))
            action = self.rng.choices(actions, weights=weights)[0]
            await getattr(self, "do_" + action.replace(" ", "_"))()

    # the actions

    def stream(self, allow_big: bool = True) -> SeedStream:
        small = [s for s in self.streams if not s.big]
        if small and (not allow_big or self.rng.random() < 0.9):
            return self.rng.choice(small)
        return self.rng.choice(self.streams)

    async def fetch(self, endpoint: str, narrow: list[dict[str, Any]], count: int) -> None:
        params = {
            "anchor": "newest",
            "num_before": count,
            "num_after": 0,
            "narrow": orjson.dumps(narrow).decode(),
        }
        await self.call(endpoint, "GET", get_path("/messages", params))

    async def do_read_topic(self) -> None:
        s = self.stream()
        topic = self.rng.choices(s.topics, cum_weights=s.topic_weights)[0]
        narrow = [
            {"operator": "stream", "operand": s.id},
            {"operator": "topic", "operand": topic},
        ]
        await self.fetch("GET /messages stream+topic", narrow, 100)

    async def do_read_stream(self) -> None:
        narrow = [{"operator": "stream", "operand": self.stream().id}]
        await self.fetch("GET /messages stream", narrow, 50)

    async def do_read_direct_messages(self) -> None:
        other = self.rng.choice(self.load.realm.users)
        narrow = [{"operator": "dm", "operand": [other.id]}]
        await self.fetch("GET /messages dm", narrow, 50)

    async def do_search(self) -> None:
        vocabulary = self.load.realm.vocabulary
        word = vocabulary[min(len(vocabulary) - 1, int(self.rng.paretovariate(0.8)) * 5)]
        await self.fetch("GET /messages search", [{"operator": "search", "operand": word}], 50)

    def content(self) -> str:
        self.sent += 1
        token = f"{self.index}x{self.sent}"
        self.load.sent_at[token] = time.perf_counter()
        words = self.rng.choices(self.load.realm.vocabulary[:2000], k=self.rng.randint(3, 25))
        return " ".join(words) + f" loadmark{token}"

    async def do_send_to_stream(self) -> None:
        s = self.stream()
        topic = self.rng.choices(s.topics, cum_weights=s.topic_weights)[0]
        endpoint = "POST /messages all-users stream" if s.big else "POST /messages stream"
        form = {"type": "stream", "to": s.id, "topic": topic, "content": self.content()}
        await self.call(endpoint, "POST", "/messages", form)

    async def do_send_direct_message(self) -> None:
        others = [u.id for u in self.rng.sample(self.load.realm.users, self.rng.choice((1, 1, 2)))]
        others = [i for i in others if i != self.user.id] or [self.load.realm.users[0].id]
        form = {"type": "direct", "to": others, "content": self.content()}
        await self.call("POST /messages direct", "POST", "/messages", form)

    async def do_mark_as_read(self) -> None:
        if not self.received:
            await self.do_read_topic()
            return
        ids = list(self.received)
        self.received.clear()
        form = {"messages": ids, "op": "add", "flag": "read"}
        await self.call("POST /messages/flags", "POST", "/messages/flags", form)

    async def do_reload(self) -> None:
        await self.register("POST /register", full=True)


# --- the ramp ------------------------------------------------------------------------------


class Load:
    def __init__(self, args: argparse.Namespace, server: Server, realm: Realm) -> None:
        self.args = args
        self.server = server
        self.realm = realm
        self.step = Step(0)  # before the first window: a bin nobody reads
        self.sent_at: dict[str, float] = {}
        self.users: list[ActiveUser] = []
        subscribed: dict[int, list[SeedStream]] = {u.id: [] for u in realm.users}
        for s in realm.streams:
            for user_id in s.subscribers:
                subscribed[user_id].append(s)
        self.subscribed = subscribed

    async def grow(self, target: int) -> int:
        """Start users until ``target`` run; the number that failed to connect."""
        new = []
        for index in range(len(self.users), target):
            user = self.realm.users[index % len(self.realm.users)]
            streams = self.subscribed[user.id] or self.realm.streams[:1]
            new.append(ActiveUser(self, index, user, streams))
        started = await bounded(16, [u.start for u in new])
        self.users += [u for u, ok in zip(new, started, strict=True) if ok]
        return started.count(False)

    async def watch_lag(self, step: Step) -> None:
        """Record, every LAG_TICK_S, how late this process's loop woke a sleep."""
        while True:
            started = time.perf_counter()
            await asyncio.sleep(LAG_TICK_S)
            step.driver_lag.append(time.perf_counter() - started - LAG_TICK_S)

    async def run(self) -> list[dict[str, Any]]:
        steps = []
        pid = self.server.pid
        for target in self.args.ramp:
            log(f"step: {target} active users; connecting ...")
            failed = await self.grow(target)
            await asyncio.sleep(self.args.warmup)
            self.sent_at.clear()
            self.step = Step(len(self.users))
            wall, cpu, mine = time.monotonic(), tree_cpu_seconds(pid), time.process_time()
            watch = asyncio.create_task(self.watch_lag(self.step))
            await asyncio.sleep(self.args.duration)
            watch.cancel()
            wall_s = time.monotonic() - wall
            server_cpu = tree_cpu_seconds(pid) - cpu
            result = self.step.summary(wall_s)
            result.update(
                {
                    "failed_to_connect": failed,
                    "wall_s": round(wall_s, 1),
                    "server_cpu_pct": round(100 * server_cpu / wall_s, 1),
                    "server_rss_mb": round(tree_rss_mb(pid), 1),
                    "driver_cpu_pct": round(100 * (time.process_time() - mine) / wall_s, 1),
                }
            )
            steps.append(result)
            a = result["all_requests"]
            log(
                f"{target} users: {a['per_s']} req/s, avg {a['avg_ms']} ms, p99 {a['p99_ms']} "
                f"ms, errors {a['errors']}; delivery p99 {result['delivery']['p99_ms']} ms; "
                f"server CPU {result['server_cpu_pct']}%, RSS {result['server_rss_mb']} MB; "
                f"driver CPU {result['driver_cpu_pct']}%, lag p99 "
                f"{result['driver_lag']['p99_ms']} ms -> "
                f"{'healthy' if result['healthy'] else 'NOT healthy'}"
            )
            if not result["healthy"] and not self.args.keep_going:
                break
        self.step = Step(0)
        await bounded(64, [u.stop for u in self.users])
        return steps


# --- seeding or reusing the realm ----------------------------------------------------------


async def seed(args: argparse.Namespace, server: Server) -> tuple[Realm, dict[str, Any]]:
    seeder = Seeder(args, server, Sizes.from_args(args))
    server.start()
    await server.wait_ready()
    owner = basic_auth(*server.owner_credentials())
    started = time.monotonic()
    with seeder.progress:
        await seeder.through_api(owner)
        server.stop()
        info: dict[str, Any] = await seeder.messages()
    info["total_s"] = round(time.monotonic() - started, 1)
    return seeder.realm, info


async def amain(args: argparse.Namespace, workdir: Path) -> tuple[dict[str, Any], Server]:
    server = Server(args, workdir)
    saved = workdir / "realm.json"
    r: dict[str, Any] = {
        **result_header(),
        "config": {
            "scale": args.scale,
            "seed": args.seed,
            **backend_config(args),
            "workers": args.workers,
            "think_s": args.think,
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "mix": MIX,
            "health": {
                "avg_ms": HEALTHY_AVG_S * 1000,
                "p99_ms": HEALTHY_P99_S * 1000,
                "error_rate": HEALTHY_ERROR_RATE,
            },
        },
    }
    if saved.exists():
        realm = load_realm(saved)
        r["seed"] = {"reused": str(workdir)}
        log(f"reusing the realm seeded in {workdir}")
    else:
        realm, r["seed"] = await seed(args, server)
        save_realm(realm, saved)
        log(f"seeded in {r['seed']['total_s']} s")
    if args.pristine:
        r["seed"]["pristine"] = (
            await start_pristine_postgresql(args.database_url)
            if args.database_url
            else start_pristine(workdir)
        )
    r["config"].update(
        {"users": len(realm.users), "streams": len(realm.streams), "messages": args.messages}
    )
    try:
        server.start()
        await server.wait_ready()
        await asyncio.sleep(2.0)
        r["idle_rss_mb"] = round(tree_rss_mb(server.pid), 1)
        r["steps"] = await Load(args, server, realm).run()
    finally:
        server.stop()
        with contextlib.suppress(Exception):
            await server.drop_redis_keys()
    healthy = [s["users"] for s in r["steps"] if s["healthy"]]
    r["largest_healthy_users"] = max(healthy) if healthy else 0
    r["server_log_problems"] = server.problems()
    return r, server


def start_pristine(workdir: Path) -> str:
    """``--pristine``: the SQLite data directory as it was at the first run with the
    option (kept in ``DIR/pristine``), so that every run starts from the same realm. Each
    run adds its messages and their unread rows, and over a dozen runs the realm grew
    slow enough to hide a change's effect (bench/results/caches.md, *The realm's people
    kept*). Called with no server running: the files are then a consistent copy."""
    data, pristine = workdir / "data", workdir / "pristine"
    if not pristine.exists():
        shutil.copytree(data, workdir / "pristine.partial")
        (workdir / "pristine.partial").rename(pristine)
        log(f"kept the realm as it is now in {pristine}")
        return "kept"
    shutil.rmtree(data)
    shutil.copytree(pristine, data)
    log(f"restored the realm from {pristine}")
    return "restored"


async def start_pristine_postgresql(database_url: str) -> str:
    """``--pristine`` on PostgreSQL: the database as it was at the first run with the
    option, kept as the database ``<name>_pristine`` (a template copy, made and restored
    with ``CREATE DATABASE ... TEMPLATE``, which copies the files). Sessions still
    connected to the database being copied or dropped are ended first: a template
    cannot be copied while in use. The event queues live in Redis, whose keys each run
    drops at its end (``Server.drop_redis_keys``)."""
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url
    from sqlalchemy.ext.asyncio import create_async_engine

    from hubbub.db.engine import normalize_url

    url = make_url(normalize_url(database_url))
    name = url.database
    if not name:
        raise SystemExit("--pristine needs a database name in --database-url")
    copy = f"{name}_pristine"
    engine = create_async_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")

    def quoted(identifier: str) -> str:
        return '"' + identifier.replace('"', '""') + '"'

    try:
        async with engine.connect() as conn:
            version = int(await conn.scalar(sa.text("SHOW server_version_num")) or 0)
            # PostgreSQL 15 copies a template through the WAL by default: slow for a
            # realm of gigabytes. FILE_COPY checkpoints and copies the files.
            strategy = " STRATEGY FILE_COPY" if version >= 150000 else ""

            found = await conn.scalar(
                sa.text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": copy}
            )
            started = time.monotonic()
            # A database in use cannot be copied or dropped.
            await conn.execute(
                sa.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": name},
            )
            if not found:
                await conn.exec_driver_sql(
                    f"CREATE DATABASE {quoted(copy)} TEMPLATE {quoted(name)}{strategy}"
                )
                log(f"kept the realm as it is now in database {copy} ({elapsed(started)})")
                return "kept"
            await conn.exec_driver_sql(f"DROP DATABASE {quoted(name)}")
            await conn.exec_driver_sql(
                f"CREATE DATABASE {quoted(name)} TEMPLATE {quoted(copy)}{strategy}"
            )
            log(f"restored the realm from database {copy} ({elapsed(started)})")
            return "restored"
    finally:
        await engine.dispose()


def elapsed(started: float) -> str:
    return f"{time.monotonic() - started:.1f} s"


def print_table(r: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    cfg = r["config"]
    console = Console(width=160)
    for step in r["steps"]:
        table = Table(
            title=f"{step['users']} active users — {cfg['users']} accounts, {cfg['database']}, "
            f"{cfg['bus']} bus, {cfg['workers']} worker(s): "
            f"{'healthy' if step['healthy'] else 'NOT healthy'}"
        )
        for column in ("endpoint", "count", "/s", "avg", "p50", "p95", "p99", "max", "errors"):
            table.add_column(column, justify="left" if column == "endpoint" else "right")
        rows = [*step["endpoints"].items(), ("all requests", step["all_requests"])]
        for name, e in rows:
            table.add_row(
                name,
                str(e["count"]),
                str(e["per_s"]),
                str(e["avg_ms"]),
                str(e["p50_ms"]),
                str(e["p95_ms"]),
                str(e["p99_ms"]),
                str(e["max_ms"]),
                str(e["errors"]),
            )
        d = step["delivery"]
        table.add_row(
            "send -> long-poll delivery",
            str(d["count"]),
            "",
            "",
            str(d["p50_ms"]),
            str(d["p95_ms"]),
            str(d["p99_ms"]),
            str(d["max_ms"]),
            "",
        )
        console.print(table)
        print(
            f"  long-polls returned {step['long_polls_returned']}; server CPU "
            f"{step['server_cpu_pct']}%, RSS {step['server_rss_mb']} MB; driver CPU "
            f"{step['driver_cpu_pct']}% (its loop late p50 {step['driver_lag']['p50_ms']} / p99 "
            f"{step['driver_lag']['p99_ms']} ms)"
        )
    print(f"idle RSS {r['idle_rss_mb']} MB; largest healthy: {r['largest_healthy_users']} users")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the realm's size")
    parser.add_argument("--users", type=int, default=1000, help="accounts seeded (x scale)")
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--active",
        default="250,500,1000,1500,2000,3000",
        help="active users at each step of the ramp (comma-separated)",
    )
    parser.add_argument("--duration", type=float, default=60.0, help="seconds measured per step")
    parser.add_argument("--warmup", type=float, default=15.0, help="seconds before measuring")
    parser.add_argument("--think", type=float, default=20.0, help="mean seconds between actions")
    parser.add_argument("--keep-going", action="store_true", help="past an unhealthy step")
    parser.add_argument("--keep", type=Path, help="seed into (or reuse) this directory")
    parser.add_argument(
        "--pristine",
        action="store_true",
        help="with --keep: start every run from the realm as the first such run found it"
        " (SQLite: a copy in DIR/pristine; PostgreSQL: the database <name>_pristine)",
    )
    parser.add_argument("--workers", type=int, default=1, help="passed to hubbub serve")
    parser.add_argument("--database-url", default="", help="passed to hubbub serve")
    parser.add_argument("--redis-url", default="", help="passed to hubbub serve")
    parser.add_argument("--json", type=Path, help="default bench/results/load-<scale>.json")
    args = parser.parse_args(argv)
    args.ramp = [int(n) for n in args.active.split(",")]
    if min(args.ramp) <= 0 or args.scale <= 0 or args.think <= 0:
        parser.error("--active, --scale and --think must be positive")
    if args.pristine and args.keep is None:
        parser.error("--pristine needs --keep")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    raise_nofile_limit()
    suffix = "-postgresql" if args.database_url.startswith("postgres") else ""
    json_path = args.json or RESULTS_DIR / f"load-{args.scale:g}{suffix}.json"
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="hubbub-bench-load-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result, _ = run_and_save(lambda: amain(args, workdir), json_path)
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print_table(result)
    print(f"wrote {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
