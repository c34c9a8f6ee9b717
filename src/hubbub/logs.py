"""Log set-up shared by the ``hubbub`` command and the serving process it becomes."""

from __future__ import annotations

import logging
import os
import sys

from hubbub.settings import SettingsError

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def configure_logging() -> None:
    """Log to standard error at ``HUBBUB_LOG_LEVEL`` (default INFO)."""
    level = os.environ.get("HUBBUB_LOG_LEVEL", "INFO").upper()
    if level not in LEVELS:
        raise SettingsError(
            f"HUBBUB_LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, not {level!r}"
        )
    # DEBUG is for hubbub's own loggers only: libraries log their SQL with its parameters
    # at DEBUG (aiosqlite: every statement and its bound values), which would put API keys
    # and password hashes in the log.
    logging.basicConfig(
        level=max(logging.getLevelName(level), logging.INFO),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("hubbub").setLevel(level)
