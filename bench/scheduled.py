"""Scheduled-message delivery latency: how long after its due time a scheduled message
reaches a long-polling client.

Starts ``hubbub serve`` (``longpoll.py``'s ``Server``), schedules ``--messages`` stream
messages due over the next ``--spread`` seconds (Zulip's timestamps are whole seconds), and
long-polls a queue registered for ``message`` events; each arrival is compared with its
due time. The budget is one second (Zulip checks once a minute).

    .venv/bin/python bench/scheduled.py
    .venv/bin/python bench/scheduled.py --database-url postgresql://postgres@127.0.0.1/DB \
        --redis-url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import asyncio
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
    Server,
    api_call,
    basic_auth,
    git_commit,
    latency_summary,
    log,
)

BUDGET_MS = 1000.0


async def _schedule(
    conn: Connection, auth: str, stream_id: int, args: argparse.Namespace
) -> dict[str, float]:
    """Content -> due time, for every scheduled message."""
    first_due = int(time.time()) + 3
    due_of: dict[str, float] = {}
    for i in range(args.messages):
        due = first_due + (i * args.spread) // args.messages
        content = f"scheduled {i}"
        await api_call(
            conn,
            "POST",
            "/scheduled_messages",
            auth=auth,
            form={
                "type": "stream",
                "to": str(stream_id),
                "topic": "bench",
                "content": content,
                "scheduled_delivery_timestamp": str(due),
            },
        )
        due_of[f"<p>{content}</p>"] = float(due)
    return due_of


async def _collect(
    conn: Connection, auth: str, queue_id: str, due_of: dict[str, float], patience: float
) -> list[float]:
    """Long-poll until every message arrived; latency (arrival - due) of each."""
    latencies: list[float] = []
    last_event_id = -1
    deadline = time.monotonic() + patience
    while len(latencies) < len(due_of) and time.monotonic() < deadline:
        query = urlencode({"queue_id": queue_id, "last_event_id": last_event_id})
        data = await api_call(conn, "GET", f"/events?{query}", auth=auth)
        arrived = time.time()
        for event in data["events"]:
            last_event_id = max(last_event_id, event["id"])
            if event["type"] == "message" and event["message"]["content"] in due_of:
                latencies.append(arrived - due_of[event["message"]["content"]])
    return latencies


async def amain(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    server = Server(args, workdir)
    server.start()
    try:
        await server.wait_ready()
        email, api_key = server.owner_credentials()
        auth = basic_auth(email, api_key)
        conn = Connection(server.host, server.port)
        await conn.open()
        await api_call(
            conn,
            "POST",
            "/users/me/subscriptions",
            auth=auth,
            form={"subscriptions": orjson.dumps([{"name": "scheduled"}]).decode()},
        )
        query = urlencode({"stream": "scheduled"})
        stream_id = (await api_call(conn, "GET", f"/get_stream_id?{query}", auth=auth))["stream_id"]
        queue = await api_call(
            conn,
            "POST",
            "/register",
            auth=auth,
            form={"event_types": '["message"]', "apply_markdown": "true"},
        )
        due_of = await _schedule(conn, auth, stream_id, args)
        log(f"scheduled {len(due_of)} messages over {args.spread} s")
        latencies = await _collect(conn, auth, queue["queue_id"], due_of, args.spread + 30)
        conn.close()
    finally:
        server.stop()
    summary = latency_summary(latencies)
    return {
        "commit": git_commit(),
        "database": "postgresql" if args.database_url.startswith("postgres") else "sqlite",
        "messages": args.messages,
        "delivered": len(latencies),
        "min_ms": round(min(latencies) * 1000, 1) if latencies else None,
        **summary,
        "budget_ms": BUDGET_MS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--spread", type=int, default=10, help="seconds the due times span")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--redis-url", default="")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="hubbub-bench-sched-"))
    try:
        result = asyncio.run(amain(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"scheduled-{result['database']}.json"
    out.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n")
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    print(f"wrote {out}")
    missed = result["delivered"] < result["messages"]
    return 1 if missed or (result["p99_ms"] or 0) > BUDGET_MS else 0


if __name__ == "__main__":
    sys.exit(main())
