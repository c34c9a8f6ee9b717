"""Unclaimed uploads: files no message or scheduled message links, deleted
``settings.unclaimed_upload_days`` after they were uploaded (Zulip's
``delete_old_unclaimed_attachments``). The scheduler runs it hourly."""

from __future__ import annotations

import logging

import sqlalchemy as sa

from hubbub.actions.attachments import do_delete_attachments
from hubbub.db.tables import attachment, attachment_message, scheduled_attachment
from hubbub.queries.attachments import Attachment
from hubbub.services import Services
from hubbub.uploads import storage_for

logger = logging.getLogger("hubbub.workers.upload_cleanup")

CLEANUP_BATCH_SIZE = 500
DAY_SECONDS = 86400.0


async def run_once(services: Services, *, batch_size: int = CLEANUP_BATCH_SIZE) -> int:
    """Delete the uploads that have waited too long for a message; how many were deleted."""
    cutoff = services.clock.now() - services.settings.unclaimed_upload_days * DAY_SECONDS
    storage = storage_for(services.settings)
    deleted = 0
    while True:
        async with services.write() as tx:
            # SKIP LOCKED: with several workers on PostgreSQL each row is claimed once.
            rows = await tx.conn.execute(
                sa.select(attachment)
                .where(
                    attachment.c.create_time < cutoff,
                    ~sa.exists().where(attachment_message.c.attachment_id == attachment.c.id),
                    ~sa.exists().where(scheduled_attachment.c.attachment_id == attachment.c.id),
                )
                .order_by(attachment.c.id)
                .limit(batch_size)
                .with_for_update(skip_locked=True)
            )
            doomed = [Attachment.from_row(r) for r in rows]
            await do_delete_attachments(tx, doomed, storage=storage)
        deleted += len(doomed)
        if len(doomed) < batch_size:
            break
    if deleted:
        logger.info("deleted %d unclaimed uploads", deleted)
    return deleted
