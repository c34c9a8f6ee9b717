"""The message retention job: delete every message past its retention period (see
``actions/retention.py``). The scheduler runs it hourly; each batch is its own transaction,
so a run that stops part way leaves whole batches deleted and the next run carries on."""

from __future__ import annotations

import logging

from hubbub.actions.retention import (
    RETENTION_BATCH_SIZE,
    do_delete_expired_batch,
    get_expiry_boundary,
    get_retention_plan,
)
from hubbub.services import Services

logger = logging.getLogger("hubbub.workers.retention")


async def run_once(services: Services, *, batch_size: int = RETENTION_BATCH_SIZE) -> int:
    """Delete the messages that have expired by now; how many were deleted."""
    # One "now" for the whole run, so every conversation is judged against the same time.
    now = services.clock.now()
    async with services.db.read() as conn:
        plan = await get_retention_plan(conn)
    boundaries: dict[float, int] = {}
    deleted = 0
    for group in plan:
        cutoff = group.cutoff(now)
        if cutoff not in boundaries:
            async with services.db.read() as conn:
                boundaries[cutoff] = await get_expiry_boundary(conn, cutoff)
        boundary = boundaries[cutoff]
        if boundary == 0:
            continue
        for recipient_id in group.recipient_ids:
            while True:
                async with services.write() as tx:
                    ids = await do_delete_expired_batch(
                        tx,
                        group.realm_id,
                        recipient_id,
                        cutoff=cutoff,
                        boundary=boundary,
                        limit=batch_size,
                    )
                deleted += len(ids)
                if len(ids) < batch_size:
                    break
    if deleted:
        logger.info("deleted %d expired messages", deleted)
    return deleted
