"""Reading uploads: an owner's attachments, the realm's upload space, who may see a file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import (
    attachment,
    attachment_message,
    message,
    recipient,
    stream,
    user_message,
)
from hubbub.models import Stream, User
from hubbub.queries.message_dicts import RECIPIENT_STREAM
from hubbub.queries.messages import can_access_stream_history


@dataclass(frozen=True)
class Attachment:
    id: int
    realm_id: int
    owner_id: int
    path_id: str
    file_name: str
    content_type: str | None
    size: int
    create_time: float

    @classmethod
    def from_row(cls, row: Any) -> Attachment:
        m = row._mapping
        return cls(
            id=int(m["id"]),
            realm_id=int(m["realm_id"]),
            owner_id=int(m["owner_id"]),
            path_id=str(m["path_id"]),
            file_name=str(m["file_name"]),
            content_type=m["content_type"],
            size=int(m["size"]),
            create_time=float(m["create_time"]),
        )


async def get_attachment(conn: AsyncConnection, attachment_id: int) -> Attachment | None:
    row = (
        await conn.execute(sa.select(attachment).where(attachment.c.id == attachment_id))
    ).first()
    return Attachment.from_row(row) if row is not None else None


async def get_attachment_by_path_id(conn: AsyncConnection, path_id: str) -> Attachment | None:
    row = (await conn.execute(sa.select(attachment).where(attachment.c.path_id == path_id))).first()
    return Attachment.from_row(row) if row is not None else None


async def get_attachments_by_path_ids(
    conn: AsyncConnection, realm_id: int, path_ids: list[str]
) -> list[Attachment]:
    if not path_ids:
        return []
    rows = await conn.execute(
        sa.select(attachment).where(
            attachment.c.realm_id == realm_id, attachment.c.path_id.in_(path_ids)
        )
    )
    return [Attachment.from_row(r) for r in rows]


async def upload_space_used(conn: AsyncConnection, realm_id: int) -> int:
    """Bytes of every upload in the realm (what Zulip's ``upload_space_used`` reports)."""
    total = (
        await conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(attachment.c.size), 0)).where(
                attachment.c.realm_id == realm_id
            )
        )
    ).scalar_one()
    return int(total)


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


async def get_attachment_dicts(
    conn: AsyncConnection, attachments: list[Attachment]
) -> list[dict[str, Any]]:
    """Zulip's attachment objects, with the messages that link each file (oldest first)."""
    ids = [a.id for a in attachments]
    linked: dict[int, list[dict[str, int]]] = {i: [] for i in ids}
    if ids:
        rows = await conn.execute(
            sa.select(attachment_message.c.attachment_id, message.c.id, message.c.date_sent)
            .join(message, message.c.id == attachment_message.c.message_id)
            .where(attachment_message.c.attachment_id.in_(ids))
            .order_by(message.c.id)
        )
        for att_id, msg_id, date_sent in rows:
            linked[int(att_id)].append({"id": int(msg_id), "date_sent": _ms(float(date_sent))})
    return [
        {
            "id": a.id,
            "name": a.file_name,
            "path_id": a.path_id,
            "size": a.size,
            # Milliseconds, an integer, since feature level 22.
            "create_time": _ms(a.create_time),
            "messages": linked[a.id],
        }
        for a in attachments
    ]


async def list_attachments(conn: AsyncConnection, owner_id: int) -> list[Attachment]:
    rows = await conn.execute(
        sa.select(attachment).where(attachment.c.owner_id == owner_id).order_by(attachment.c.id)
    )
    return [Attachment.from_row(r) for r in rows]


def _linking_messages(target: Attachment) -> sa.Select[tuple[int]]:
    return sa.select(attachment_message.c.message_id).where(
        attachment_message.c.attachment_id == target.id
    )


async def _linking_streams(conn: AsyncConnection, target: Attachment) -> list[Stream]:
    """The streams of the messages that link the file."""
    rows = await conn.execute(
        sa.select(stream)
        .distinct()
        .join(recipient, sa.and_(recipient.c.type_id == stream.c.id))
        .join(message, message.c.recipient_id == recipient.c.id)
        .where(
            recipient.c.type == RECIPIENT_STREAM,
            message.c.id.in_(_linking_messages(target)),
        )
    )
    return [Stream.from_row(row) for row in rows]


async def can_read_attachment(conn: AsyncConnection, user: User, target: Attachment) -> bool:
    """Whether ``user`` may download the file: its owner, or anyone who can read a message
    that links it (a row for the message, or the history of its stream)."""
    if target.realm_id != user.realm_id:
        return False
    if target.owner_id == user.id:
        return True
    received = (
        await conn.execute(
            sa.select(user_message.c.message_id)
            .where(
                user_message.c.user_profile_id == user.id,
                user_message.c.message_id.in_(_linking_messages(target)),
            )
            .limit(1)
        )
    ).first()
    if received is not None:
        return True
    for linking in await _linking_streams(conn, target):
        if await can_access_stream_history(conn, user, linking):
            return True
    return False


async def is_web_public_attachment(conn: AsyncConnection, target: Attachment) -> bool:
    """Whether a message in a web-public stream links the file: the files a spectator (a
    visitor without credentials) may download."""
    return any(s.is_web_public and not s.invite_only for s in await _linking_streams(conn, target))


async def get_linked_attachment_ids(conn: AsyncConnection, message_id: int) -> set[int]:
    rows = await conn.execute(
        sa.select(attachment_message.c.attachment_id).where(
            attachment_message.c.message_id == message_id
        )
    )
    return {int(a) for (a,) in rows}


async def get_detached_uploads(
    conn: AsyncConnection, owner: User, attachment_ids: set[int]
) -> list[dict[str, Any]]:
    """Of ``attachment_ids``, the uploads of ``owner`` that no message links any more, as
    attachment objects: after an edit, those only its edit history still shows
    (``detached_uploads``, feature level 285)."""
    if not attachment_ids:
        return []
    linked = sa.exists().where(attachment_message.c.attachment_id == attachment.c.id)
    rows = await conn.execute(
        sa.select(attachment)
        .where(
            attachment.c.id.in_(sorted(attachment_ids)),
            attachment.c.owner_id == owner.id,
            ~linked,
        )
        .order_by(attachment.c.id)
    )
    return await get_attachment_dicts(conn, [Attachment.from_row(r) for r in rows])
