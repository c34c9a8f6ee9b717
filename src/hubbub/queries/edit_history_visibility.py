"""Which edit-history entries an organization lets its members see (feature level 358).

Under ``message_edit_history_visibility_policy`` "moves", Zulip 10.2 shows where a
message has been (topic and channel moves) but not how its text changed: an entry that
only edited the content is left out, and an entry that both moved the message and edited
it keeps the move without the content fields. The same rule applies to the snapshots of
``GET /messages/{message_id}/history`` and to the stored entries sent as a message's
``edit_history``; "all" shows everything and "none" nothing.
"""

from __future__ import annotations

from typing import Any

# The keys that carry an earlier version of the text, in either form.
_CONTENT_KEYS = (
    "prev_content",
    "prev_rendered_content",
    "prev_rendered_content_version",
    "content_html_diff",
)
_MOVE_KEYS = ("prev_topic", "prev_stream")


def visible_edit_history(policy: str, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries (or snapshots) ``policy`` shows, in the same order."""
    if policy == "all":
        return entries
    if policy == "none":
        return []
    visible: list[dict[str, Any]] = []
    for entry in entries:
        if "prev_content" in entry:
            if not any(key in entry for key in _MOVE_KEYS):
                continue
            entry = {k: v for k, v in entry.items() if k not in _CONTENT_KEYS}
        visible.append(entry)
    return visible
