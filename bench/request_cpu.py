"""Server CPU per request of three common requests, against a same-work ceiling.

Starts ``hubbub serve`` on a fresh SQLite database, seeds it through the API (an owner,
nine members, a stream "ten" with the ten of them subscribed, ``--messages`` messages in
it from a member), then starts a ceiling app: a minimal Starlette app under uvicorn
(uvloop, httptools, as hubbub's) doing the same work the plainest way there is. Both
servers are pinned to one core (the client to another) and driven in alternating runs
(hubbub, ceiling, hubbub, ceiling ...) of ``--requests`` sequential keep-alive requests,
as the owner:

- ``fetch``: ``GET /api/v1/messages/{id}`` of the member's newest seeded message. The
  ceiling: HTTP Basic against a dict of users in memory, then one indexed SELECT through
  aiosqlite on the same database (the message, its recipient and, as a subquery, the
  caller's flags),
  the stream and the sender from memory;
- ``me``: ``GET /api/v1/users/me``. The ceiling: the same authentication, then one
  SELECT of the user's row, with the newest message id the user has (a subquery on
  each of the two tables that hold their ``user_message`` rows);
- ``send``: ``POST /api/v1/messages`` to the stream of ten. The ceiling: the same
  authentication, then the message row and the ten ``user_message`` rows inserted in one
  transaction (BEGIN IMMEDIATE, two statements, COMMIT) in a database file of its own
  with the same pragmas (hubbub's is left alone). It renders nothing.

The CPU of a run is the server process's time on a CPU (the first field of each of its
threads' ``/proc/PID/task/TID/schedstat``, in nanoseconds), from before the run's first
request to after its last; its background jobs' time over the run counts too (the
idle rate printed is what they cost a second). Each figure is the median of
``--rounds`` runs; the ratio is hubbub's median over the ceiling's, the paired ratio
the median of each round's hubbub run over its ceiling run.

Afterwards, with both servers stopped, each app runs in this process (straight ASGI
calls, no HTTP, hubbub without its background jobs) to count the SQL statements a
request runs: every statement SQLite is given, BEGIN and COMMIT included, through
``sqlite3``'s trace callback (statements run by triggers are left out).

    PYTHONPATH=src .venv/bin/python bench/request_cpu.py
    PYTHONPATH=src .venv/bin/python bench/request_cpu.py --requests 2000 --rounds 7
    PYTHONPATH=src .venv/bin/python bench/request_cpu.py --only fetch --profile-statements

Writes ``bench/results/request_cpu.json`` (``--json``); see bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hmac
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import orjson
from longpoll import (
    RESULTS_DIR,
    Connection,
    Server,
    api_call,
    basic_auth,
    calibration_ms,
    free_port,
    git_commit,
    log,
)

KINDS = ("fetch", "me", "send")
LABELS = {
    "fetch": "GET /messages/{id}",
    "me": "GET /users/me",
    "send": "POST /messages (10 subscribers)",
}
STREAM = "ten"
MEMBERS = 9
WARMUP_REQUESTS = 100
PUBLIC_RECIPIENT_STREAM = 2


# --- the ceiling app -----------------------------------------------------------------------


class Ceiling:
    """The same work as hubbub's three requests, done the plainest way: what is fixed
    (users, streams, subscribers) read once into memory, one statement for a read, one
    transaction for a send."""

    def __init__(self, database: Path, write_database: Path) -> None:
        self.database = database
        self.write_database = write_database
        self.users: dict[str, dict[str, Any]] = {}
        self.by_id: dict[int, dict[str, Any]] = {}
        # name -> (stream id, recipient id, is public, subscriber ids)
        self.streams: dict[str, tuple[int, int, bool, list[int]]] = {}
        self.stream_names: dict[int, tuple[str, bool]] = {}
        self.realm_str = ""
        self.read: Any = None
        self.write: Any = None

    async def open(self) -> None:
        import aiosqlite

        self.read = await aiosqlite.connect(self.database)
        self.read.row_factory = sqlite3.Row
        for row in await self.read.execute_fetchall(
            "SELECT id, realm_id, email, delivery_email, full_name, api_key FROM user_profile"
            " WHERE is_active"
        ):
            user = dict(row)
            self.users[user["delivery_email"].lower()] = user
            self.by_id[user["id"]] = user
        members: dict[int, list[int]] = {}
        for stream_id, user_id in await self.read.execute_fetchall(
            "SELECT stream_id, user_profile_id FROM subscription WHERE active"
        ):
            members.setdefault(stream_id, []).append(user_id)
        for stream_id, name, invite_only, recipient_id in await self.read.execute_fetchall(
            "SELECT stream.id, stream.name, stream.invite_only, recipient.id FROM stream"
            " JOIN recipient ON recipient.type = 2 AND recipient.type_id = stream.id"
        ):
            public = not invite_only
            self.streams[name] = (stream_id, recipient_id, public, members.get(stream_id, []))
            self.stream_names[stream_id] = (name, public)
        [(self.realm_str,)] = await self.read.execute_fetchall(
            "SELECT string_id FROM realm ORDER BY id LIMIT 1"
        )
        self.write = await aiosqlite.connect(self.write_database, isolation_level=None)
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"):
            await self.write.execute(f"PRAGMA {pragma}")
        await self.write.executescript(
            "CREATE TABLE IF NOT EXISTS message (id INTEGER PRIMARY KEY, realm_id INTEGER"
            " NOT NULL, sender_id INTEGER NOT NULL, recipient_id INTEGER NOT NULL, topic"
            " TEXT NOT NULL, content TEXT NOT NULL, rendered_content TEXT, date_sent REAL"
            " NOT NULL, sending_client TEXT NOT NULL);"
            "CREATE INDEX IF NOT EXISTS ix_message_recipient_topic ON message"
            " (recipient_id, topic, id);"
            "CREATE INDEX IF NOT EXISTS ix_message_sender ON message (sender_id, id);"
            "CREATE TABLE IF NOT EXISTS user_message (user_profile_id INTEGER NOT NULL,"
            " message_id INTEGER NOT NULL REFERENCES message (id), flags INTEGER NOT NULL,"
            " PRIMARY KEY (user_profile_id, message_id));"
            "CREATE INDEX IF NOT EXISTS ix_user_message_message ON user_message (message_id);"
        )

    async def close(self) -> None:
        for conn in (self.read, self.write):
            if conn is not None:
                await conn.close()

    def caller(self, authorization: str | None) -> dict[str, Any] | None:
        if not authorization or not authorization.startswith("Basic "):
            return None
        try:
            email, _, key = base64.b64decode(authorization[6:]).decode().partition(":")
        except ValueError:
            return None
        user = self.users.get(email.lower())
        if user is None or not hmac.compare_digest(key.encode(), user["api_key"].encode()):
            return None
        return user

    async def fetch(self, me: dict[str, Any], message_id: int) -> dict[str, Any] | None:
        rows = await self.read.execute_fetchall(
            "SELECT m.id, m.sender_id, m.recipient_id, m.topic, m.content,"
            " m.rendered_content, m.date_sent, m.sending_client, m.is_me_message,"
            " r.type, r.type_id, (SELECT flags FROM user_message"
            " WHERE user_profile_id = ? AND message_id = m.id) AS flags FROM message m"
            " JOIN recipient r ON r.id = m.recipient_id"
            " WHERE m.id = ? AND m.realm_id = ?",
            (me["id"], message_id, me["realm_id"]),
        )
        if not rows:
            return None
        row = rows[0]
        if row["type"] != PUBLIC_RECIPIENT_STREAM:
            return None
        name, public = self.stream_names[row["type_id"]]
        if row["flags"] is None and not public:
            return None
        sender = self.by_id[row["sender_id"]]
        flags = ["read"] if row["flags"] is None or row["flags"] & 1 else []
        return {
            "raw_content": row["content"],
            "message": {
                "avatar_url": None,
                "client": row["sending_client"],
                "content": row["rendered_content"],
                "content_type": "text/html",
                "display_recipient": name,
                "flags": flags,
                "id": row["id"],
                "is_me_message": bool(row["is_me_message"]),
                "reactions": [],
                "recipient_id": row["recipient_id"],
                "sender_email": sender["email"],
                "sender_full_name": sender["full_name"],
                "sender_id": sender["id"],
                "sender_realm_str": self.realm_str,
                "stream_id": row["type_id"],
                "subject": row["topic"],
                "submessages": [],
                "timestamp": int(row["date_sent"]),
                "topic_links": [],
                "type": "stream",
            },
        }

    async def own_user(self, me: dict[str, Any]) -> dict[str, Any]:
        rows = await self.read.execute_fetchall(
            "SELECT u.*, max("
            "coalesce((SELECT max(message_id) FROM user_message_rows"
            " WHERE user_profile_id = u.id), -1),"
            " coalesce((SELECT max(message_id) FROM user_message_staged"
            " WHERE user_profile_id = u.id), -1)) AS max_message_id"
            " FROM user_profile u WHERE u.id = ?",
            (me["id"],),
        )
        row = dict(rows[0])
        return {
            "avatar_url": None,
            "avatar_version": row["avatar_version"],
            "bot_type": row["bot_type"],
            "date_joined": row["date_joined"],
            "delivery_email": row["delivery_email"],
            "email": row["email"],
            "full_name": row["full_name"],
            "is_active": bool(row["is_active"]),
            "is_admin": row["role"] <= 200,
            "is_billing_admin": bool(row["is_billing_admin"]),
            "is_bot": bool(row["is_bot"]),
            "is_guest": row["role"] == 600,
            "is_owner": row["role"] == 100,
            "max_message_id": row["max_message_id"],
            "profile_data": {},
            "role": row["role"],
            "timezone": row["timezone"],
            "user_id": row["id"],
        }

    async def send(self, me: dict[str, Any], form: dict[str, str]) -> dict[str, Any] | None:
        target = self.streams.get(form.get("to", ""))
        if target is None or form.get("type") != "stream":
            return None
        _stream_id, recipient_id, _public, subscribers = target
        write = self.write
        await write.execute("BEGIN IMMEDIATE")
        try:
            cursor = await write.execute(
                "INSERT INTO message (realm_id, sender_id, recipient_id, topic, content,"
                " rendered_content, date_sent, sending_client) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    me["realm_id"],
                    me["id"],
                    recipient_id,
                    form.get("topic", ""),
                    form["content"],
                    form["content"],
                    time.time(),
                    "bench",
                ),
            )
            message_id = cursor.lastrowid
            await write.executemany(
                "INSERT INTO user_message (user_profile_id, message_id, flags) VALUES (?, ?, ?)",
                [(uid, message_id, 1 if uid == me["id"] else 0) for uid in subscribers],
            )
            await write.execute("COMMIT")
        except BaseException:
            await write.execute("ROLLBACK")
            raise
        return {"id": message_id}


def ceiling_app(ceiling: Ceiling) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    def answer(status: int, payload: dict[str, Any]) -> Response:
        result = "success" if status == 200 else "error"
        body = orjson.dumps({"result": result, "msg": "", **payload})
        return Response(body, status, media_type="application/json")

    async def fetch(request: Request) -> Response:
        me = ceiling.caller(request.headers.get("authorization"))
        if me is None:
            return answer(401, {})
        found = await ceiling.fetch(me, request.path_params["message_id"])
        return answer(200, found) if found is not None else answer(400, {})

    async def own_user(request: Request) -> Response:
        me = ceiling.caller(request.headers.get("authorization"))
        if me is None:
            return answer(401, {})
        return answer(200, await ceiling.own_user(me))

    async def send(request: Request) -> Response:
        me = ceiling.caller(request.headers.get("authorization"))
        if me is None:
            return answer(401, {})
        form = dict(parse_qsl((await request.body()).decode()))
        sent = await ceiling.send(me, form)
        return answer(200, sent) if sent is not None else answer(400, {})

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> Any:
        await ceiling.open()
        yield
        await ceiling.close()

    return Starlette(
        routes=[
            Route("/api/v1/messages/{message_id:int}", fetch),
            Route("/api/v1/users/me", own_user),
            Route("/api/v1/messages", send, methods=["POST"]),
        ],
        lifespan=lifespan,
    )


def run_ceiling(args: argparse.Namespace) -> None:
    import uvicorn

    app = ceiling_app(Ceiling(Path(args.database), Path(args.write_database)))
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        loop="uvloop",
        http="httptools",
        ws="none",
        interface="asgi3",
        access_log=False,
        server_header=False,
        log_level="warning",
    )


# --- measuring -------------------------------------------------------------------------


def pin(pid: int, core: int | None) -> None:
    """Every thread of ``pid`` to ``core`` (new threads inherit it)."""
    if core is None:
        return
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(tid), {core})


def thread_cpu_ns(pid: int) -> dict[int, int]:
    """Each live thread's time on a CPU so far, in nanoseconds."""
    found = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with (
            contextlib.suppress(OSError, ValueError),
            open(f"/proc/{pid}/task/{tid}/schedstat") as stat,
        ):
            found[int(tid)] = int(stat.read().split()[0])
    return found


def cpu_since(pid: int, start: dict[int, int]) -> tuple[int, int]:
    """Nanoseconds on a CPU since ``start``, and how many of its threads have ended
    since (their time is lost, so a run where any did is suspect)."""
    end = thread_cpu_ns(pid)
    return sum(ns - start.get(tid, 0) for tid, ns in end.items()), len(start.keys() - end)


class Target:
    """One server to drive: its address, pid and the requests' parameters."""

    def __init__(self, name: str, port: int, pid: int, auth: str, message_id: int) -> None:
        self.name = name
        self.conn = Connection("127.0.0.1", port)
        self.pid = pid
        self.auth = auth
        self.message_id = message_id
        self.sent = 0

    async def call(self, kind: str) -> None:
        if kind == "fetch":
            response = await self.conn.request(
                "GET", f"/api/v1/messages/{self.message_id}", auth=self.auth
            )
        elif kind == "me":
            response = await self.conn.request("GET", "/api/v1/users/me", auth=self.auth)
        else:
            self.sent += 1
            form = {"type": "stream", "to": STREAM, "topic": "cpu", "content": f"hi {self.sent}"}
            response = await self.conn.request(
                "POST", "/api/v1/messages", auth=self.auth, form=form
            )
        if response.status != 200:
            raise RuntimeError(f"{self.name} {kind} -> {response.status}: {response.body[:300]!r}")

    async def run(self, kind: str, requests: int) -> tuple[float, int]:
        """µs of server CPU per request over ``requests`` calls; threads lost."""
        await self.call(kind)  # the connection open and warm
        start = thread_cpu_ns(self.pid)
        for _ in range(requests):
            await self.call(kind)
        used, lost = cpu_since(self.pid, start)
        return used / 1000 / requests, lost

    async def idle_rate(self, seconds: float) -> float:
        """µs of CPU a second while no request comes."""
        start = thread_cpu_ns(self.pid)
        await asyncio.sleep(seconds)
        used, _lost = cpu_since(self.pid, start)
        return used / 1000 / seconds


async def seed(server: Server, messages: int) -> tuple[str, int]:
    """The realm: the owner's credentials and the id of the message to fetch."""
    email, key = server.owner_credentials()
    owner = basic_auth(email, key)
    conn = Connection(server.host, server.port)
    try:
        password = "bench-" + os.urandom(9).hex()
        ids = []
        for i in range(MEMBERS):
            data = await api_call(
                conn,
                "POST",
                "/users",
                auth=owner,
                form={
                    "email": f"member{i}@bench.example.com",
                    "password": password,
                    "full_name": f"Member {i}",
                },
            )
            ids.append(data["user_id"])
        me = await api_call(conn, "GET", "/users/me", auth=owner)
        await api_call(
            conn,
            "POST",
            "/users/me/subscriptions",
            auth=owner,
            form={
                "subscriptions": orjson.dumps([{"name": STREAM}]).decode(),
                "principals": orjson.dumps([me["user_id"], *ids]).decode(),
            },
        )
        fetched = await api_call(
            conn,
            "POST",
            "/fetch_api_key",
            form={"username": "member0@bench.example.com", "password": password},
        )
        member = basic_auth("member0@bench.example.com", fetched["api_key"])
        message_id = 0
        for i in range(messages):
            form = {
                "type": "stream",
                "to": STREAM,
                "topic": f"topic {i % 10}",
                "content": f"Message **{i}** with a [link](https://example.com/{i}).",
            }
            message_id = (await api_call(conn, "POST", "/messages", auth=member, form=form))["id"]
    finally:
        conn.close()
    return owner, message_id


def start_ceiling(workdir: Path, core: int | None) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--ceiling-app",
        "--port",
        str(port),
        "--database",
        str(workdir / "data" / "hubbub.db"),
        "--write-database",
        str(workdir / "ceiling.db"),
    ]
    with open(workdir / "ceiling.stderr", "wb") as err:
        proc = subprocess.Popen(
            command, stdout=err, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True
        )
    pin(proc.pid, core)
    return proc, port


async def wait_for(port: int, auth: str, proc: subprocess.Popen[bytes]) -> None:
    conn = Connection("127.0.0.1", port)
    try:
        for _ in range(300):
            if proc.poll() is not None:
                raise RuntimeError(f"the ceiling app exited with status {proc.returncode}")
            with contextlib.suppress(OSError, ConnectionError):
                response = await conn.request("GET", "/api/v1/users/me", auth=auth)
                if response.status == 200:
                    return
            conn.close()
            await asyncio.sleep(0.1)
        raise RuntimeError("the ceiling app did not answer")
    finally:
        conn.close()


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


# --- counting statements -------------------------------------------------------------------


_QUOTED = re.compile(r"'(?:[^']|'')*'")
_WRITE = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?\b")


class StatementLog:
    """Every statement given to SQLite by a connection opened after ``install``."""

    def __init__(self) -> None:
        self.recording = False
        self.statements: Counter[str] = Counter()

    def install(self) -> None:
        connect = sqlite3.connect

        def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            connection = connect(*args, **kwargs)
            connection.set_trace_callback(self.tracer())
            return connection

        sqlite3.connect = traced  # type: ignore[assignment]

    def tracer(self) -> Callable[[str], None]:
        """A connection's trace callback. The callback sees each statement with its
        parameters' values written in, so statements are told apart with them blanked;
        once more for each trigger program it runs, with the same text (Python 3.11
        passes the statement's text, not the trigger's), so a write that repeats the
        connection's last statement is left out (only writes fire triggers: a read may
        well run twice in a row); and the statements that SQLite runs itself (an FTS
        index's), as comments, also left out."""
        last = [""]

        def trace(sql: str) -> None:
            if sql.lstrip().startswith("--"):
                return
            repeated = sql == last[0] and _WRITE.match(sql) is not None
            last[0] = sql
            if self.recording and not repeated:
                shape = _NUMBER.sub("?", _QUOTED.sub("?", " ".join(sql.split())))
                self.statements[shape[:400]] += 1

        return trace


async def count_statements(
    kinds: list[str], workdir: Path, owner: str, message_id: int, requests: int
) -> dict[str, dict[str, Any]]:
    """Statements a request runs, per app and kind, with straight ASGI calls."""
    from hubbub.app import create_app
    from hubbub.services import build_services
    from hubbub.settings import Settings

    log_ = StatementLog()
    log_.install()
    settings = Settings(data_dir=workdir / "data", rate_limit=0)
    services = build_services(settings)
    await services.start()
    ceiling = Ceiling(workdir / "data" / "hubbub.db", workdir / "ceiling.db")
    await ceiling.open()
    try:
        return await _count(
            log_,
            create_app(settings, services=services),
            ceiling,
            kinds,
            owner,
            message_id,
            requests,
        )
    finally:
        await ceiling.close()
        await services.close()


async def _count(
    log_: StatementLog,
    hubbub: Any,
    ceiling: Ceiling,
    kinds: list[str],
    owner: str,
    message_id: int,
    requests: int,
) -> dict[str, dict[str, Any]]:
    from inprocess import asgi_call

    found: dict[str, dict[str, Any]] = {}
    for name, app in (("hubbub", hubbub), ("ceiling", ceiling_app(ceiling))):
        for kind in kinds:
            if kind == "fetch":
                call = ("GET", f"/api/v1/messages/{message_id}", b"")
            elif kind == "me":
                call = ("GET", "/api/v1/users/me", b"")
            else:
                call = (
                    "POST",
                    "/api/v1/messages",
                    f"type=stream&to={STREAM}&topic=n&content=n".encode(),
                )
            method, path, body = call
            for _ in range(3):
                await asgi_call(app, method, path, owner, body=body)
            log_.statements.clear()
            log_.recording = True
            for _ in range(requests):
                status, answer = await asgi_call(app, method, path, owner, body=body)
                if status != 200:
                    raise RuntimeError(f"{name} {kind} in process -> {status}: {answer[:300]!r}")
            log_.recording = False
            total = sum(log_.statements.values())
            found.setdefault(kind, {})[name] = {
                "per_request": round(total / requests, 2),
                "statements": {
                    sql: round(n / requests, 2) for sql, n in log_.statements.most_common()
                },
            }
    return found


# --- the run ---------------------------------------------------------------------------


async def amain(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cores = sorted(os.sched_getaffinity(0))
    server_core = cores[-1] if len(cores) > 1 else None
    if server_core is not None:
        os.sched_setaffinity(0, set(cores[:-1]))
    kinds = args.only or list(KINDS)
    server = Server(argparse.Namespace(database_url="", redis_url="", workers=1), workdir)
    server.start()
    ceiling_proc: subprocess.Popen[bytes] | None = None
    result: dict[str, Any] = {"commit": git_commit(), "requests": args.requests}
    try:
        pin(server.pid, server_core)
        await server.wait_ready()
        pin(server.pid, server_core)
        owner, message_id = await seed(server, args.messages)
        log(f"seeded: {MEMBERS + 1} users in stream {STREAM!r}, fetching message {message_id}")
        ceiling_proc, port = start_ceiling(workdir, server_core)
        await wait_for(port, owner, ceiling_proc)
        pin(ceiling_proc.pid, server_core)
        targets = {
            "hubbub": Target("hubbub", server.port, server.pid, owner, message_id),
            "ceiling": Target("ceiling", port, ceiling_proc.pid, owner, message_id),
        }
        result["idle_us_per_s"] = {
            name: round(await target.idle_rate(2.0)) for name, target in targets.items()
        }
        log(f"idle CPU (µs a second): {result['idle_us_per_s']}")
        runs: dict[str, dict[str, list[float]]] = {}
        lost = 0
        for kind in kinds:
            for target in targets.values():
                for _ in range(WARMUP_REQUESTS):
                    await target.call(kind)
            for round_ in range(args.rounds):
                for name, target in targets.items():
                    per_request, gone = await target.run(kind, args.requests)
                    lost += gone
                    runs.setdefault(kind, {}).setdefault(name, []).append(round(per_request, 1))
                log(
                    f"{kind} round {round_ + 1}: "
                    + ", ".join(f"{name} {runs[kind][name][-1]} µs" for name in targets)
                )
        result["threads_lost"] = lost
        result["runs_us"] = runs
    finally:
        if ceiling_proc is not None:
            stop(ceiling_proc)
        server.stop()
    result["statements"] = await count_statements(
        kinds, workdir, owner, message_id, args.statement_requests
    )
    result["summary"] = {}
    for kind in kinds:
        hubbub = statistics.median(runs[kind]["hubbub"])
        ceiling = statistics.median(runs[kind]["ceiling"])
        # Each round's hubbub run over the ceiling's run right after it: the machine's
        # speed changes between rounds more than within one.
        paired = zip(runs[kind]["hubbub"], runs[kind]["ceiling"], strict=True)
        result["summary"][kind] = {
            "hubbub_us": round(hubbub),
            "ceiling_us": round(ceiling),
            "ratio": round(hubbub / ceiling, 1),
            "paired_ratio": round(statistics.median(h / c for h, c in paired), 1),
            "hubbub_statements": result["statements"][kind]["hubbub"]["per_request"],
            "ceiling_statements": result["statements"][kind]["ceiling"]["per_request"],
        }
    return result


def print_table(result: dict[str, Any], profile: bool) -> None:
    print(f"commit {result['commit']}, {result['requests']} requests a run, medians of runs")
    print(
        "| request | hubbub CPU µs | ceiling CPU µs | ratio | paired ratio"
        " | statements (hubbub / ceiling) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for kind, row in result["summary"].items():
        print(
            f"| {LABELS[kind]} | {row['hubbub_us']} | {row['ceiling_us']} | {row['ratio']} | "
            f"{row['paired_ratio']} | "
            f"{row['hubbub_statements']:g} / {row['ceiling_statements']:g} |"
        )
    if result["threads_lost"]:
        print(f"warning: {result['threads_lost']} server threads ended during runs")
    if profile:
        for kind, apps in result["statements"].items():
            print(f"\n{kind}: hubbub's statements a request")
            for sql, n in apps["hubbub"]["statements"].items():
                print(f"  {n:5.2f}  {sql}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000, help="requests a run")
    parser.add_argument("--rounds", type=int, default=5, help="runs of each server and kind")
    parser.add_argument("--messages", type=int, default=200, help="messages seeded")
    parser.add_argument("--only", action="append", choices=KINDS, help="kinds to run")
    parser.add_argument("--statement-requests", type=int, default=20)
    parser.add_argument(
        "--profile-statements", action="store_true", help="print hubbub's statements"
    )
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "request_cpu.json")
    # The ceiling app's own process.
    parser.add_argument("--ceiling-app", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--database", help=argparse.SUPPRESS)
    parser.add_argument("--write-database", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.ceiling_app:
        run_ceiling(args)
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="hubbub-request-cpu-"))
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        runner = asyncio.Runner()
    try:
        before = calibration_ms()
        with runner:
            result = runner.run(amain(args, workdir))
        result["calibration_ms"] = {"start": before, "end": calibration_ms()}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n")
    print_table(result, args.profile_statements)
    print(f"calibration (a fixed CPU loop, ms): {result['calibration_ms']}; wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
