"""Running the ASGI app under uvicorn: one process, or N workers sharing one port."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import os
import signal
import socket
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any, NoReturn

import uvicorn

from hubbub.app import create_app
from hubbub.http_limits import http_limits
from hubbub.http_protocol import LeanHttpToolsProtocol
from hubbub.memory import release_freed_memory
from hubbub.services import Services
from hubbub.settings import Settings, load_settings

# In-flight requests get this long to finish on SIGTERM / Ctrl-C; long-polls are cut.
GRACEFUL_SHUTDOWN_SECONDS = 5


def app_from_environment() -> object:
    """The factory each worker process calls (settings travel in HUBBUB_* variables)."""
    app = create_app(load_settings())
    _release_polls_on_exit(app.state.services)
    settle_memory()
    return app


def _release_polls_on_exit(services: Services) -> None:
    """In a worker of ``serve --workers N``, answer waiting long-polls as soon as the
    worker is told to stop, as ``_Server.shutdown`` does for a single process.

    uvicorn builds each worker's server itself, so there is no shutdown to extend; it has
    installed its signal handlers by the time it calls this factory (inside its running
    event loop), so ours runs theirs and then releases the polls. Without this, every poll
    waited out the 5-second grace period and was cancelled with a logged error.
    """
    loop = asyncio.get_running_loop()
    releasing: set[asyncio.Task[None]] = set()

    def release() -> None:
        task = loop.create_task(services.bus.release_polls())
        releasing.add(task)
        task.add_done_callback(releasing.discard)

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(sig)

        def handler(signum: int, frame: FrameType | None, previous: Any = previous) -> None:
            if callable(previous):
                previous(signum, frame)
            loop.call_soon_threadsafe(release)

        signal.signal(sig, handler)


# Full garbage collections run on this clock, not on Python's (see settle_memory).
FULL_COLLECTION_SECONDS = 60.0
# Python's third threshold (full collections after this many middle-generation ones):
# too many ever to be reached, so that only the timer starts them.
NO_AUTOMATIC_FULL_COLLECTION = 1_000_000_000


def settle_memory(full_collection_every: float = FULL_COLLECTION_SECONDS) -> FullCollections:
    """Keep the cyclic garbage collector's full collections short and rare.

    Start-up leaves tens of thousands of long-lived container objects (modules, classes,
    SQLAlchemy's tables and caches), and every full collection walks all of them, while
    no request moves. Frozen, start-up's objects are skipped: a full collection costs
    only what was allocated since.

    What was allocated since includes every waiting long-poll (dozens of objects each),
    and Python starts a full collection whenever the survivors of younger collections
    reach a quarter of the long-lived objects: with many polls re-armed after each
    message, deliveries to them kept stopping for a full collection that freed nothing
    (bench/results/where-the-time-goes.md). So Python never starts one itself; one
    runs every ``full_collection_every`` seconds instead, for the cycles that do outlive
    the younger collections (uvicorn's protocol and parser of a closed connection point
    at each other). Must be called in the running event loop.
    """
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, NO_AUTOMATIC_FULL_COLLECTION)
    return FullCollections(asyncio.get_running_loop(), full_collection_every)


class FullCollections:
    """A full garbage collection every ``every`` seconds, on the event loop's timer."""

    def __init__(self, loop: asyncio.AbstractEventLoop, every: float) -> None:
        self.loop = loop
        self.every = every
        self.timer = loop.call_later(every, self.collect)

    def collect(self) -> None:
        gc.collect()
        release_freed_memory()
        self.timer = self.loop.call_later(self.every, self.collect)

    def stop(self) -> None:
        self.timer.cancel()


def settings_environment(settings: Settings) -> dict[str, str]:
    """``HUBBUB_*`` variables from which ``load_settings()`` builds these settings again:
    how they reach the serving process ``hubbub serve`` execs into and its workers."""
    return {
        "HUBBUB_DATA_DIR": str(settings.data_dir),
        "HUBBUB_DATABASE_URL": settings.database_url,
        "HUBBUB_REDIS_URL": settings.redis_url,
        "HUBBUB_REDIS_NAMESPACE": settings.redis_namespace,
        "HUBBUB_HOST": settings.host,
        "HUBBUB_PORT": str(settings.port),
        "HUBBUB_WORKERS": str(settings.workers),
        "HUBBUB_OWNER_EMAIL": settings.owner_email,
        "HUBBUB_RATE_LIMIT": str(settings.rate_limit),
        "HUBBUB_EXTERNAL_HOST": settings.external_host,
        "HUBBUB_MAX_FILE_UPLOAD_MIB": str(settings.max_file_upload_mib),
        "HUBBUB_UNCLAIMED_UPLOAD_DAYS": str(settings.unclaimed_upload_days),
        "HUBBUB_PUSH_BOUNCER_URL": settings.push_bouncer_url,
        "HUBBUB_PUSH_BOUNCER_ORG_ID": settings.push_bouncer_org_id,
        "HUBBUB_PUSH_BOUNCER_ORG_KEY": settings.push_bouncer_org_key,
        "HUBBUB_MAX_QUEUES_PER_USER": str(settings.max_queues_per_user),
        "HUBBUB_MAX_QUEUE_KIB": str(settings.max_queue_kib),
        "HUBBUB_HTTP_MAX_HEADER_KIB": str(settings.http_max_header_kib),
        "HUBBUB_HTTP_HEADER_TIMEOUT": repr(settings.http_header_timeout_seconds),
        "HUBBUB_HTTP_BODY_TIMEOUT": repr(settings.http_body_timeout_seconds),
        "HUBBUB_TRUSTED_PROXIES": ",".join(settings.trusted_proxies),
        "HUBBUB_LOGIN_ATTEMPTS_PER_ADDRESS": str(settings.login_attempts_per_address),
    }


def exec_server(settings: Settings) -> NoReturn:
    """Become the serving process (``hubbub.run``): same PID, a fresh interpreter."""
    os.environ.update(settings_environment(settings))
    # What the command printed (the first owner's credentials) must not die in a buffer.
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "hubbub.run"])


class _Server(uvicorn.Server):
    """uvicorn, adapted for long-polls and for service managers.

    Shutdown first answers waiting long-polls, and a SIGTERM/Ctrl-C that ends in a clean
    shutdown exits with status 0: uvicorn re-raises the captured signal after shutting
    down, so the process would end "killed by SIGTERM", which reads as a crash.
    """

    def __init__(self, config: uvicorn.Config, services: Services) -> None:
        super().__init__(config)
        self.services = services

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        settle_memory()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Long-polls would hold the graceful shutdown for its whole timeout and then be
        # cancelled; answer them now instead (their queues survive the restart).
        await self.services.bus.release_polls()
        await super().shutdown(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            yield
            self._captured_signals.clear()


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's settings for serving hubbub, whatever the number of workers."""
    return {
        "host": settings.host,
        "port": settings.port,
        "access_log": False,
        "log_level": "info",
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_SECONDS,
        "server_header": False,
        # X-Forwarded-For and X-Forwarded-Proto are believed only from the proxies the
        # operator lists; uvicorn's default believes any client on the loopback address.
        "proxy_headers": bool(settings.trusted_proxies),
        "forwarded_allow_ips": list(settings.trusted_proxies),
        # The protocol with hubbub's HTTP limits (a partial, so that ``--workers`` can
        # hand it to its worker processes).
        "http": functools.partial(LeanHttpToolsProtocol, limits=http_limits(settings)),
        # The Zulip API has no WebSocket endpoint; "auto" would import websockets.
        "ws": "none",
        # Said, not detected: HubbubApp's __call__ returns its coroutine (one frame less
        # per waiting poll), which "auto" would take for an ASGI 2 application.
        "interface": "asgi3",
    }


def run_server(settings: Settings) -> None:
    common = uvicorn_options(settings)
    if settings.workers > 1:
        os.environ.update(settings_environment(settings))
        uvicorn.run(
            "hubbub.server:app_from_environment", factory=True, workers=settings.workers, **common
        )
    else:
        app = create_app(settings)
        _Server(uvicorn.Config(app, **common), app.state.services).run()
