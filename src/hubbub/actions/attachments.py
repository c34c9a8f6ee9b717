"""Placeholder (issue 8): links between messages and uploaded files."""

from __future__ import annotations

from hubbub.models import User
from hubbub.transaction import Tx


async def do_update_message_attachments(
    tx: Tx, sender: User, message_id: int, content: str
) -> None:
    """Link the message to the uploads its (new) content references; called when a message
    is sent and when its content is edited."""


async def do_release_message_attachments(tx: Tx, message_ids: list[int]) -> None:
    """The messages are about to be deleted: drop their links, and delete the attachments
    no other message refers to."""


async def do_update_scheduled_message_attachments(
    tx: Tx, sender: User, scheduled_message_id: int, content: str
) -> None:
    """Link a scheduled message to the uploads its content references (on create and on
    edit)."""
