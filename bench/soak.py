"""Soak benchmark: the server's memory under a steady mixed load, and after its queues expire.

Starts ``hubbub serve`` as a separate process (a free port, a fresh data directory, SQLite
and the in-memory event bus unless told otherwise), creates ``--users`` members and a few
streams, registers ``--queues`` event queues with a short lifespan, and drives about
``--rate`` operations a second for ``--minutes``: sends to streams and direct messages,
reactions, edits, flag changes, presence, typing, reads, non-blocking polls of every queue
with its ``last_event_id`` (so that events are consumed) and now and then a reload (a new
full ``/register`` replacing a queue). It samples the server's RSS (``VmRSS``) every
``--sample-every`` seconds; then it stops, lets every queue expire and samples on.

    .venv/bin/python bench/soak.py --minutes 10
    .venv/bin/python bench/soak.py --minutes 30 --queues 300 --rate 20
    .venv/bin/python bench/soak.py --minutes 6 --tracemalloc 20    # snapshots, see below
    .venv/bin/python bench/soak.py --compare A.snapshot B.snapshot   # what grew from A to B

With ``--tracemalloc N`` (or ``--memstats``) the server runs with the hook in
``bench/soak_hook/sitecustomize.py`` on its ``PYTHONPATH`` (no server change): at every
sample this script leaves it a request file, and it collects garbage, starts tracing N
frames the first time and dumps a tracemalloc snapshot into the results directory (with
``--memstats``: pymalloc's, SQLite's and glibc's heap figures and the queued events).
See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import secrets
import shutil
import sys
import tempfile
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

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
    cpu_seconds,
    latency_summary,
    log,
    proc_status_kb,
    result_header,
    rss_mb,
    run_and_save,
)

HOOK_DIR = Path(__file__).resolve().parent / "soak_hook"
# The server's queue expiry runs this often (Settings.queue_gc_interval_seconds).
QUEUE_GC_SECONDS = 60.0

# Relative weights of the operations.
MIX = {
    "poll": 40,
    "send to stream": 14,
    "send direct message": 6,
    "add reaction": 8,
    "remove reaction": 4,
    "edit message": 6,
    "change flags": 8,
    "presence": 5,
    "typing": 2,
    "read topic": 4,
    "reload": 3,
}
EMOJI = ["smile", "heart", "tada", "thumbs_up", "octopus", "rocket", "eyes", "fire"]
TOPICS = 40


@dataclass
class User:
    user_id: int
    auth: str
    full_name: str


@dataclass
class Queue:
    user: User
    queue_id: str
    last_event_id: int = -1


@dataclass
class Sent:
    message_id: int
    sender: User
    readers: list[User]


@dataclass
class Sample:
    minute: float
    phase: str
    rss_mb: float
    queues: int
    ops: int
    errors: int
    server_cpu_s: float
    snapshot: str | None = None
    # With --memstats: SQLite's allocator, glibc's heap (in use, free), Python objects.
    sqlite_mb: float | None = None
    heap_used_mb: float | None = None
    heap_free_mb: float | None = None
    gc_objects: int | None = None
    traced_mb: float | None = None
    pymalloc_mb: float | None = None
    pymalloc_used_mb: float | None = None
    bus_events: int | None = None


@dataclass
class Soak:
    args: argparse.Namespace
    server: Server
    users: list[User] = field(default_factory=list)
    streams: list[str] = field(default_factory=list)
    members: dict[str, list[User]] = field(default_factory=dict)
    queues: list[Queue] = field(default_factory=list)
    recent: deque[Sent] = field(default_factory=lambda: deque(maxlen=500))
    reactions: deque[tuple[int, User, str]] = field(default_factory=lambda: deque(maxlen=500))
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    last_memstats: dict[str, Any] = field(default_factory=dict)
    error_examples: dict[str, str] = field(default_factory=dict)
    ops: int = 0
    samples: list[Sample] = field(default_factory=list)
    poll_cursor: int = 0
    started: float = 0.0
    events_received: int = 0
    queues_lost: int = 0

    # --- HTTP -----------------------------------------------------------------------------

    async def call(
        self,
        conn: Connection,
        method: str,
        path: str,
        auth: str,
        form: dict[str, Any] | None = None,
        query: dict[str, Any] | None = None,
    ) -> Response:
        encoded = None
        if form is not None:
            encoded = {
                k: v if isinstance(v, str) else orjson.dumps(v).decode() for k, v in form.items()
            }
        if query:
            path += "?" + urlencode(
                {k: v if isinstance(v, str) else orjson.dumps(v).decode() for k, v in query.items()}
            )
        return await conn.request(method, "/api/v1" + path, auth=auth, form=encoded)

    async def must(
        self,
        conn: Connection,
        method: str,
        path: str,
        auth: str,
        form: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        response = await self.call(conn, method, path, auth, form)
        data = response.json()
        if response.status != 200 or data.get("result") != "success":
            raise RuntimeError(f"{method} {path} -> {response.status}: {response.body[:300]!r}")
        return dict(data)

    # --- setup ----------------------------------------------------------------------------

    async def create_users(self, owner: str) -> None:
        token = secrets.token_hex(3)
        password = secrets.token_urlsafe(12)

        async def make(i: int) -> User:
            conn = Connection(self.server.host, self.server.port)
            try:
                email = f"soak-{token}-{i}@example.com"
                name = f"Soak User {i}"
                created = await self.must(
                    conn,
                    "POST",
                    "/users",
                    owner,
                    {"email": email, "password": password, "full_name": name},
                )
                fetched = await self.must(
                    conn, "POST", "/fetch_api_key", "", {"username": email, "password": password}
                )
                return User(created["user_id"], basic_auth(email, fetched["api_key"]), name)
            finally:
                conn.close()

        self.users = await bounded(8, [lambda i=i: make(i) for i in range(self.args.users)])

    async def create_streams(self, owner: str) -> None:
        conn = Connection(self.server.host, self.server.port)
        try:
            self.streams = [f"soak {i}" for i in range(self.args.streams)]
            for i, name in enumerate(self.streams):
                # The first stream has everyone, the others a random half.
                members = (
                    self.users
                    if i == 0
                    else random.sample(self.users, max(2, len(self.users) // 2))
                )
                self.members[name] = list(members)
                await self.must(
                    conn,
                    "POST",
                    "/users/me/subscriptions",
                    owner,
                    {
                        "subscriptions": [{"name": name}],
                        "principals": [u.user_id for u in members],
                    },
                )
        finally:
            conn.close()

    async def seed(self, owner: str) -> None:
        """Long messages to the first stream until the database holds ``--seed-mb`` MB:
        the SQLite connections' page caches can then fill to their bounds during the
        soak (on a small database each holds at most the pages there are)."""
        data = self.server.workdir / "data"
        words = ["soak", "seed", "page", "cache", "bound", "level", "memory", "steady"]

        def size_mb() -> float:
            # The database file alone: the WAL is reused, not shrunk, after checkpoints.
            return (data / "hubbub.db").stat().st_size / 2**20

        async def sender(conn: Connection) -> int:
            sent = 0
            while size_mb() < self.args.seed_mb:
                text = " ".join(random.choice(words) for _ in range(700))
                await self.must(
                    conn,
                    "POST",
                    "/messages",
                    owner,
                    {
                        "type": "stream",
                        "to": self.streams[0],
                        "topic": f"seed {sent % 50}",
                        "content": text,
                    },
                )
                sent += 1
            return sent

        conns = [Connection(self.server.host, self.server.port) for _ in range(4)]
        try:
            sent = sum(await asyncio.gather(*(sender(c) for c in conns)))
        finally:
            for conn in conns:
                conn.close()
        log(f"seeded {sent} messages; database {size_mb():.1f} MB")

    def register_form(self) -> dict[str, Any]:
        # What a full client asks for: every event type, the whole initial state.
        return {
            "apply_markdown": True,
            "client_gravatar": True,
            "include_subscribers": True,
            "slim_presence": True,
            "queue_lifespan_secs": self.args.lifespan,
            "client_capabilities": {"notification_settings_null": True},
        }

    async def register(self, conn: Connection, user: User) -> Queue:
        data = await self.must(conn, "POST", "/register", user.auth, self.register_form())
        return Queue(user, data["queue_id"], data["last_event_id"])

    async def register_all(self) -> None:
        users = [self.users[i % len(self.users)] for i in range(self.args.queues)]
        todo = iter(users)

        async def worker() -> None:
            conn = Connection(self.server.host, self.server.port)
            try:
                for user in todo:
                    self.queues.append(await self.register(conn, user))
            finally:
                conn.close()

        await asyncio.gather(*(worker() for _ in range(8)))

    # --- the operations -------------------------------------------------------------------

    def content(self) -> str:
        other = random.choice(self.users)
        parts = [
            f"soak line {random.randrange(10**6)} with **bold**, `code`"
            f" and :{random.choice(EMOJI)}:",
        ]
        if random.random() < 0.3:
            parts.append(f"@**{other.full_name}** have a look")
        if random.random() < 0.2:
            parts.append(f"see https://example.com/page/{random.randrange(1000)}")
        if random.random() < 0.1:
            parts.append("```python\nprint('hello')\n```")
        return "\n".join(parts)

    async def op(self, kind: str, conn: Connection) -> Response | None:
        users = self.users
        if kind == "poll":
            queue = self.queues[self.poll_cursor % len(self.queues)]
            self.poll_cursor += 1
            response = await self.call(
                conn,
                "GET",
                "/events",
                queue.user.auth,
                query={
                    "queue_id": queue.queue_id,
                    "last_event_id": str(queue.last_event_id),
                    "dont_block": "true",
                },
            )
            data = response.json()
            if response.status == 200:
                events = data.get("events", [])
                self.events_received += len(events)
                if events:
                    queue.last_event_id = max(queue.last_event_id, *(e["id"] for e in events))
            elif data.get("code") == "BAD_EVENT_QUEUE_ID":
                # Expired under us (the client fell behind): a client registers again.
                self.queues_lost += 1
                fresh = await self.register(conn, queue.user)
                queue.queue_id, queue.last_event_id = fresh.queue_id, fresh.last_event_id
            return response
        if kind == "send to stream":
            stream = random.choice(self.streams[:1] * 2 + self.streams)
            sender = random.choice(self.members[stream])
            response = await self.call(
                conn,
                "POST",
                "/messages",
                sender.auth,
                {
                    "type": "stream",
                    "to": stream,
                    "topic": f"topic {random.randrange(TOPICS)}",
                    "content": self.content(),
                },
            )
            if response.status == 200:
                self.recent.append(Sent(response.json()["id"], sender, self.members[stream]))
            return response
        if kind == "send direct message":
            sender, *others = random.sample(users, random.choice((2, 2, 3)))
            response = await self.call(
                conn,
                "POST",
                "/messages",
                sender.auth,
                {"type": "direct", "to": [u.user_id for u in others], "content": self.content()},
            )
            if response.status == 200:
                self.recent.append(Sent(response.json()["id"], sender, [sender, *others]))
            return response
        if not self.recent:
            return None
        if kind == "add reaction":
            sent = random.choice(self.recent)
            user, emoji = random.choice(sent.readers), random.choice(EMOJI)
            if (sent.message_id, user, emoji) in self.reactions:
                return None
            response = await self.call(
                conn,
                "POST",
                f"/messages/{sent.message_id}/reactions",
                user.auth,
                {"emoji_name": emoji},
            )
            if response.status == 200:
                self.reactions.append((sent.message_id, user, emoji))
            return response
        if kind == "remove reaction":
            if not self.reactions:
                return None
            message_id, user, emoji = self.reactions.popleft()
            return await self.call(
                conn,
                "DELETE",
                f"/messages/{message_id}/reactions",
                user.auth,
                {"emoji_name": emoji},
            )
        if kind == "edit message":
            sent = random.choice(self.recent)
            return await self.call(
                conn,
                "PATCH",
                f"/messages/{sent.message_id}",
                sent.sender.auth,
                {"content": self.content() + "\n(edited)"},
            )
        if kind == "change flags":
            user = random.choice(users)
            visible = [s.message_id for s in self.recent if user in s.readers][-50:]
            if not visible:
                return None
            ids = random.sample(visible, min(5, len(visible)))
            return await self.call(
                conn,
                "POST",
                "/messages/flags",
                user.auth,
                {
                    "messages": ids,
                    "op": random.choice(("add", "remove")),
                    "flag": random.choice(("read", "read", "starred")),
                },
            )
        if kind == "presence":
            user = random.choice(users)
            return await self.call(
                conn,
                "POST",
                "/users/me/presence",
                user.auth,
                {"status": random.choice(("active", "idle")), "new_user_input": "true"},
            )
        if kind == "typing":
            sender, other = random.sample(users, 2)
            return await self.call(
                conn, "POST", "/typing", sender.auth, {"op": "start", "to": [other.user_id]}
            )
        if kind == "read topic":
            user = random.choice(users)
            narrow = [
                {"operator": "channel", "operand": self.streams[0]},
                {"operator": "topic", "operand": f"topic {random.randrange(TOPICS)}"},
            ]
            return await self.call(
                conn,
                "GET",
                "/messages",
                user.auth,
                query={
                    "anchor": "newest",
                    "num_before": "50",
                    "num_after": "0",
                    "narrow": narrow,
                    "apply_markdown": "true",
                },
            )
        if kind == "reload":
            index = random.randrange(len(self.queues))
            old = self.queues[index]
            fresh = await self.register(conn, old.user)
            self.queues[index] = fresh
            return await self.call(
                conn, "DELETE", "/events", old.user.auth, {"queue_id": old.queue_id}
            )
        raise ValueError(kind)

    async def run_op(self, kind: str, connections: asyncio.Queue[Connection]) -> None:
        conn = await connections.get()
        started = time.perf_counter()
        try:
            response = await self.op(kind, conn)
        except (ConnectionClosed, OSError, RuntimeError) as exc:
            self.errors[f"{kind}: {type(exc).__name__}"] += 1
            conn.close()
            return
        finally:
            connections.put_nowait(conn)
        if response is None:
            return
        self.ops += 1
        self.latencies.setdefault(kind, []).append(time.perf_counter() - started)
        if response.status != 200:
            code = ""
            with contextlib.suppress(Exception):
                code = response.json().get("code", "")
            if kind == "poll" and code == "BAD_EVENT_QUEUE_ID":
                return
            key = f"{kind}: {response.status} {code}"
            self.errors[key] += 1
            self.error_examples.setdefault(key, response.body[:200].decode(errors="replace"))

    async def drive(self, seconds: float) -> None:
        kinds, weights = list(MIX), list(MIX.values())
        connections: asyncio.Queue[Connection] = asyncio.Queue()
        for _ in range(self.args.connections):
            connections.put_nowait(Connection(self.server.host, self.server.port))
        tasks: set[asyncio.Task[None]] = set()
        interval = 1.0 / self.args.rate
        end = time.monotonic() + seconds
        next_at = time.monotonic()
        next_sample = self.started + self.args.sample_every * (len(self.samples))
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_sample:
                self.sample("load")
                next_sample += self.args.sample_every
                # A snapshot stops both processes for a while; the lost time is not made up.
                next_at = max(next_at, time.monotonic())
            if now < next_at:
                await asyncio.sleep(next_at - now)
                continue
            next_at += interval
            if len(tasks) >= self.args.connections * 4:
                self.errors["client: op skipped, server behind"] += 1
                continue
            task = asyncio.create_task(self.run_op(random.choices(kinds, weights)[0], connections))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.wait(tasks)
        while not connections.empty():
            connections.get_nowait().close()

    # --- measuring ------------------------------------------------------------------------

    def sample(self, phase: str) -> Sample:
        pid = self.server.pid
        snapshot = None
        stats: dict[str, Any] = {}
        if self.args.memstats:
            stats = self.memstats()
        if self.args.tracemalloc:
            snapshot = self.take_snapshot(len(self.samples))
        sample = Sample(
            minute=round((time.monotonic() - self.started) / 60, 2),
            phase=phase,
            rss_mb=round(rss_mb(pid), 1),
            queues=len(self.queues),
            ops=self.ops,
            errors=sum(self.errors.values()),
            server_cpu_s=round(cpu_seconds(pid), 1),
            snapshot=snapshot,
            **stats,
        )
        self.samples.append(sample)
        log(
            f"{sample.minute:6.2f} min {phase:7s} RSS {sample.rss_mb:6.1f} MB, "
            f"{sample.ops} ops, {sample.errors} errors"
        )
        return sample

    def memstats(self) -> dict[str, Any]:
        """Asks the server's hook for its figures; the line it appends."""
        path = self.args.snapshot_dir / "memstats.jsonl"
        before = path.read_text().count("\n") if path.exists() else 0
        (self.args.snapshot_dir / "stats.request").touch()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            lines = path.read_text().splitlines() if path.exists() else []
            if len(lines) > before:
                line = orjson.loads(lines[before])
                malloc = line.get("malloc", {})
                mb = 1024 * 1024
                pymalloc = line.get("pymalloc", {})
                self.last_memstats = line
                return {
                    "pymalloc_mb": round(pymalloc.get("arenas", 0) * 2**20 / mb, 1),
                    "pymalloc_used_mb": round(pymalloc.get("allocated_blocks", 0) / mb, 1),
                    "bus_events": line.get("bus_events"),
                    "sqlite_mb": round(line.get("sqlite_used", 0) / mb, 2),
                    "heap_used_mb": round(
                        (malloc.get("uordblks", 0) + malloc.get("hblkhd", 0)) / mb, 2
                    ),
                    "heap_free_mb": round(malloc.get("fordblks", 0) / mb, 2),
                    "gc_objects": line.get("gc_objects"),
                    "traced_mb": round(line["traced"] / mb, 2) if "traced" in line else None,
                }
            time.sleep(0.1)
        log("no memstats line after 15 s")
        return {}

    def take_snapshot(self, number: int) -> str | None:
        """Asks the server's hook for a snapshot; waits for it (written as ``.tmp``, then
        renamed)."""
        path = self.args.snapshot_dir / f"soak-{number:03d}.snapshot"
        (self.args.snapshot_dir / "snapshot.request").touch()
        deadline = time.monotonic() + 120
        while not path.exists():
            if time.monotonic() > deadline:
                log(f"no snapshot {path} after 120 s")
                return None
            time.sleep(0.2)
        return str(path)

    async def wait_sampling(self, seconds: float, phase: str) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            await asyncio.sleep(min(self.args.sample_every, max(0.0, end - time.monotonic())))
            self.sample(phase)

    async def count_live_queues(self) -> int:
        """How many of our queues the server still has (a non-blocking poll of each; it
        refreshes the queue's last access, so only done at the very end)."""
        live = 0
        conn = Connection(self.server.host, self.server.port)
        try:
            for queue in self.queues:
                response = await self.call(
                    conn,
                    "GET",
                    "/events",
                    queue.user.auth,
                    query={"queue_id": queue.queue_id, "dont_block": "true"},
                )
                live += response.status == 200
        finally:
            conn.close()
        return live

    async def run(self) -> dict[str, Any]:
        args, server = self.args, self.server
        r: dict[str, Any] = result_header()
        r["config"] = {
            "minutes": args.minutes,
            "queues": args.queues,
            "rate": args.rate,
            "users": args.users,
            "streams": args.streams,
            "lifespan_s": args.lifespan,
            "seed_mb": args.seed_mb,
            "tracemalloc_frames": args.tracemalloc,
            "memstats": args.memstats,
            "mix": MIX,
            **backend_config(args),
        }
        server.start()
        await server.wait_ready()
        await asyncio.sleep(1.0)
        owner_email, owner_key = server.owner_credentials()
        owner = basic_auth(owner_email, owner_key)
        r["rss_idle_mb"] = round(rss_mb(server.pid), 1)
        r["peak_rss_idle_mb"] = round(proc_status_kb(server.pid, "VmHWM") / 1024, 1)
        log(f"server pid {server.pid}; idle RSS {r['rss_idle_mb']} MB")
        await self.create_users(owner)
        await self.create_streams(owner)
        if args.seed_mb:
            await self.seed(owner)
        await self.register_all()
        r["rss_after_setup_mb"] = round(rss_mb(server.pid), 1)
        r["peak_rss_after_setup_mb"] = round(proc_status_kb(server.pid, "VmHWM") / 1024, 1)
        log(f"{len(self.users)} users, {len(self.streams)} streams, {len(self.queues)} queues")
        self.started = time.monotonic()
        await self.drive(args.minutes * 60)
        self.sample("load")
        # Every queue expires once it has been idle for its lifespan, at the next expiry run.
        wait = args.expiry_wait or args.lifespan + 2 * QUEUE_GC_SECONDS + 10
        log(f"load over; waiting {wait:.0f} s for the queues to expire")
        await self.wait_sampling(wait, "expired")
        if args.memstats:
            # What of the RSS is memory glibc holds freed (malloc_trim gives it back).
            (args.snapshot_dir / "trim.request").touch()
            self.sample("trimmed")
            r["malloc_trim"] = {
                "rss_before_mb": round(self.last_memstats.get("rss_before_trim_kb", 0) / 1024, 1),
                "rss_after_mb": round(self.last_memstats.get("rss_after_trim_kb", 0) / 1024, 1),
                "trim_ms": self.last_memstats.get("trim_ms"),
            }
        r["live_queues_at_end"] = await self.count_live_queues()
        r["samples"] = [vars(s) for s in self.samples]
        r["ops"] = self.ops
        r["events_received"] = self.events_received
        r["queues_lost_and_registered_again"] = self.queues_lost
        r["errors"] = dict(self.errors.most_common())
        r["error_examples"] = self.error_examples
        r["latency"] = {
            kind: {"count": len(values), **latency_summary(values)}
            for kind, values in sorted(self.latencies.items())
        }
        r["peak_rss_mb"] = round(proc_status_kb(server.pid, "VmHWM") / 1024, 1)
        return r


def print_table(r: dict[str, Any]) -> None:
    samples = r["samples"]
    base = samples[0]["rss_mb"]
    print(
        f"\nsoak: {r['config']['queues']} queues, {r['config']['rate']} ops/s, "
        f"{r['config']['minutes']} min, lifespan {r['config']['lifespan_s']} s, "
        f"{r['config']['database']}/{r['config']['bus']}; commit {r['commit'][:12]}"
    )
    print(
        f"RSS idle {r['rss_idle_mb']} MB (peak {r.get('peak_rss_idle_mb')}), after setup "
        f"{r['rss_after_setup_mb']} MB (peak {r.get('peak_rss_after_setup_mb')})"
    )
    stats = r["config"]["memstats"]
    extra = (
        " queued events | pymalloc arenas MB (used) | SQLite MB | glibc heap used MB |"
        " glibc free MB |"
        if stats
        else ""
    )
    print("| minute | phase | RSS MB | Δ from first | ops | errors | server CPU s |" + extra)
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |" + " ---: |" * (5 if stats else 0))
    for s in samples:
        row = (
            f"| {s['minute']:.1f} | {s['phase']} | {s['rss_mb']:.1f} | "
            f"{s['rss_mb'] - base:+.1f} | {s['ops']} | {s['errors']} | {s['server_cpu_s']} |"
        )
        if stats:
            row += (
                f" {s['bus_events']} | {s['pymalloc_mb']} ({s['pymalloc_used_mb']}) |"
                f" {s['sqlite_mb']} | {s['heap_used_mb']} | {s['heap_free_mb']} |"
            )
        print(row)
    load = [s for s in samples if s["phase"] == "load"]
    if len(load) >= 4:
        half = load[len(load) // 2]
        last = load[-1]
        span = last["minute"] - half["minute"]
        if span > 0:
            print(
                f"second half of the load: {(last['rss_mb'] - half['rss_mb']) / span:+.2f} MB/min"
            )
    if "malloc_trim" in r:
        trim = r["malloc_trim"]
        print(
            f"malloc_trim(0) at the end: RSS {trim['rss_before_mb']} -> {trim['rss_after_mb']} MB"
            f" in {trim['trim_ms']} ms"
        )
    print(
        f"ops {r['ops']}, events received {r['events_received']}, queues still live at the "
        f"end {r['live_queues_at_end']}, peak RSS {r['peak_rss_mb']} MB"
    )
    print("| operation | count | p50 ms | p99 ms |")
    print("| --- | ---: | ---: | ---: |")
    for kind, lat in r["latency"].items():
        print(f"| {kind} | {lat['count']} | {lat['p50_ms']} | {lat['p99_ms']} |")
    if r["errors"]:
        print("errors:", r["errors"])
        for key, body in r.get("error_examples", {}).items():
            print(f"  {key}: {body}")


def compare(paths: list[str], top: int, group: str, frames: int, exclude: list[str]) -> None:
    """What grew between two tracemalloc snapshots of the server, biggest first."""
    import tracemalloc

    first, second = (tracemalloc.Snapshot.load(p) for p in paths)
    noise = [
        tracemalloc.Filter(False, tracemalloc.__file__),
        tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
        tracemalloc.Filter(False, "<frozen importlib._bootstrap_external>"),
        tracemalloc.Filter(False, "<unknown>"),
    ]
    noise += [tracemalloc.Filter(False, pattern, all_frames=True) for pattern in exclude]
    first, second = first.filter_traces(noise), second.filter_traces(noise)
    total = [sum(t.size for t in s.traces) / 1e6 for s in (first, second)]
    print(f"traced: {total[0]:.2f} MB -> {total[1]:.2f} MB ({total[1] - total[0]:+.2f} MB)")
    for stat in second.compare_to(first, group)[:top]:
        if stat.size_diff <= 0:
            continue
        print(
            f"\n{stat.size_diff / 1024:+9.1f} KiB ({stat.count_diff:+d} blocks), "
            f"now {stat.size / 1024:.1f} KiB"
        )
        for line in stat.traceback.format(limit=frames, most_recent_first=True):
            print("   ", line)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="load duration")
    parser.add_argument("--queues", type=int, default=300)
    parser.add_argument("--rate", type=float, default=20.0, help="operations a second")
    parser.add_argument("--users", type=int, default=30)
    parser.add_argument("--streams", type=int, default=5)
    parser.add_argument("--lifespan", type=int, default=120, help="queue_lifespan_secs")
    parser.add_argument("--sample-every", type=float, default=30.0, help="seconds")
    parser.add_argument(
        "--expiry-wait", type=float, default=0.0, help="seconds after the load (lifespan + 130)"
    )
    parser.add_argument("--connections", type=int, default=8, help="client connections")
    parser.add_argument(
        "--seed-mb",
        type=float,
        default=0.0,
        help="first fill the database to this many MB with long messages (0: none)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--database-url", default="", help="passed to hubbub serve")
    parser.add_argument("--redis-url", default="", help="passed to hubbub serve")
    parser.add_argument(
        "--tracemalloc", type=int, default=0, help="frames; a server snapshot at each sample"
    )
    parser.add_argument(
        "--memstats",
        action="store_true",
        help="at each sample, SQLite's and glibc's heap figures from the server's hook",
    )
    parser.add_argument("--json", type=Path, help="default bench/results/soak-<minutes>m.json")
    parser.add_argument("--compare", nargs=2, metavar="SNAPSHOT", help="diff two snapshots")
    parser.add_argument("--group", default="traceback", choices=("traceback", "lineno", "filename"))
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--frames", type=int, default=12, help="frames shown per entry")
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        help="leave out allocations with a frame in files matching this (fnmatch) pattern",
    )
    args = parser.parse_args(argv)
    if args.queues < 1 or args.rate <= 0 or args.users < 3 or args.streams < 1:
        parser.error("--queues, --rate, --streams must be positive and --users at least 3")
    return args


async def amain(args: argparse.Namespace, workdir: Path) -> tuple[dict[str, Any], Server]:
    server = Server(args, workdir)
    soak = Soak(args, server)
    try:
        result = await soak.run()
    finally:
        server.stop()
    result["server_exit_code"] = server.exit_code
    result["server_log_problems"] = server.problems()
    return result, server


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.compare:
        compare(args.compare, args.top, args.group, args.frames, args.exclude)
        return 0
    random.seed(args.seed)
    stem = f"soak-{args.minutes:g}m" + ("-tracemalloc" if args.tracemalloc else "")
    stem += "-memstats" if args.memstats and not args.tracemalloc else ""
    json_path = (args.json or RESULTS_DIR / f"{stem}.json").resolve()
    args.snapshot_dir = json_path.with_suffix("").with_name(json_path.stem + "-snapshots")
    if args.tracemalloc or args.memstats:
        args.snapshot_dir.mkdir(parents=True, exist_ok=True)
        for old in [*args.snapshot_dir.glob("*.snapshot"), args.snapshot_dir / "memstats.jsonl"]:
            old.unlink(missing_ok=True)
        # Not HUBBUB_*: Server passes these through to hubbub serve (and its exec).
        if args.tracemalloc:
            os.environ["SOAK_TRACEMALLOC"] = str(args.tracemalloc)
        os.environ["SOAK_SNAPSHOT_DIR"] = str(args.snapshot_dir)
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(HOOK_DIR), os.environ.get("PYTHONPATH", "")) if p
        )
    workdir = Path(tempfile.mkdtemp(prefix="hubbub-soak-"))
    try:
        result, _ = run_and_save(lambda: amain(args, workdir), json_path)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_table(result)
    print(f"wrote {json_path}")
    if result["server_log_problems"]:
        print("server log (count: line):")
        for line, count in list(result["server_log_problems"].items())[:20]:
            print(f"  {count:6d}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
