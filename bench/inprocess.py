"""In-process cost of one request, without HTTP or a second process: for profiling.

Builds a realm of ``--users`` members (all in stream "big", the first 30 in stream "small")
on a fresh SQLite database in a temporary directory (or the empty PostgreSQL database of
``--database-url``, with the Redis bus of ``--redis-url``), then times ``--requests`` sequential
calls of one kind through httpx's ASGITransport:

- ``small`` / ``big``: ``POST /messages`` to the 30- or the all-member stream (``--content``,
  the users being "User 0" ... "User 999");
- ``dm``: a 1:1 direct message;
- ``register``: ``POST /register`` with no parameters (the full initial state);
- ``fetch``: ``GET /messages`` on a stream + topic narrow, 100 messages;
- ``search``: ``GET /messages`` searching ``--term``, the newest 50 matches;
- ``unread``: ``GET /messages`` of all messages around the first unread one
  (``anchor=first_unread``, 25 before and after: what a client opens first);
- ``presence``: ``POST /users/me/presence``, whose answer holds every user's presence;
- ``poll``: a long-poll's re-arm (``GET /events``, ``dont_block``);
- ``me``: ``GET /users/me``, what any request costs (the way in, authentication, a
  small answer);
- ``fanout``: every user holds a long-poll (``event_types`` message); one call is a
  ``POST /messages`` to "big" until every poll has its answer. The polls are driven
  as bare ASGI calls (no HTTP client), so the time is the server's own work.

    .venv/bin/python bench/inprocess.py small
    .venv/bin/python bench/inprocess.py register --profile   # needs `pip install pyinstrument`
    .venv/bin/python bench/inprocess.py register --data-dir /tmp/hubbub-load/data --profile
    .venv/bin/python bench/inprocess.py search --data-dir /tmp/hubbub-load/data --term WORD
    .venv/bin/python bench/inprocess.py unread --data-dir /tmp/hubbub-load/data --email ADDRESS
    .venv/bin/python bench/inprocess.py big --data-dir /tmp/hubbub-load/data \
        --stream "all hands 0"   # a send on a seeded realm, to one of its streams
    .venv/bin/python bench/inprocess.py fanout --database-url postgresql://.../EMPTY_DB \
        --redis-url redis://127.0.0.1:6379/0

With ``--profile`` the timed calls run under pyinstrument and its text report is written to
``bench/results/inprocess-<kind>.txt``. Times include the test client's own work (small).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from longpoll import RESULTS_DIR
from starlette.applications import Starlette

from hubbub.actions.realms import do_create_realm
from hubbub.actions.streams import StreamOptions, bulk_add_subscriptions, do_create_stream
from hubbub.actions.users import check_create_user
from hubbub.app import create_app
from hubbub.db.migrate import upgrade
from hubbub.models import Role, User
from hubbub.queries.users import get_login_candidates
from hubbub.server import settle_memory
from hubbub.services import Services, build_services
from hubbub.settings import Settings

KINDS = (
    "small",
    "big",
    "dm",
    "register",
    "fetch",
    "search",
    "unread",
    "presence",
    "poll",
    "me",
    "fanout",
)
NARROW = '[{"operator":"stream","operand":"small"},{"operator":"topic","operand":"t1"}]'


async def seeded_user(args: argparse.Namespace) -> tuple[Starlette, Services, list[User]]:
    """The app on an existing data directory (say, one ``bench/load.py --keep`` seeded),
    acting as the user ``--email``."""
    settings = Settings(
        data_dir=args.data_dir,
        rate_limit=0,
        database_url=args.database_url,
        redis_url=args.redis_url,
        redis_namespace=f"hubbub-inprocess-{os.getpid()}",
    )
    services = build_services(settings)
    await upgrade(services.db)
    async with services.db.read() as conn:
        users = [user for user, _ in await get_login_candidates(conn, args.email)]
    if not users:
        raise SystemExit(f"no user {args.email} in {args.data_dir}")
    await services.start()
    return create_app(settings, services=services), services, users


async def amain(args: argparse.Namespace) -> None:
    if args.data_dir is not None:
        app, services, users = await seeded_user(args)
    else:
        app, services, users = await fresh_realm(args)
    statements: Counter[str] = Counter()
    if args.statements:

        def count(_conn: Any, _cursor: Any, sql: str, *_rest: Any) -> None:
            statements[" ".join(sql.split())[:150]] += 1

        for engine in {services.db.engine, services.db.write_engine}:
            sa.event.listen(engine.sync_engine, "before_cursor_execute", count)
    await measure(args, app, services, users)
    if args.statements:
        total = sum(statements.values())
        print(f"{total / args.requests:.1f} statements a request (warm-up included):")
        for sql, n in statements.most_common():
            print(f"{n / args.requests:6.2f}  {sql}")
    await services.close()


async def fresh_realm(args: argparse.Namespace) -> tuple[Starlette, Services, list[User]]:
    settings = Settings(
        data_dir=Path(tempfile.mkdtemp(prefix="hubbub-inprocess-")),
        rate_limit=0,
        database_url=args.database_url,
        redis_url=args.redis_url,
        # A namespace of its own: the realm's queues never meet another run's.
        redis_namespace=f"hubbub-inprocess-{os.getpid()}",
    )
    services = build_services(settings)
    await upgrade(services.db)
    app = create_app(settings, services=services)
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
                    email=f"u{i}@example.com",
                    full_name=f"User {i}",
                    password=None,
                    role=Role.MEMBER,
                    bot_type=None,
                    bot_owner_id=None,
                    now=now,
                )
            )
    for name, members in (("big", users), ("small", users[:30])):
        async with services.write() as tx:
            target = await do_create_stream(
                tx, realm, name, StreamOptions(), description="", now=now
            )
            await bulk_add_subscriptions(tx, realm, [target], members)
    await services.start()
    return app, services, users


def basic_auth(user: User) -> str:
    return "Basic " + base64.b64encode(f"{user.delivery_email}:{user.api_key}".encode()).decode()


async def asgi_call(
    app: Starlette, method: str, path: str, auth: str, query: str = "", body: bytes = b""
) -> tuple[int, bytes]:
    """One request straight into the ASGI application: what uvicorn would hand it."""
    headers = [(b"host", b"localhost"), (b"authorization", auth.encode())]
    if body:
        headers += [
            (b"content-type", b"application/x-www-form-urlencoded"),
            (b"content-length", str(len(body)).encode()),
        ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": headers,
        "server": ("localhost", 80),
        "client": ("127.0.0.1", 40000),
    }
    status = 0
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        else:
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)


async def fanout_queues(app: Starlette, users: list[User]) -> list[list[Any]]:
    """One queue of message events per user: [authorization, queue id, last event id]."""
    polls = []
    for user in users:
        _status, body = await asgi_call(
            app,
            "POST",
            "/api/v1/register",
            basic_auth(user),
            body=b"event_types=%5B%22message%22%5D&fetch_event_types=%5B%5D",
        )
        data = json.loads(body)
        polls.append([basic_auth(user), data["queue_id"], data["last_event_id"]])
    return polls


async def fanout_rounds(
    args: argparse.Namespace,
    app: Starlette,
    services: Services,
    users: list[User],
    polls: list[list[Any]],
) -> list[float]:
    """Each round: every user's long-poll waiting, one send to "big", until all answered."""

    async def poll(entry: list[Any]) -> None:
        auth, queue_id, last = entry
        status, body = await asgi_call(
            app, "GET", "/api/v1/events", auth, f"queue_id={queue_id}&last_event_id={last}"
        )
        events = json.loads(body)["events"]
        if status != 200 or not events:
            raise RuntimeError(body)
        entry[2] = events[-1]["id"]

    times: list[float] = []
    post_times: list[float] = []
    sender = basic_auth(users[0])
    for i in range(args.requests):
        tasks = [asyncio.ensure_future(poll(entry)) for entry in polls]
        for _ in range(600):  # every poll parked (up to 30 s)
            if services.bus.waiting_polls() >= len(polls):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)
        started = time.perf_counter()
        status, body = await asgi_call(
            app,
            "POST",
            "/api/v1/messages",
            sender,
            body=f"type=stream&to=big&topic=fanout&content=round+{i}".encode(),
        )
        post_times.append(time.perf_counter() - started)
        if status != 200:
            raise RuntimeError(body)
        await asyncio.gather(*tasks)
        times.append(time.perf_counter() - started)
    post_times.sort()
    print(
        f"fanout: the POST itself p50 {1000 * statistics.median(post_times):.1f} ms, "
        f"max {1000 * post_times[-1]:.1f} ms"
    )
    return times


async def measure(
    args: argparse.Namespace, app: Starlette, services: Services, users: list[User]
) -> None:
    me = users[0]
    auth = basic_auth(me)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://localhost", headers={"Authorization": auth}
    ) as http:

        async def call(i: int) -> None:
            if args.kind in ("small", "big"):
                to = args.stream or args.kind
                form = {"type": "stream", "to": to, "topic": f"t{i % 5}"}
                response = await http.post(
                    "/api/v1/messages", data={**form, "content": f"{args.content} {i}"}
                )
            elif args.kind == "dm":
                form = {"type": "direct", "to": f"[{users[1].id}]", "content": f"dm {i}"}
                response = await http.post("/api/v1/messages", data=form)
            elif args.kind == "register":
                response = await http.post("/api/v1/register", data={})
            elif args.kind == "presence":  # the answer carries every user's presence
                response = await http.post(
                    "/api/v1/users/me/presence", data={"status": "active", "new_user_input": "true"}
                )
            elif args.kind == "me":  # what every request costs: the way in, authentication
                response = await http.get("/api/v1/users/me")
            elif args.kind == "unread":
                response = await http.get(
                    "/api/v1/messages",
                    params={"anchor": "first_unread", "num_before": 25, "num_after": 25},
                )
            elif args.kind == "poll":  # a long-poll's re-arm, without the wait
                response = await http.get(
                    "/api/v1/events",
                    params={"queue_id": queue_id, "last_event_id": -1, "dont_block": "true"},
                )
            else:  # search: a page of 50 newest matches; fetch: 100 of a topic
                search = args.kind == "search"
                narrow = json.dumps([{"operator": "search", "operand": args.term}])
                response = await http.get(
                    "/api/v1/messages",
                    params={
                        "anchor": "newest",
                        "num_before": 50 if search else 100,
                        "num_after": 0,
                        "narrow": narrow if search else NARROW,
                    },
                )
            if response.status_code != 200:
                raise RuntimeError(response.text)

        if args.kind in ("fetch", "search") and args.data_dir is None:  # something to find
            for i in range(200):
                await http.post(
                    "/api/v1/messages",
                    data={
                        "type": "stream",
                        "to": "small",
                        "topic": "t1",
                        "content": f"m {i} {args.term}",
                    },
                )
        if args.kind == "presence":  # everyone was here recently
            for user in users:
                key = f"{user.delivery_email}:{user.api_key}".encode()
                await http.post(
                    "/api/v1/users/me/presence",
                    data={"status": "active"},
                    headers={"Authorization": "Basic " + base64.b64encode(key).decode()},
                )
        queue_id = ""
        if args.kind == "poll":
            queue_id = (await http.post("/api/v1/register", data={})).json()["queue_id"]
        polls = await fanout_queues(app, users) if args.kind == "fanout" else []
        for i in range(20 if args.kind != "fanout" else 0):  # warm-up
            await call(i)
        # The server's collector settings (``hubbub serve`` runs full collections on its
        # own timer only): without them, full collections Python started itself in
        # requests would make the p99.
        collections = settle_memory()

        async def timed() -> list[float]:
            if args.kind == "fanout":
                return await fanout_rounds(args, app, services, users, polls)
            times = []
            for i in range(args.requests):
                started = time.perf_counter()
                await call(i)
                times.append(time.perf_counter() - started)
            return times

        cpu_started = time.process_time()
        if args.profile:
            from pyinstrument import Profiler

            # Many concurrent polls: only the CPU they take is of interest.
            profiler = Profiler(async_mode="disabled" if args.kind == "fanout" else "enabled")
            profiler.start()
            times = await timed()
            profiler.stop()
            out = RESULTS_DIR / f"inprocess-{args.kind}.txt"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(profiler.output_text(unicode=False, color=False, show_all=args.show_all))
            print(f"profile: {out}")
        else:
            times = await timed()
        cpu = time.process_time() - cpu_started
        collections.stop()
    times.sort()
    # This process's CPU (the server's work and the test client's, not the database's):
    # steadier than the latencies on a shared machine.
    print(
        f"{args.kind}: {len(times)} requests, {args.users} users: "
        f"p50 {1000 * statistics.median(times):.1f} ms, "
        f"p99 {1000 * times[int(0.99 * (len(times) - 1))]:.1f} ms, "
        f"mean {1000 * statistics.mean(times):.1f} ms, "
        f"CPU {1000 * cpu / max(1, len(times)):.2f} ms a request"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--show-all", action="store_true", help="the profile hides no frames")
    parser.add_argument(
        "--statements", action="store_true", help="list the SQL statements a request runs"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="an existing data directory (register, search, unread; small and big with --stream)",
    )
    parser.add_argument("--email", default="user1@bench.example.com", help="with --data-dir")
    parser.add_argument(
        "--database-url",
        default="",
        help="a fresh realm in this (empty) PostgreSQL database; with --data-dir, its database",
    )
    parser.add_argument("--redis-url", default="", help="the Redis event bus")
    parser.add_argument("--term", default="world", help="what search looks for")
    parser.add_argument(
        "--stream",
        help="the stream small and big send to (a seeded realm's: 'all hands 0' has every user)",
    )
    parser.add_argument(
        "--content",
        default="hello **world**",
        help="what small and big send (a mention: '@**User 7** hi')",
    )
    args = parser.parse_args(argv)
    seeded_kinds = ("register", "search", "unread") + (("small", "big") if args.stream else ())
    if args.data_dir is not None and args.kind not in seeded_kinds:
        parser.error("--data-dir measures register, search, unread, and sends with --stream")
    asyncio.run(amain(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
