"""Publishing the events commands left in the outbox (``events/outbox.py``).

Every server process runs this about twice a second: one indexed read finds the outbox
empty (nearly always). Rows are claimed and deleted in a write transaction and published
after it commits, so that each event reaches the queues once even with several workers;
a worker that dies between its commit and its publish loses those events, as an action
whose process dies right after its commit does.
"""

from __future__ import annotations

import logging

from hubbub.events.outbox import CLAIM_BATCH, claim_outbox, has_outbox_rows
from hubbub.services import Services

logger = logging.getLogger("hubbub.workers")

# Well within the second after which a command's change should have reached the clients.
OUTBOX_INTERVAL_SECONDS = 0.5


async def relay_event_outbox(services: Services) -> int:
    """Publish everything the outbox holds now; how many rows were taken."""
    async with services.db.read() as conn:
        if not await has_outbox_rows(conn):
            return 0
    taken = 0
    while True:
        async with services.db.write() as conn:
            claimed = await claim_outbox(conn)
            claimed.notices = await services.journal(conn, claimed.notices)
        taken += claimed.rows
        # As ``Services.write`` does after a commit: presence answers forget realms whose
        # users changed, then credentials and events are published, or go back into the
        # outbox while the bus is unreachable.
        services.presence.forget(
            n.realm_id for n in claimed.notices if n.event["type"] == "realm_user"
        )
        was_down = services.bus_down
        await services.publish_committed(claimed.notices, claimed.stale_credentials)
        if services.bus_down:
            return taken
        if was_down:
            logger.warning("event bus reachable again; publishing the events kept meanwhile")
        if claimed.rows < CLAIM_BATCH:
            if taken:
                logger.info("published %d outbox rows of commands", taken)
            return taken
