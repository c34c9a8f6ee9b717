"""Throughput per worker: a closed loop of API requests against ``hubbub serve``.

Starts the server (SQLite in one process, or PostgreSQL + Redis with ``--workers N``),
creates ``--users`` members subscribed to one stream, then keeps ``--connections``
keep-alive connections busy for ``--duration`` seconds with a mix of the requests an active
user makes: ``GET /messages`` on a stream + topic narrow (50 messages), ``POST /messages``
to the stream, ``POST /users/me/presence`` and ``GET /messages`` with a search narrow.
Reports requests per second, latency per kind, errors, and the server's CPU seconds per
request summed over every process (so a request's cost includes all workers' work).

    .venv/bin/python bench/throughput.py                          # SQLite, one process
    psql -h 127.0.0.1 -U postgres -d test -c 'CREATE DATABASE hubbub_bench_tp'
    .venv/bin/python bench/throughput.py --workers 2 \\
        --database-url postgresql://postgres@127.0.0.1/hubbub_bench_tp \\
        --redis-url redis://127.0.0.1:6379/0
    psql -h 127.0.0.1 -U postgres -d test -c 'DROP DATABASE hubbub_bench_tp WITH (FORCE)'

The database must be empty (the server creates the organization). See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import orjson
from longpoll import (
    RESULTS_DIR,
    Connection,
    ConnectionClosed,
    Server,
    api_call,
    basic_auth,
    git_commit,
    latency_summary,
    log,
    raise_nofile_limit,
    tree_cpu_seconds,
    tree_rss_mb,
)

MIX = {"fetch_topic": 0.5, "send": 0.25, "presence": 0.2, "search": 0.05}
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


async def setup(server: Server, users: int) -> list[str]:
    owner_email, owner_key = server.owner_credentials()
    owner = basic_auth(owner_email, owner_key)
    conn = Connection(server.host, server.port)
    auths = [owner]
    emails = [owner_email]
    for i in range(users):
        email = f"tp{i}@example.com"
        await api_call(
            conn,
            "POST",
            "/users",
            auth=owner,
            form={"email": email, "password": "a long password", "full_name": f"Load {i}"},
        )
        key = (
            await api_call(
                conn,
                "POST",
                "/fetch_api_key",
                form={"username": email, "password": "a long password"},
            )
        )["api_key"]
        auths.append(basic_auth(email, key))
        emails.append(email)
    await api_call(
        conn,
        "POST",
        "/users/me/subscriptions",
        auth=owner,
        form={
            "subscriptions": orjson.dumps([{"name": "load"}]).decode(),
            "principals": orjson.dumps(emails).decode(),
        },
    )
    # Some history, so that fetches and searches return messages.
    for i in range(200):
        await api_call(
            conn,
            "POST",
            "/messages",
            auth=auths[i % len(auths)],
            form={
                "type": "stream",
                "to": "load",
                "topic": f"topic {i % 10}",
                "content": " ".join(random.choices(WORDS, k=8)),
            },
        )
    conn.close()
    return auths


def _request(kind: str, rng: random.Random) -> tuple[str, str, dict[str, str] | None]:
    topic = f"topic {rng.randrange(10)}"
    if kind == "send":
        content = " ".join(rng.choices(WORDS, k=8))
        form = {"type": "stream", "to": "load", "topic": topic, "content": content}
        return "POST", "/api/v1/messages", form
    if kind == "presence":
        return "POST", "/api/v1/users/me/presence", {"status": "active"}
    terms: list[dict[str, str]]
    if kind == "search":
        terms = [{"operator": "search", "operand": rng.choice(WORDS)}]
    else:
        terms = [
            {"operator": "stream", "operand": "load"},
            {"operator": "topic", "operand": topic},
        ]
    query = urlencode(
        {"anchor": "newest", "num_before": 50, "num_after": 0, "narrow": orjson.dumps(terms)}
    )
    return "GET", f"/api/v1/messages?{query}", None


async def drive(
    server: Server, auths: list[str], connections: int, duration: float, seed: int
) -> dict[str, Any]:
    latencies: dict[str, list[float]] = {kind: [] for kind in MIX}
    errors: dict[str, int] = {kind: 0 for kind in MIX}
    deadline = time.monotonic() + duration
    kinds, weights = list(MIX), list(MIX.values())

    async def loop(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        conn = Connection(server.host, server.port)
        auth = auths[index % len(auths)]
        while time.monotonic() < deadline:
            kind = rng.choices(kinds, weights)[0]
            method, path, form = _request(kind, rng)
            started = time.perf_counter()
            try:
                response = await conn.request(method, path, auth=auth, form=form)
                ok = response.status == 200
            except (ConnectionClosed, OSError):
                ok = False
            if ok:
                latencies[kind].append(time.perf_counter() - started)
            else:
                errors[kind] += 1
        conn.close()

    cpu_before = tree_cpu_seconds(server.pid)
    started = time.monotonic()
    await asyncio.gather(*(loop(i) for i in range(connections)))
    elapsed = time.monotonic() - started
    cpu = tree_cpu_seconds(server.pid) - cpu_before
    count = sum(len(v) for v in latencies.values())
    return {
        "seconds": round(elapsed, 1),
        "requests": count,
        "requests_per_s": round(count / elapsed, 1),
        "errors": sum(errors.values()),
        "server_cpu_s": round(cpu, 2),
        "server_cpu_ms_per_request": round(1000 * cpu / max(count, 1), 2),
        "by_kind": {
            kind: {"count": len(v), "errors": errors[kind], **latency_summary(v)}
            for kind, v in latencies.items()
        },
    }


async def amain(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    server = Server(args, workdir)
    server.start()
    try:
        await server.wait_ready()
        random.seed(args.seed)
        auths = await setup(server, args.users)
        log(f"warming up for {args.warmup} s")
        await drive(server, auths, args.connections, args.warmup, args.seed + 1)
        log(f"measuring for {args.duration} s with {args.connections} connections")
        result = await drive(server, auths, args.connections, args.duration, args.seed)
        result["server_rss_mb"] = round(tree_rss_mb(server.pid), 1)
    finally:
        server.stop()
        await server.drop_redis_keys()
    return {
        "commit": git_commit(),
        "config": {
            "database": "postgresql" if args.database_url else "sqlite",
            "bus": "redis" if args.redis_url else "memory",
            "workers": args.workers,
            "connections": args.connections,
            "users": args.users,
            "mix": MIX,
        },
        **result,
        "server_log_problems": server.problems(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--users", type=int, default=32)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--redis-url", default="")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.workers > 1 and not (args.database_url and args.redis_url):
        parser.error("--workers above 1 needs --database-url (PostgreSQL) and --redis-url")
    raise_nofile_limit()
    workdir = Path(tempfile.mkdtemp(prefix="hubbub-bench-tp-"))
    try:
        result = asyncio.run(amain(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    suffix = f"-{result['config']['database']}-w{args.workers}"
    json_path = args.json or RESULTS_DIR / f"throughput{suffix}.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n")
    print(
        f"{result['config']['database']}, {args.workers} worker(s), {args.connections} "
        f"connections: {result['requests_per_s']} requests/s, {result['errors']} errors, "
        f"{result['server_cpu_ms_per_request']} ms server CPU per request, "
        f"RSS {result['server_rss_mb']} MB"
    )
    for kind, v in result["by_kind"].items():
        print(f"  {kind:<12} {v['count']:>7}  p50 {v['p50_ms']} ms  p99 {v['p99_ms']} ms")
    print(f"wrote {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
