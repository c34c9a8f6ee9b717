"""A message's ``last_edit_timestamp`` and ``last_moved_timestamp``, read from its stored
edit history (feature level 365).

Since feature level 365 Zulip keeps the two apart: ``last_edit_timestamp`` is the time of
the newest edit of the content, ``last_moved_timestamp`` the time of the newest move to
another channel or topic, where a topic change that only adds or removes the resolved
mark is no move. The stored history (newest first) says what each edit changed, so both
follow from it without a column of their own, for messages edited before this rule too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hubbub.topic_names import is_resolve_or_unresolve

# A history key that Zulip stopped sending at feature level 284 (an internal detail of
# its renderer); entries written before then may still hold it.
DROPPED_ENTRY_KEYS = ("prev_rendered_content_version",)


def is_move(entry: dict[str, Any]) -> bool:
    """Whether a history entry moved the message (to another channel, or to a topic that
    is not just the same one resolved or unresolved)."""
    if "prev_stream" in entry:
        return True
    if "prev_topic" not in entry:
        return False
    return not is_resolve_or_unresolve(str(entry["prev_topic"]), str(entry.get("topic", "")))


def edit_timestamps(entries: Iterable[dict[str, Any]]) -> tuple[int | None, int | None]:
    """(last content edit, last move) of a history, newest first; None where none."""
    edited: int | None = None
    moved: int | None = None
    for entry in entries:
        if edited is None and "prev_content" in entry:
            edited = int(entry["timestamp"])
        if moved is None and is_move(entry):
            moved = int(entry["timestamp"])
        if edited is not None and moved is not None:
            break
    return edited, moved


def public_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stored entries without the keys Zulip no longer sends."""
    return [
        {k: v for k, v in entry.items() if k not in DROPPED_ENTRY_KEYS}
        if any(k in entry for k in DROPPED_ENTRY_KEYS)
        else entry
        for entry in entries
    ]
