"""Running the ASGI app under uvicorn: one process, or N workers sharing one port."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import uvicorn

from hubbub.app import create_app
from hubbub.settings import Settings, load_settings

# In-flight requests get this long to finish on SIGTERM / Ctrl-C; long-polls are cut.
GRACEFUL_SHUTDOWN_SECONDS = 5


def app_from_environment() -> object:
    """The factory each worker process calls (settings travel in HUBBUB_* variables)."""
    return create_app(load_settings())


def _export(settings: Settings) -> None:
    os.environ.update(
        {
            "HUBBUB_DATA_DIR": str(settings.data_dir),
            "HUBBUB_DATABASE_URL": settings.database_url,
            "HUBBUB_REDIS_URL": settings.redis_url,
            "HUBBUB_REDIS_NAMESPACE": settings.redis_namespace,
            "HUBBUB_RATE_LIMIT": str(settings.rate_limit),
            "HUBBUB_EXTERNAL_HOST": settings.external_host,
        }
    )


class _Server(uvicorn.Server):
    """uvicorn, but a SIGTERM/Ctrl-C that ends in a clean shutdown exits with status 0.

    uvicorn re-raises the captured signal after shutting down, so the process would end
    "killed by SIGTERM"; service managers and scripts read that as a crash.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            yield
            self._captured_signals.clear()


def run_server(settings: Settings) -> None:
    common: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "access_log": False,
        "log_level": "info",
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_SECONDS,
        "server_header": False,
    }
    if settings.workers > 1:
        _export(settings)
        uvicorn.run(
            "hubbub.server:app_from_environment", factory=True, workers=settings.workers, **common
        )
    else:
        _Server(uvicorn.Config(create_app(settings), **common)).run()
