"""Mobile push notifications: queueing them for new messages, and registering devices.

A new message queues one ``push_notification_queue`` row per recipient who should hear
of it (``push/triggers.py`` decides); ``workers/push_delivery.py`` delivers the rows
through the bouncer shortly after, once it can see whether they were read meanwhile.
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import push_device, push_notification_queue
from hubbub.errors import JsonableError
from hubbub.models import Realm, User
from hubbub.push.bouncer import APNS, push_configured, realm_uuid, send_to_bouncer, user_uuid
from hubbub.push.payloads import Recipient, base_payload
from hubbub.push.triggers import push_trigger
from hubbub.queries.messages import READ
from hubbub.queries.push import get_message_place, get_push_recipients, get_users_with_devices
from hubbub.settings import Settings
from hubbub.transaction import Tx

logger = logging.getLogger("hubbub.push")

# A short grace period: a message read within it (the user was looking at it on another
# device) is not pushed at all.
PUSH_DELAY_SECONDS = 2.0


async def enqueue_message_push(
    tx: Tx,
    realm: Realm,
    sender: User,
    message_id: int,
    flags: dict[int, int],
    *,
    is_stream: bool,
    now: float,
) -> None:
    """A new message was written with these per-recipient ``flags``: queue the push
    notifications it calls for (delivered by the background scheduler)."""
    # Messages from muted senders (and the sender's own) arrive read: never pushed.
    unread = [uid for uid, f in flags.items() if uid != sender.id and not f & READ]
    # One cheap query in the common case: nobody has a registered device.
    candidates = await get_users_with_devices(tx.conn, unread)
    if not candidates:
        return
    place = await get_message_place(tx.conn, message_id)
    rows = []
    for r in await get_push_recipients(tx.conn, candidates, sender.id, place):
        trigger = push_trigger(r, flags[r.user_id], is_stream=is_stream)
        if trigger is not None:
            rows.append(
                {
                    "user_profile_id": r.user_id,
                    "message_id": message_id,
                    "trigger": trigger,
                    "due_time": now + PUSH_DELAY_SECONDS,
                }
            )
    if rows:
        await tx.conn.execute(sa.insert(push_notification_queue), rows)


async def do_add_push_device(
    conn: AsyncConnection, user: User, token: str, kind: int, ios_app_id: str | None, now: float
) -> None:
    """Store the device (again registering it is a no-op, as in Zulip)."""
    exists = await conn.scalar(
        sa.select(push_device.c.id).where(
            push_device.c.user_profile_id == user.id,
            push_device.c.kind == kind,
            push_device.c.token == token,
        )
    )
    if exists is None:
        await conn.execute(
            sa.insert(push_device).values(
                user_profile_id=user.id,
                kind=kind,
                token=token,
                ios_app_id=ios_app_id,
                last_updated=now,
            )
        )


async def do_remove_push_device(
    conn: AsyncConnection, user: User, token: str, kind: int, *, uses_bouncer: bool
) -> None:
    deleted = await conn.execute(
        sa.delete(push_device).where(
            push_device.c.user_profile_id == user.id,
            push_device.c.kind == kind,
            push_device.c.token == token,
        )
    )
    # With a bouncer, the bouncer is the authority on unknown tokens (Zulip's transition
    # rule for devices registered before tokens were kept locally).
    if deleted.rowcount == 0 and not uses_bouncer:
        raise JsonableError("Token does not exist")


async def register_with_bouncer(
    settings: Settings, user: User, token: str, kind: int, ios_app_id: str | None
) -> None:
    """Zulip's ``remotes/push/register`` call (form-encoded)."""
    if not push_configured(settings):
        return
    data: dict[str, str | int | None] = {
        "server_uuid": settings.push_bouncer_org_id,
        "user_uuid": user_uuid(settings, user.id),
        "realm_uuid": realm_uuid(settings, user.realm_id),
        # Lets the bouncer drop an older id-based registration of the same device.
        "user_id": str(user.id),
        "token": token,
        "token_kind": kind,
    }
    if kind == APNS:
        data["ios_app_id"] = ios_app_id
    logger.info("registering push device of user %s with the bouncer", user.id)
    await send_to_bouncer(settings, "push/register", data)


async def unregister_with_bouncer(settings: Settings, user: User, token: str, kind: int) -> None:
    """Zulip's ``remotes/push/unregister`` call (form-encoded)."""
    if not push_configured(settings):
        return
    await send_to_bouncer(
        settings,
        "push/unregister",
        {
            "server_uuid": settings.push_bouncer_org_id,
            "realm_uuid": realm_uuid(settings, user.realm_id),
            "user_uuid": user_uuid(settings, user.id),
            "user_id": user.id,
            "token": token,
            "token_kind": kind,
        },
    )


async def send_test_notifications(
    settings: Settings, realm: Realm, user: User, realm_uri: str, tokens: list[tuple[str, int]]
) -> None:
    """Zulip's ``remotes/push/test_notification``, one call per device (level 217); the
    bouncer adds ``event: "test"`` to the base payload (level 234). Without a bouncer
    nothing is sent: hubbub cannot reach APNs or FCM itself, and Zulip 10.2 with no way to
    deliver drops test notifications in silence too."""
    if not push_configured(settings):
        if tokens:
            logger.info("push notifications are not configured: test notification dropped")
        return
    payload = base_payload(
        Recipient(user.id, realm.id, realm.name, realm_uri, server_host(settings, realm_uri))
    )
    for token, kind in tokens:
        await send_to_bouncer(
            settings,
            "push/test_notification",
            {
                "realm_uuid": realm_uuid(settings, realm.id),
                "user_uuid": user_uuid(settings, user.id),
                "user_id": user.id,
                "token": token,
                "token_kind": kind,
                "base_payload": payload,
            },
            as_json=True,
        )


def server_host(settings: Settings, realm_uri: str) -> str:
    """Zulip's ``EXTERNAL_HOST``: the configured host, else the realm URL's host."""
    return settings.external_host or realm_uri.split("://", 1)[-1]
