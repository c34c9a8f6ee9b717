"""Log set-up shared by the ``hubbub`` command and the serving process it becomes."""

from __future__ import annotations

import logging
import os
import sys

from hubbub.settings import SettingsError

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

# Control characters (C0, DEL, C1) as escapes: a log line quotes what requests carried
# (a User-Agent, an email address), and unauthenticated senders could otherwise write
# terminal escape sequences or forged line breaks into the log.
_ESCAPES = {
    code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7F, 0xA0)] if code != 0x09
} | {0x0A: "\\n", 0x0D: "\\r"}


def escape_controls(text: str) -> str:
    return text if text.isprintable() else text.translate(_ESCAPES)


class EscapeControls(logging.Filter):
    """A handler's filter that escapes control characters in each record's message
    (whatever the format); a traceback keeps its lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        escaped = escape_controls(message)
        if escaped != message:
            record.msg, record.args = escaped, None
        return True


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
    for handler in logging.getLogger().handlers:
        handler.addFilter(EscapeControls())
    logging.getLogger("hubbub").setLevel(level)
