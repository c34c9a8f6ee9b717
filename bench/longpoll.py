"""Long-poll benchmark: idle memory of N open long-polls and event fan-out latency.

Starts ``hubbub serve`` as a separate process, creates users, registers N event queues,
opens one long-poll (``GET /api/v1/events``) per queue on its own TCP connection, measures
the server's RSS with all of them open, then has the owner rename a user (a ``realm_user``
update that goes to every queue) and measures how long each client waits for it.

    .venv/bin/python bench/longpoll.py --clients 10000
    .venv/bin/python bench/longpoll.py --clients 2000 \
        --database-url postgresql://postgres@127.0.0.1/hubbub_bench_x \
        --redis-url redis://127.0.0.1:6379/0

The client is a minimal HTTP/1.1 client on asyncio streams (one connection per long-poll,
Basic auth, keep-alive, Content-Length or chunked bodies): a general-purpose client costs
too much per request to hold 10,000 of them in one process. See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import configparser
import contextlib
import gc
import math
import os
import platform
import re
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import orjson

RESULTS_DIR = Path(__file__).resolve().parent / "results"
STARTUP_TIMEOUT = 120.0
SHUTDOWN_TIMEOUT = 30.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
# The server ends a quiet long-poll with a heartbeat after 45-55 s; an event is only
# triggered while the oldest open poll is younger than this.
HEARTBEAT_SAFE_AGE = 40.0
# uvicorn closes a keep-alive connection idle for 5 s; reconnect before reusing an older one.
KEEPALIVE_REUSE_SECONDS = 4.0
# A long-poll answered with a 5xx is sent again after this pause.
SERVER_ERROR_RETRY_SECONDS = 1.0


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- a minimal HTTP/1.1 client ------------------------------------------------------------


class ConnectionClosed(Exception):
    """The server closed the connection before (or while) sending a response."""


@dataclass
class Response:
    status: int
    headers: dict[bytes, bytes]
    body: bytes
    arrived: float  # time.perf_counter() when the whole response had been read

    def json(self) -> Any:
        return orjson.loads(self.body)


def basic_auth(email: str, api_key: str) -> str:
    return "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode()


class Connection:
    """One keep-alive HTTP/1.1 connection; requests on it are sequential."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.closed = True
        self.last_used = 0.0

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.closed = False
        self.last_used = time.monotonic()

    async def ensure_open(self) -> None:
        stale = time.monotonic() - self.last_used > KEEPALIVE_REUSE_SECONDS
        if self.closed or stale:
            self.close()
            await self.open()

    def send(
        self,
        method: str,
        path: str,
        *,
        auth: str | None = None,
        form: dict[str, str] | None = None,
    ) -> None:
        assert self.writer is not None
        lines = [
            f"{method} {path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "User-Agent: hubbub-bench/1",
            "Connection: keep-alive",
        ]
        if auth:
            lines.append(f"Authorization: {auth}")
        body = b""
        if form is not None:
            body = urlencode(form).encode()
            lines.append("Content-Type: application/x-www-form-urlencoded")
        if form is not None or method in ("POST", "PATCH", "PUT"):
            lines.append(f"Content-Length: {len(body)}")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        self.last_used = time.monotonic()

    async def read_response(self) -> Response:
        assert self.reader is not None
        try:
            status_line = await self.reader.readline()
            if not status_line:
                raise ConnectionClosed("connection closed before a response")
            parts = status_line.split(None, 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
                raise ConnectionClosed(f"bad status line {status_line!r}")
            status = int(parts[1])
            headers: dict[bytes, bytes] = {}
            while True:
                line = await self.reader.readline()
                if line in (b"\r\n", b"\n"):
                    break
                if not line:
                    raise ConnectionClosed("connection closed inside the headers")
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
            if b"content-length" in headers:
                body = await self.reader.readexactly(int(headers[b"content-length"]))
            elif headers.get(b"transfer-encoding", b"").lower() == b"chunked":
                chunks = []
                while True:
                    size = int((await self.reader.readline()).split(b";")[0], 16)
                    if size == 0:
                        while (await self.reader.readline()) not in (b"\r\n", b"\n", b""):
                            pass
                        break
                    chunks.append(await self.reader.readexactly(size))
                    await self.reader.readexactly(2)
                body = b"".join(chunks)
            else:
                body = await self.reader.read()
                self.closed = True
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            self.close()
            raise ConnectionClosed(str(exc) or type(exc).__name__) from exc
        arrived = time.perf_counter()
        self.last_used = time.monotonic()
        if headers.get(b"connection", b"").lower() == b"close":
            self.close()
        return Response(status, headers, body, arrived)

    async def request(
        self,
        method: str,
        path: str,
        *,
        auth: str | None = None,
        form: dict[str, str] | None = None,
    ) -> Response:
        """Send one request and read its response, (re)connecting when needed."""
        await self.ensure_open()
        self.send(method, path, auth=auth, form=form)
        return await self.read_response()

    def close(self) -> None:
        if self.writer is not None:
            with contextlib.suppress(Exception):
                self.writer.close()
        self.reader = self.writer = None
        self.closed = True


async def api_call(
    conn: Connection,
    method: str,
    path: str,
    *,
    auth: str | None = None,
    form: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A JSON API call that must succeed."""
    response = await conn.request(method, "/api/v1" + path, auth=auth, form=form)
    data = response.json()
    if response.status != 200 or data.get("result") != "success":
        raise RuntimeError(f"{method} {path} -> {response.status}: {response.body[:300]!r}")
    return data


# --- the server process -------------------------------------------------------------------


def raise_nofile_limit() -> int:
    """Soft RLIMIT_NOFILE up to the hard limit (the server child inherits it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def proc_status_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def rss_mb(pid: int) -> float:
    return proc_status_kb(pid, "VmRSS") / 1024


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the workers of ``serve --workers``)."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            for child in task.read_text().split():
                pids += process_tree(int(child))
    return pids


def tree_cpu_seconds(pid: int) -> float:
    total = 0.0
    for member in process_tree(pid):
        with contextlib.suppress(OSError, ValueError):
            total += cpu_seconds(member)
    return total


def tree_rss_mb(pid: int) -> float:
    total = 0.0
    for member in process_tree(pid):
        with contextlib.suppress(OSError, ValueError):
            total += rss_mb(member)
    return total


def tree_peak_rss_mb(pid: int) -> float:
    """The sum of each process's own peak RSS (they need not peak at once)."""
    total = 0.0
    for member in process_tree(pid):
        with contextlib.suppress(OSError, ValueError, KeyError):
            total += proc_status_kb(member, "VmHWM") / 1024
    return total


def cpu_seconds(pid: int) -> float:
    """utime + stime of the whole process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def git_commit() -> str:
    """The checked-out commit of the repository this script is in (+ "-dirty")."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("-dirty" if dirty else "")


def redacted(url: str) -> str:
    return re.sub(r"//([^:/@]+):[^@/]*@", r"//\1:***@", url)


async def drop_keys(redis_url: str, pattern: str) -> int:
    """Delete the keys matching ``pattern`` (the server's namespace); how many there were."""
    from redis.asyncio import Redis

    client = Redis.from_url(redis_url)
    try:
        removed, cursor = 0, 0
        while True:
            cursor, keys = await client.scan(cursor, match=pattern, count=1000)
            if keys:
                removed += await client.delete(*keys)
            if cursor == 0:
                return int(removed)
    finally:
        await client.aclose()


class Server:
    """``python -m hubbub serve`` in its own data directory, stopped by PID."""

    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args = args
        self.workdir = workdir
        self.port = free_port()
        self.host = "127.0.0.1"
        self.redis_namespace = f"hubbub-bench-{secrets.token_hex(4)}" if args.redis_url else ""
        self.stdout_path = workdir / "serve.stdout"
        self.stderr_path = workdir / "serve.stderr"
        self.proc: subprocess.Popen[bytes] | None = None
        self.exit_code: int | None = None
        self.shutdown_seconds: float | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> None:
        # The queues an earlier run's server saved at shutdown (the in-memory bus; on
        # Redis the namespace below keeps them out): restored, their clients long gone,
        # they would take every event for ten minutes more, on top of this run's.
        stale = self.workdir / "data" / "event_queues.json"
        if stale.exists():
            stale.unlink()
            log(f"removed the event queues an earlier run left in {stale}")
        env = {k: v for k, v in os.environ.items() if not k.startswith("HUBBUB_")}
        env["HUBBUB_RATE_LIMIT"] = "0"
        # The simulated clients log in from one address and share a few users among many
        # queues: lift the per-address login limit and the per-user queue cap, which
        # protect a real server from exactly that.
        env["HUBBUB_LOGIN_ATTEMPTS_PER_ADDRESS"] = "1000000"
        env["HUBBUB_MAX_QUEUES_PER_USER"] = "1000000"
        env["PYTHONUNBUFFERED"] = "1"
        if self.redis_namespace:
            # Our own key prefix: stale queues of other runs on the same Redis stay out.
            env["HUBBUB_REDIS_NAMESPACE"] = self.redis_namespace
        command = [
            sys.executable,
            "-m",
            "hubbub",
            "serve",
            "--port",
            str(self.port),
            "--data-dir",
            str(self.workdir / "data"),
        ]
        if self.args.database_url:
            command += ["--database-url", self.args.database_url]
        if self.args.redis_url:
            command += ["--redis-url", self.args.redis_url]
        if getattr(self.args, "workers", 1) > 1:
            command += ["--workers", str(self.args.workers)]
        log(f"starting: {' '.join(redacted(part) for part in command)}")
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                command,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=self.workdir,
                start_new_session=True,  # a Ctrl-C reaches only us; we stop it by PID
            )

    async def wait_ready(self) -> float:
        started = time.monotonic()
        conn = Connection(self.host, self.port)
        try:
            while True:
                if self.proc is not None and self.proc.poll() is not None:
                    raise RuntimeError(
                        f"hubbub serve exited with status {self.proc.returncode}:\n"
                        + self.stderr_tail()
                    )
                # A migration that rebuilds a large table (0016: user_message on SQLite,
                # 162 s at full scale) is progress, not a hang: its log line says so.
                waited = time.monotonic() - started
                if waited > STARTUP_TIMEOUT and (
                    waited > 5 * STARTUP_TIMEOUT or "Running upgrade" not in self.stderr_tail()
                ):
                    raise RuntimeError(
                        "hubbub serve did not answer in time:\n" + self.stderr_tail()
                    )
                try:
                    response = await conn.request("GET", "/api/v1/server_settings")
                    if response.status == 200:
                        return time.monotonic() - started
                except (OSError, ConnectionClosed):
                    conn.close()
                await asyncio.sleep(0.1)
        finally:
            conn.close()

    def owner_credentials(self) -> tuple[str, str]:
        """The first owner's email and API key: from the zuliprc ``hubbub serve`` writes
        (it prints the key only on a terminal), else from its output."""
        zuliprc = configparser.ConfigParser()
        if zuliprc.read(self.workdir / "data" / "zuliprc") and zuliprc.has_section("api"):
            return zuliprc["api"]["email"], zuliprc["api"]["key"]
        text = self.stdout_path.read_text()
        email = re.search(r"^\s+Email:\s+(\S+)", text, re.MULTILINE)
        api_key = re.search(r"^\s+API key:\s+(\S+)", text, re.MULTILINE)
        if not email or not api_key:
            raise RuntimeError(f"no owner credentials in hubbub serve's output:\n{text}")
        return email.group(1), api_key.group(1)

    def stderr_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def problems(self) -> dict[str, int]:
        """How often each distinct WARNING/ERROR line (timestamps and numbers blanked) and
        each exception line appears in the server's stderr."""
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return {}
        counts: dict[str, int] = {}
        for line in text.splitlines():
            if not re.search(r"\b(WARNING|ERROR|CRITICAL)\b|^\w[\w.]*(Error|Exception):", line):
                continue
            key = re.sub(r"^\d{4}-\d\d-\d\d [\d:,]+ ", "", line)
            key = re.sub(r"\d+", "N", key)[:200]
            counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items(), key=lambda item: -item[1]))

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:
                self.exit_code = self.proc.returncode
            return
        started = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.exit_code = self.proc.wait(SHUTDOWN_TIMEOUT)
        except subprocess.TimeoutExpired:
            log(f"hubbub serve (pid {self.proc.pid}) ignored SIGTERM for {SHUTDOWN_TIMEOUT}s")
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGKILL)
            self.exit_code = self.proc.wait()
        self.shutdown_seconds = time.monotonic() - started

    async def drop_redis_keys(self) -> int:
        if not self.redis_namespace:
            return 0
        return await drop_keys(self.args.redis_url, f"{self.redis_namespace}:*")


async def wait_until_quiet(
    pid: int, *, threshold: float = 0.10, window: float = 0.5, limit: float = 120.0
) -> float:
    """Wait until the server uses less than ``threshold`` of a core over ``window`` seconds
    (it has worked through every request it had); return the seconds waited."""
    started = time.monotonic()
    previous = tree_cpu_seconds(pid)
    while time.monotonic() - started < limit:
        await asyncio.sleep(window)
        current = tree_cpu_seconds(pid)
        if (current - previous) / window < threshold:
            return time.monotonic() - started
        previous = current
    log(f"server still busy after {limit:.0f}s")
    return time.monotonic() - started


# --- statistics ---------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile (p in 0..100) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


@contextlib.contextmanager
def client_collector_paused() -> Iterator[None]:
    """No garbage collection in this (measuring) process while a round is measured.

    With thousands of connections open, the client's own full collections stopped it for
    tens of milliseconds, and the events that arrived meanwhile were counted as that much
    later: the server's delivery latency is what is measured. Collected after the round."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


def latency_summary(seconds: list[float]) -> dict[str, float | None]:
    return {
        "p50_ms": ms(percentile(seconds, 50)),
        "p95_ms": ms(percentile(seconds, 95)),
        "p99_ms": ms(percentile(seconds, 99)),
        "max_ms": ms(max(seconds) if seconds else None),
    }


async def bounded(limit: int, jobs: Iterable[Callable[[], Awaitable[Any]]]) -> list[Any]:
    semaphore = asyncio.Semaphore(limit)

    async def run(job: Callable[[], Awaitable[Any]]) -> Any:
        async with semaphore:
            return await job()

    return await asyncio.gather(*(run(job) for job in jobs))


# --- the long-polling clients -------------------------------------------------------------


@dataclass
class PollClient:
    index: int
    auth: str
    queue_id: str = ""
    last_event_id: int = -1
    conn: Connection | None = None
    pending: asyncio.Task[Response] | None = None
    armed_at: float = 0.0  # time.monotonic() when the current poll was sent
    heartbeats: int = 0
    reconnects: int = 0
    errors: list[str] = field(default_factory=list)
    dead: bool = False  # its queue answered with a 4xx error: no more polls

    def poll_path(self) -> str:
        return f"/api/v1/events?queue_id={self.queue_id}&last_event_id={self.last_event_id}"


class Poller:
    """Holds one long-poll open per client, re-arming after each response."""

    def __init__(self, host: str, port: int, connect_concurrency: int) -> None:
        self.host = host
        self.port = port
        self.connect_gate = asyncio.Semaphore(connect_concurrency)

    async def arm(self, client: PollClient) -> None:
        """(Re)connect if needed and send the next long-poll; does not wait for a reply."""
        if client.pending is not None:
            if client.pending.done():
                if not client.pending.cancelled():
                    client.pending.exception()  # retrieved: no "never retrieved" warning
            else:
                client.pending.cancel()
        conn = client.conn
        # The server drops a keep-alive connection idle for 5 s: reconnect before that.
        if (
            conn is None
            or conn.closed
            or time.monotonic() - conn.last_used > KEEPALIVE_REUSE_SECONDS
        ):
            if conn is not None:
                conn.close()
                client.reconnects += 1
            conn = client.conn = Connection(self.host, self.port)
            async with self.connect_gate:
                await conn.open()
        conn.send("GET", client.poll_path(), auth=client.auth)
        client.armed_at = time.monotonic()
        client.pending = asyncio.ensure_future(conn.read_response())

    async def arm_all(self, clients: list[PollClient], batch: int, pid: int) -> None:
        """Arm every client: all at once (batch 0), or ``batch`` at a time, waiting for the
        server to go quiet in between (so queued polls do not time out on the DB pool)."""
        if batch <= 0:
            await asyncio.gather(*(self.arm(c) for c in clients))
            return
        for start in range(0, len(clients), batch):
            await asyncio.gather(*(self.arm(c) for c in clients[start : start + batch]))
            await wait_until_quiet(pid)

    async def next_response(self, client: PollClient) -> Response:
        """The reply to the open poll; a connection the server closed is reopened and the
        (idempotent) poll sent again."""
        for attempt in range(3):
            assert client.pending is not None
            try:
                return await asyncio.shield(client.pending)
            except ConnectionClosed as exc:
                if attempt == 2:
                    raise
                log(f"client {client.index}: {exc}; reconnecting")
                await self.arm(client)
        raise AssertionError("unreachable")

    def absorb(self, client: PollClient, response: Response) -> list[dict[str, Any]]:
        """Events of a poll reply (advancing last_event_id); errors are recorded."""
        data = response.json()
        if response.status != 200 or data.get("result") != "success":
            client.errors.append(f"{response.status} {data.get('code')} {data.get('msg')}")
            if response.status < 500:
                client.dead = True  # e.g. BAD_EVENT_QUEUE_ID: this queue is gone
            return []
        events: list[dict[str, Any]] = data["events"]
        if events:
            client.last_event_id = max(client.last_event_id, *(e["id"] for e in events))
        client.heartbeats += sum(1 for e in events if e.get("type") == "heartbeat")
        return events

    async def settle_early_replies(self, clients: list[PollClient]) -> dict[str, int]:
        """Before an event: handle polls that already ended (heartbeats, errors) and re-arm
        them; a server error (5xx) is retried, as Zulip clients do; a 4xx ends the client."""
        counts = {"heartbeats": 0, "server_errors": 0, "other_events": 0, "reconnects": 0}
        for client in clients:
            if client.dead or client.pending is None or not client.pending.done():
                continue
            if client.pending.cancelled() or client.pending.exception() is not None:
                # The server closed the connection: reopen it and poll again.
                counts["reconnects"] += 1
                client.conn = None
                await self.arm(client)
                continue
            response = client.pending.result()
            before = client.heartbeats
            events = self.absorb(client, response)
            if client.dead:
                client.pending = None
                continue
            if response.status != 200:
                counts["server_errors"] += 1
            counts["heartbeats"] += client.heartbeats - before
            counts["other_events"] += sum(1 for e in events if e.get("type") != "heartbeat")
            await self.arm(client)
        return counts

    async def wait_for_marker(self, client: PollClient, marker: str) -> float | None:
        """When (``time.perf_counter()``) the client got the rename to ``marker``; None on
        error."""
        while True:
            try:
                response = await self.next_response(client)
            except ConnectionClosed as exc:
                client.errors.append(f"connection: {exc}")
                return None
            events = self.absorb(client, response)
            if client.dead:
                return None
            if response.status != 200:
                # A server error: retry after a pause, as Zulip clients do.
                await asyncio.sleep(SERVER_ERROR_RETRY_SECONDS)
                await self.arm(client)
                continue
            for event in events:
                person = event.get("person") or {}
                if event.get("type") == "realm_user" and person.get("full_name") == marker:
                    return response.arrived
            # A heartbeat (or something else) first: poll again and keep waiting.
            await self.arm(client)


# --- the benchmark ------------------------------------------------------------------------


@dataclass
class Phase:
    name: str
    wall_s: float
    server_cpu_s: float


class Bench:
    def __init__(self, args: argparse.Namespace, server: Server) -> None:
        self.args = args
        self.server = server
        self.result: dict[str, Any] = {}
        self.phases: list[Phase] = []
        self.clients: list[PollClient] = []

    async def phase(self, name: str, work: Awaitable[Any]) -> Any:
        wall, cpu = time.monotonic(), cpu_seconds(self.server.pid)
        log(f"{name} ...")
        value = await work
        phase = Phase(name, time.monotonic() - wall, round(cpu_seconds(self.server.pid) - cpu, 2))
        self.phases.append(phase)
        log(f"{name}: {phase.wall_s:.1f}s wall, server CPU {phase.server_cpu_s:.1f}s")
        return value

    async def run(self) -> dict[str, Any]:
        args, server = self.args, self.server
        r = self.result
        r["date"] = datetime.now(UTC).isoformat(timespec="seconds")
        r["commit"] = git_commit()
        r["machine"] = {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "client_event_loop": type(asyncio.get_running_loop()).__module__.split(".")[0],
            "nofile_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        }
        database = "postgresql" if args.database_url.startswith("postgres") else "sqlite"
        r["config"] = {
            "clients": args.clients,
            "users": args.users,
            "events": args.events,
            "database": database,
            "database_url": redacted(args.database_url) if args.database_url else "(default)",
            "bus": "redis" if args.redis_url else "memory",
            "redis_url": redacted(args.redis_url) if args.redis_url else None,
            "register_concurrency": args.register_concurrency,
            "connect_concurrency": args.connect_concurrency,
            "arm_batch": args.arm_batch,
            "settle_s": args.settle,
        }

        server.start()
        startup = await server.wait_ready()
        pid = server.pid
        cpu_start = cpu_seconds(pid)
        await asyncio.sleep(1.0)
        owner_email, owner_key = server.owner_credentials()
        owner = basic_auth(owner_email, owner_key)
        mem: dict[str, Any] = {
            "idle_rss_mb": round(rss_mb(pid), 1),
            "startup_peak_rss_mb": round(proc_status_kb(pid, "VmHWM") / 1024, 1),
        }
        r["server"] = {"pid": pid, "port": server.port, "startup_s": round(startup, 2)}
        r["memory"] = mem
        log(f"server pid {pid} ready in {startup:.1f}s; idle RSS {mem['idle_rss_mb']} MB")

        users = await self.phase("create users", self.create_users(owner))
        mem["rss_after_users_mb"] = round(rss_mb(pid), 1)
        r["register"] = await self.phase("register queues", self.register(users))
        mem["rss_after_register_mb"] = round(rss_mb(pid), 1)

        poller = Poller(server.host, server.port, args.connect_concurrency)
        r["open"] = await self.phase("open long-polls", self.open_polls(poller))
        rss_polls = rss_mb(pid)
        mem["rss_with_polls_mb"] = round(rss_polls, 1)
        extra = rss_polls - mem["rss_after_register_mb"]
        mem["polls_extra_mb"] = round(extra, 1)
        mem["extra_mb_per_1000_polls"] = round(extra / args.clients * 1000, 2)
        mem["queues_extra_mb"] = round(mem["rss_after_register_mb"] - mem["rss_after_users_mb"], 1)
        mem["queue_mb_per_1000"] = round(mem["queues_extra_mb"] / args.clients * 1000, 2)
        mem["server_fds_with_polls"] = open_fds(pid)
        log(
            f"RSS with {args.clients} polls {rss_polls:.1f} MB (+{extra:.1f} MB, "
            f"{mem['extra_mb_per_1000_polls']} MB per 1,000); server fds {open_fds(pid)}"
        )

        rounds = []
        for number in range(1, args.events + 1):
            with client_collector_paused():
                rounds.append(
                    await self.phase(
                        f"event round {number}", self.fanout_round(poller, number, users, owner)
                    )
                )
        r["rounds"] = rounds
        everything = [lat for rnd in rounds for lat in rnd.pop("_latencies")]
        r["fanout_overall"] = {
            **latency_summary(everything),
            "received": sum(rnd["received"] for rnd in rounds),
            "expected": args.clients * args.events,
        }
        mem["rss_end_mb"] = round(rss_mb(pid), 1)
        mem["peak_rss_mb"] = round(proc_status_kb(pid, "VmHWM") / 1024, 1)
        r["server_cpu_s"] = {
            "total": round(cpu_seconds(pid) - cpu_start, 2),
            **{p.name: p.server_cpu_s for p in self.phases},
        }
        r["phase_wall_s"] = {p.name: round(p.wall_s, 2) for p in self.phases}
        usage = resource.getrusage(resource.RUSAGE_SELF)
        r["client_cpu_s"] = round(usage.ru_utime + usage.ru_stime, 2)
        r["client_errors"] = self.client_errors()
        r["budgets"] = self.budgets()
        return r

    async def create_users(self, owner: str) -> list[tuple[int, str]]:
        """``--users`` members; returns (user_id, Basic auth header) for each."""
        token = secrets.token_hex(3)
        password = secrets.token_urlsafe(12)
        host, port = self.server.host, self.server.port

        async def make(i: int) -> tuple[int, str]:
            conn = Connection(host, port)
            try:
                email = f"bench-{token}-{i}@example.com"
                created = await api_call(
                    conn,
                    "POST",
                    "/users",
                    auth=owner,
                    form={"email": email, "password": password, "full_name": f"Bench User {i}"},
                )
                fetched = await api_call(
                    conn,
                    "POST",
                    "/fetch_api_key",
                    form={"username": email, "password": password},
                )
                return created["user_id"], basic_auth(fetched["email"], fetched["api_key"])
            finally:
                conn.close()

        return await bounded(8, [lambda i=i: make(i) for i in range(self.args.users)])

    async def register(self, users: list[tuple[int, str]]) -> dict[str, Any]:
        args = self.args
        self.clients = [
            PollClient(index=i, auth=users[i % len(users)][1]) for i in range(args.clients)
        ]
        form = {"event_types": '["realm_user"]', "fetch_event_types": "[]"}
        latencies: list[float] = []
        todo = iter(self.clients)
        started = time.monotonic()

        async def worker() -> None:
            conn = Connection(self.server.host, self.server.port)
            try:
                for client in todo:
                    t = time.perf_counter()
                    data = await api_call(conn, "POST", "/register", auth=client.auth, form=form)
                    latencies.append(time.perf_counter() - t)
                    client.queue_id = data["queue_id"]
                    client.last_event_id = data["last_event_id"]
            finally:
                conn.close()

        await asyncio.gather(*(worker() for _ in range(args.register_concurrency)))
        wall = time.monotonic() - started
        return {
            "count": len(latencies),
            "p50_ms": ms(percentile(latencies, 50)),
            "p99_ms": ms(percentile(latencies, 99)),
            "max_ms": ms(max(latencies)),
            "wall_s": round(wall, 2),
            "per_second": round(len(latencies) / wall, 1),
        }

    async def open_polls(self, poller: Poller) -> dict[str, Any]:
        started = time.monotonic()
        await poller.arm_all(self.clients, self.args.arm_batch, self.server.pid)
        sent = time.monotonic() - started
        log(f"all {len(self.clients)} polls connected and sent in {sent:.1f}s")
        quiet = await wait_until_quiet(self.server.pid)
        await asyncio.sleep(self.args.settle)
        early = await poller.settle_early_replies(self.clients)
        if any(early.values()):
            log(f"polls that ended before any event: {early}")
        return {
            "arm_batch": self.args.arm_batch,
            "connect_and_send_s": round(sent, 2),
            "server_busy_after_send_s": round(quiet, 2),
            "settle_s": self.args.settle,
            "ended_early": early,
        }

    async def fanout_round(
        self, poller: Poller, number: int, users: list[tuple[int, str]], owner: str
    ) -> dict[str, Any]:
        pid = self.server.pid
        errors_before = sum(len(c.errors) for c in self.clients)
        ended_early: dict[str, int] = {}
        for _ in range(3):
            early = await poller.settle_early_replies(self.clients)
            if not any(early.values()):
                break
            log(f"round {number}: polls ended before the event {early}; re-armed, waiting")
            for key, value in early.items():
                ended_early[key] = ended_early.get(key, 0) + value
            await wait_until_quiet(pid)
            await asyncio.sleep(self.args.settle)
        # Every client with a poll sent; one whose poll has just ended (a heartbeat, a 5xx)
        # is handled by wait_for_marker, which polls again, as a real client would.
        live = [c for c in self.clients if not c.dead and c.pending is not None]
        ended = sum(1 for c in live if c.pending is not None and c.pending.done())
        oldest = time.monotonic() - min(c.armed_at for c in live)
        if oldest > HEARTBEAT_SAFE_AGE:
            log(f"round {number}: oldest poll is {oldest:.0f}s old; heartbeats may interfere")
        target_id = users[(number - 1) % len(users)][0]
        marker = f"Bench Round {number} {secrets.token_hex(3)}"
        heartbeats_before = sum(c.heartbeats for c in self.clients)
        reconnects_before = sum(c.reconnects for c in self.clients)

        admin = Connection(self.server.host, self.server.port)
        await admin.open()
        try:
            waits = [asyncio.ensure_future(poller.wait_for_marker(c, marker)) for c in live]
            await asyncio.sleep(0)
            cpu0, client_cpu0 = cpu_seconds(pid), time.process_time()
            t0 = time.perf_counter()
            admin.send(
                "PATCH", f"/api/v1/users/{target_id}", auth=owner, form={"full_name": marker}
            )
            patch = await admin.read_response()
            if patch.status != 200:
                raise RuntimeError(f"PATCH /users/{target_id} -> {patch.status}: {patch.body!r}")
            done, not_done = await asyncio.wait(waits, timeout=self.args.round_timeout)
            window = time.perf_counter() - t0
            server_cpu = cpu_seconds(pid) - cpu0
            client_cpu = time.process_time() - client_cpu0
        finally:
            admin.close()
        for wait in not_done:
            wait.cancel()
        latencies = [
            arrived - t0
            for w in done
            if not w.cancelled() and w.exception() is None and (arrived := w.result()) is not None
        ]
        summary = {
            "round": number,
            **latency_summary(latencies),
            "received": len(latencies),
            "expected": len(self.clients),
            "patch_response_ms": ms(patch.arrived - t0),
            # From the PATCH until the last client had the event: how busy each side was.
            "fanout_window_ms": ms(window),
            "server_cpu_in_window_ms": ms(server_cpu),
            "client_cpu_in_window_ms": ms(client_cpu),
            "oldest_poll_age_s": round(oldest, 1),
            "heartbeats": sum(c.heartbeats for c in self.clients) - heartbeats_before,
            "reconnects": sum(c.reconnects for c in self.clients) - reconnects_before,
            "timed_out": len(not_done),
            "server_errors": sum(len(c.errors) for c in self.clients) - errors_before,
            "ended_before_event": ended_early,
            "ended_at_trigger": ended,
            "_latencies": latencies,
        }
        log(
            f"round {number}: {summary['received']}/{summary['expected']} received; "
            f"p50 {summary['p50_ms']} p95 {summary['p95_ms']} p99 {summary['p99_ms']} "
            f"max {summary['max_ms']} ms; PATCH answered after {summary['patch_response_ms']} ms"
        )
        # Re-arm every client that got the event, with its new last_event_id.
        rearm = [
            client
            for client, wait in zip(live, waits, strict=True)
            if wait in done
            and not wait.cancelled()
            and wait.exception() is None
            and wait.result() is not None
        ]
        await poller.arm_all(rearm, self.args.arm_batch, pid)
        await wait_until_quiet(pid)
        await asyncio.sleep(self.args.settle)
        return summary

    def client_errors(self) -> dict[str, Any]:
        errors = [e for c in self.clients for e in c.errors]
        distinct: dict[str, int] = {}
        for error in errors:
            distinct[error] = distinct.get(error, 0) + 1
        return {"count": len(errors), "distinct": dict(list(distinct.items())[:10])}

    def budgets(self) -> dict[str, Any]:
        r = self.result
        per_1000 = r["memory"]["extra_mb_per_1000_polls"]
        p99 = r["fanout_overall"]["p99_ms"]
        return {
            "idle_longpoll_mb_for_10000": {
                "value": round(per_1000 * 10, 1),
                "budget": 100,
                "ok": per_1000 * 10 <= 100,
            },
            "fanout_p99_ms": {
                "value": p99,
                "budget": 100,
                "clients": self.args.clients,
                "applies": self.args.clients == 1000,
                "ok": p99 is not None and p99 <= 100,
            },
            "all_received": r["fanout_overall"]["received"] == r["fanout_overall"]["expected"],
        }

    async def shutdown_clients(self) -> None:
        for client in self.clients:
            if client.pending is not None and not client.pending.done():
                client.pending.cancel()
            if client.conn is not None:
                client.conn.close()
        await asyncio.sleep(0.2)


def print_table(r: dict[str, Any]) -> None:
    cfg, mem, reg = r["config"], r["memory"], r["register"]
    rows = [
        ("clients / users", f"{cfg['clients']} / {cfg['users']}"),
        ("database / bus", f"{cfg['database']} / {cfg['bus']}"),
        ("register p50 / p99", f"{reg['p50_ms']} / {reg['p99_ms']} ms ({reg['per_second']}/s)"),
        ("server idle RSS", f"{mem['idle_rss_mb']} MB"),
        ("RSS after register", f"{mem['rss_after_register_mb']} MB"),
        ("RSS with all polls", f"{mem['rss_with_polls_mb']} MB"),
        (
            "long-polls extra",
            f"{mem['polls_extra_mb']} MB ({mem['extra_mb_per_1000_polls']} MB per 1,000)",
        ),
        (
            "open polls: send / busy",
            f"{r['open']['connect_and_send_s']} s / {r['open']['server_busy_after_send_s']} s",
        ),
    ]
    for rnd in r["rounds"]:
        rows.append(
            (
                f"round {rnd['round']} p50/p95/p99/max",
                f"{rnd['p50_ms']} / {rnd['p95_ms']} / {rnd['p99_ms']} / {rnd['max_ms']} ms "
                f"({rnd['received']}/{rnd['expected']}; heartbeats {rnd['heartbeats']}, "
                f"5xx {rnd['server_errors']})",
            )
        )
    o = r["fanout_overall"]
    rows += [
        (
            "overall p50/p95/p99/max",
            f"{o['p50_ms']} / {o['p95_ms']} / {o['p99_ms']} / {o['max_ms']} ms "
            f"({o['received']}/{o['expected']})",
        ),
        ("server CPU (run)", f"{r['server_cpu_s']['total']} s"),
        ("client errors", str(r["client_errors"]["count"])),
    ]
    width = max(len(name) for name, _ in rows)
    print()
    for name, value in rows:
        print(f"  {name.ljust(width)}  {value}")
    print()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=10000, help="event queues / long-polls")
    parser.add_argument("--users", type=int, default=50, help="member users to spread them over")
    parser.add_argument("--events", type=int, default=5, help="fan-out rounds")
    parser.add_argument("--database-url", default="", help="passed to hubbub serve")
    parser.add_argument("--redis-url", default="", help="passed to hubbub serve")
    parser.add_argument("--json", type=Path, help="default bench/results/longpoll-<clients>.json")
    parser.add_argument("--register-concurrency", type=int, default=100)
    parser.add_argument("--connect-concurrency", type=int, default=500)
    parser.add_argument(
        "--arm-batch",
        type=int,
        default=0,
        help="send long-polls N at a time, waiting for the server to go quiet in between "
        "(default 0: all at once, like clients reconnecting together)",
    )
    parser.add_argument("--settle", type=float, default=2.0, help="seconds after polls open")
    parser.add_argument("--round-timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    if args.clients < 1 or args.users < 1 or args.events < 1:
        parser.error("--clients, --users and --events must be at least 1")
    return args


async def amain(args: argparse.Namespace, workdir: Path) -> tuple[dict[str, Any], Server]:
    server = Server(args, workdir)
    bench = Bench(args, server)
    try:
        result = await bench.run()
    finally:
        await bench.shutdown_clients()
        server.stop()
        with contextlib.suppress(Exception):
            removed = await server.drop_redis_keys()
            if removed:
                log(f"removed {removed} Redis keys under {server.redis_namespace}:")
    result["server"].update(
        {"exit_code": server.exit_code, "shutdown_s": round(server.shutdown_seconds or 0, 2)}
    )
    result["server_log_problems"] = server.problems()
    return result, server


def result_header() -> dict[str, Any]:
    """When, on which commit and on what machine a result was measured."""
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
    }


def backend_config(args: argparse.Namespace) -> dict[str, Any]:
    """Which database and bus the server ran on (the URL without its password)."""
    return {
        "database": "postgresql" if args.database_url.startswith("postgres") else "sqlite",
        "database_url": redacted(args.database_url) if args.database_url else "(default)",
        "bus": "redis" if args.redis_url else "memory",
    }


def calibration_ms() -> float:
    """The median time of a fixed pure-Python loop, in ms: a machine's speed can vary
    within a day, so runs from different hours compare only through it
    (bench/README.md)."""
    times = []
    for _ in range(5):
        started = time.perf_counter()
        total = 0
        for i in range(300_000):
            total += i % 7
        times.append((time.perf_counter() - started) * 1000)
    return round(sorted(times)[2], 2)


def run_and_save(
    work: Callable[[], Coroutine[Any, Any, tuple[dict[str, Any], Server]]], json_path: Path
) -> tuple[dict[str, Any], Server]:
    """Run a benchmark's main coroutine (on uvloop when installed); write its result as
    JSON and the server's log beside it."""
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        runner = asyncio.Runner()
    before = calibration_ms()
    with runner:
        result, server = runner.run(work())
    result["calibration_ms"] = {"start": before, "end": calibration_ms()}
    log(f"calibration (a fixed CPU loop, ms): {result['calibration_ms']}")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n")
    shutil.copy(server.stderr_path, json_path.with_suffix(".server.log"))
    return result, server


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    limit = raise_nofile_limit()
    if limit < args.clients + 200:
        log(f"warning: RLIMIT_NOFILE is {limit}, fewer than {args.clients} connections need")
    json_path = args.json or RESULTS_DIR / f"longpoll-{args.clients}.json"
    workdir = Path(tempfile.mkdtemp(prefix="hubbub-bench-"))
    try:
        result, _ = run_and_save(lambda: amain(args, workdir), json_path)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_table(result)
    print(f"wrote {json_path}")
    if result["server_log_problems"]:
        print("server log (count: line):")
        for line, count in result["server_log_problems"].items():
            print(f"  {count:6d}: {line}")
    return 0 if result["budgets"]["all_received"] else 1


if __name__ == "__main__":
    sys.exit(main())
