"""End-to-end fixtures: a real ``hubbub serve`` process on a free port.

``hubbub_server`` starts ``python -m hubbub serve`` on SQLite and, when
HUBBUB_TEST_DATABASE_URL is set, on a fresh PostgreSQL database made for the test (and
dropped after it). It waits until ``GET /api/v1/server_settings`` answers; at teardown it
sends SIGTERM and asserts that the server exits, with status 0, within a few seconds.

The plain helpers (``start_serve``, ``stop_serve``, ``run_hubbub``, ...) are also used by
``tests/test_cli.py``. Every process started here is stopped by its PID, even when a test
fails.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest
import zulip
from sqlalchemy.engine import make_url

from tests.e2e.client import assert_ok, close, make_client
from tests.helpers import REDIS_ENV, drop_redis_namespace

PG_ENV = "HUBBUB_TEST_DATABASE_URL"
# Starting `hubbub serve` and migrating a fresh database took over 30 s on a busy machine.
STARTUP_TIMEOUT = 60.0
# The server gives in-flight requests 5 s (GRACEFUL_SHUTDOWN_SECONDS); an idle one is faster.
SHUTDOWN_TIMEOUT = 8.0
CLI_TIMEOUT = 30.0
HUBBUB = [sys.executable, "-m", "hubbub"]


def hubbub_env(**extra: str) -> dict[str, str]:
    """The environment for hubbub subprocesses: no stray HUBBUB_* settings, no rate limit."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("HUBBUB_") or key.startswith("HUBBUB_TEST_")
    }
    env["HUBBUB_RATE_LIMIT"] = "0"
    env.update(extra)
    return env


def run_hubbub(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = CLI_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """``python -m hubbub ARGS``; subprocess.run kills it if it outlives ``timeout``."""
    return subprocess.run(
        [*HUBBUB, *args],
        cwd=cwd,
        env=hubbub_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


@dataclass(frozen=True)
class OwnerCredentials:
    email: str
    password: str
    api_key: str


@dataclass
class HubbubServer:
    process: subprocess.Popen[bytes]
    port: int
    data_dir: Path
    database_url: str | None
    stdout_path: Path
    stderr_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stdout(self) -> str:
        return self.stdout_path.read_text()

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def db_args(self) -> list[str]:
        """The flags that point another hubbub command at this server's database."""
        args = ["--data-dir", str(self.data_dir)]
        if self.database_url:
            args += ["--database-url", self.database_url]
        return args

    def owner(self) -> OwnerCredentials:
        """The first owner's credentials, as ``serve`` printed them on its first start."""
        out = self.stdout()
        fields = {}
        for label in ("Email", "Password", "API key"):
            match = re.search(rf"^  {label}:\s+(.+?)\s*$", out, re.MULTILINE)
            assert match, f"`hubbub serve` printed no {label!r} line; stdout was:\n{out}"
            fields[label] = match.group(1)
        # Output that is no terminal gets no secrets, only the private files holding them.
        if fields["Password"].startswith("in "):
            fields["Password"] = Path(fields["Password"][3:]).read_text().strip()
        if fields["API key"].startswith("in "):
            rc = Path(fields["API key"][3:]).read_text()
            key = re.search(r"^key=(\S+)$", rc, re.MULTILINE)
            assert key, rc
            fields["API key"] = key.group(1)
        return OwnerCredentials(fields["Email"], fields["Password"], fields["API key"])


def _describe(server: HubbubServer) -> str:
    return (
        f"--- stdout ---\n{server.stdout()}\n--- stderr (last 3000 chars) ---\n"
        f"{server.stderr()[-3000:]}"
    )


def _wait_until_ready(server: HubbubServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    url = f"{server.url}/api/v1/server_settings"
    while True:
        code = server.process.poll()
        if code is not None:
            raise AssertionError(
                f"`hubbub serve` exited with {code} before answering\n{_describe(server)}"
            )
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(
                f"`hubbub serve` did not answer {url} within {timeout:.0f} s\n{_describe(server)}"
            )
        time.sleep(0.1)


def start_serve(
    data_dir: Path,
    *,
    database_url: str | None = None,
    extra_args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    log_dir: Path | None = None,
    timeout: float = STARTUP_TIMEOUT,
) -> HubbubServer:
    """Start ``hubbub serve`` on a free port and wait until it answers.

    stdout/stderr go to files (no pipe can fill up and block the server). If the server
    does not come up it is killed before the error propagates.
    """
    port = free_port()
    log_dir = log_dir or data_dir.parent
    log_dir.mkdir(parents=True, exist_ok=True)
    stem = f"serve-{port}-{secrets.token_hex(3)}"
    args = [*HUBBUB, "serve", "--port", str(port), "--data-dir", str(data_dir)]
    if database_url:
        args += ["--database-url", database_url]
    args += list(extra_args)
    stdout_path, stderr_path = log_dir / f"{stem}.out", log_dir / f"{stem}.err"
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        process = subprocess.Popen(
            args,
            cwd=log_dir,
            env=hubbub_env() if env is None else env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
        )
    server = HubbubServer(process, port, data_dir, database_url, stdout_path, stderr_path)
    try:
        _wait_until_ready(server, timeout)
    except BaseException:
        _kill(server.process)
        raise
    return server


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)


def stop_serve(server: HubbubServer, timeout: float = SHUTDOWN_TIMEOUT) -> int:
    """SIGTERM to the server's PID; its exit status, or AssertionError if it hangs.

    A server that does not exit within ``timeout`` is killed (SIGKILL) before failing.
    """
    process = server.process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise AssertionError(
                f"`hubbub serve` (pid {server.pid}) did not exit within {timeout:.0f} s "
                f"of SIGTERM; killed it\n{_describe(server)}"
            ) from None
    return int(process.returncode)


def describe_exit(server: HubbubServer, returncode: int) -> str:
    how = f"died of signal {-returncode}" if returncode < 0 else f"exited with {returncode}"
    return (
        f"`hubbub serve` (pid {server.pid}) {how} after SIGTERM; expected a clean exit "
        f"(status 0)\n{_describe(server)}"
    )


@contextmanager
def serving(
    data_dir: Path,
    *,
    database_url: str | None = None,
    extra_args: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Iterator[HubbubServer]:
    """A running server for the ``with`` block, always stopped afterwards.

    The exit status is not asserted here (the caller checks ``server.process.returncode``)
    so that the checks of the block are reported first.
    """
    server = start_serve(data_dir, database_url=database_url, extra_args=extra_args, env=env)
    try:
        yield server
    finally:
        stop_serve(server)


# --- PostgreSQL ------------------------------------------------------------------------


def _asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _pg_admin(base_url: str, statement: str) -> None:
    conn = await asyncpg.connect(_asyncpg_dsn(base_url), timeout=10)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@contextmanager
def fresh_postgres_database(base_url: str, prefix: str = "hubbub_e2e") -> Iterator[str]:
    """``CREATE DATABASE <prefix>_<random>`` next to ``base_url``; dropped WITH (FORCE)."""
    name = f"{prefix}_{secrets.token_hex(6)}"
    asyncio.run(_pg_admin(base_url, f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(base_url).set(database=name).render_as_string(hide_password=False)
    finally:
        asyncio.run(_pg_admin(base_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextmanager
def fresh_redis_namespace(redis_url: str) -> Iterator[str]:
    """A Redis key namespace of the test's own (``HUBBUB_REDIS_NAMESPACE``); its keys are
    deleted after it, once the servers using it have stopped."""
    namespace = f"e2e-{secrets.token_hex(16)}"
    try:
        yield namespace
    finally:
        asyncio.run(drop_redis_namespace(redis_url, namespace))


@contextmanager
def shared_backend(prefix: str) -> Iterator[tuple[str, dict[str, str], list[str]]]:
    """For servers sharing PostgreSQL and Redis: a fresh database (``prefix_<hex>``), the
    environment naming a Redis namespace of the test's own, and the ``--redis-url``
    arguments. Needs both test services' variables set."""
    redis_url = os.environ[REDIS_ENV]
    with (
        fresh_redis_namespace(redis_url) as namespace,
        fresh_postgres_database(os.environ[PG_ENV], prefix=prefix) as database_url,
    ):
        env = hubbub_env(HUBBUB_REDIS_NAMESPACE=namespace)
        yield database_url, env, ["--redis-url", redis_url]


@contextmanager
def serving_workers(data_dir: Path, prefix: str, workers: int = 2) -> Iterator[HubbubServer]:
    """``hubbub serve --workers N`` on a ``shared_backend`` of its own."""
    with (
        shared_backend(prefix) as (database_url, env, extra),
        serving(
            data_dir,
            database_url=database_url,
            extra_args=[*extra, "--workers", str(workers)],
            env=env,
        ) as server,
    ):
        yield server


# --- fixtures --------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def hubbub_database_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """None for SQLite (the file in the data directory); else a fresh PostgreSQL URL."""
    if request.param == "sqlite":
        yield None
        return
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"PostgreSQL variant: set {PG_ENV} to run it")
    with fresh_postgres_database(base) as url:
        yield url


@pytest.fixture
def hubbub_server(tmp_path: Path, hubbub_database_url: str | None) -> Iterator[HubbubServer]:
    """A running ``hubbub serve``; at teardown: SIGTERM, exit within a few seconds, status 0."""
    server = start_serve(
        tmp_path / "data", database_url=hubbub_database_url, log_dir=tmp_path / "logs"
    )
    try:
        yield server
    finally:
        returncode = stop_serve(server)
    assert returncode == 0, describe_exit(server, returncode)


@pytest.fixture
def owner_client(hubbub_server: HubbubServer) -> Iterator[zulip.Client]:
    """The official client, configured by the zuliprc ``serve`` wrote for the first owner."""
    client = make_client(config_file=str(hubbub_server.data_dir / "zuliprc"))
    try:
        yield client
    finally:
        close(client)


@pytest.fixture
def member_client(
    owner_client: zulip.Client, hubbub_server: HubbubServer
) -> Iterator[zulip.Client]:
    """A member, Cordelia, created by the owner, with her own client."""
    assert_ok(
        owner_client.create_user(
            {
                "email": "cordelia@example.com",
                "password": "a long password",
                "full_name": "Cordelia",
            }
        )
    )
    key = assert_ok(
        owner_client.call_endpoint(
            url="fetch_api_key",
            method="POST",
            request={"username": "cordelia@example.com", "password": "a long password"},
        )
    )["api_key"]
    client = make_client(email="cordelia@example.com", api_key=key, site=hubbub_server.url)
    try:
        yield client
    finally:
        close(client)
