"""The shutdown file of an in-memory bus without a journal (``durable_queues.py``): its
queues written to ``<data dir>/event_queues.json`` on a clean shutdown and read on start.
An embedded server reads one only once, from an older version, and keeps its queues in
the database from then on."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path
from typing import Any

import orjson

logger = logging.getLogger("hubbub.events")


def read_queue_file(path: Path) -> list[dict[str, Any]]:
    """The saved queues (each a dict of ``spec``, ``last_access``, ``next_id``, ``events``
    and ``pruned_through``), or none when the file is missing or unreadable."""
    if not path.exists():
        return []
    try:
        saved = orjson.loads(path.read_bytes())
        if not isinstance(saved, list):
            raise ValueError("not a list")
        return saved
    except (OSError, ValueError):
        logger.exception("could not read saved event queues from %s", path)
        return []


def write_queue_file(path: Path, saved: list[dict[str, Any]]) -> bool:
    """Replace the file with ``saved``, atomically: written beside it, then renamed over
    it, so a full disk or a crash half-way leaves the previous file whole. Whether it
    was written; a failure is logged in one line."""
    temporary = path.with_suffix(".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.unlink(missing_ok=True)
        # Created readable by the server's user only: the queues hold private messages.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(orjson.dumps(saved))
            file.flush()
            os.fsync(file.fileno())
        temporary.replace(path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        why = "the disk is full" if exc.errno == errno.ENOSPC else str(exc)
        kept = "kept the previous file" if path.exists() else "their clients will register again"
        logger.error("could not save %d event queues to %s (%s); %s", len(saved), path, why, kept)
        return False
    return True
