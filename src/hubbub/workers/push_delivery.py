"""Delivers queued push notifications through the bouncer (``remotes/push/notify``).

Each run claims the due rows of ``push_notification_queue`` (``FOR UPDATE SKIP LOCKED``
on PostgreSQL, so several workers never take the same row; SQLite has one process) by
moving their due time a lease ahead, and commits before talking to the bouncer, so no
database lock is held across HTTP. A delivered or pointless row is deleted; a row whose
bouncer call failed transiently is retried a few times with back-off, then dropped and
logged. A process that dies mid-delivery leaves its rows to be claimed again when the
lease ends.

"Offline" (Zulip's ``idle``): no presence activity in the last 140 s (Zulip's
``OFFLINE_THRESHOLD_SECS``). Users who are online are pushed only when
``enable_online_push_notifications`` is on (Zulip's default). Event queues are not
consulted: the bus keeps no per-user index of them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import sqlalchemy as sa

from hubbub.db.tables import push_device, push_notification_queue
from hubbub.errors import ApiError
from hubbub.push.bouncer import APNS, FCM, push_configured, realm_uuid, send_to_bouncer, user_uuid
from hubbub.push.errors import BouncerRetryLaterError
from hubbub.push.payloads import (
    MessageFacts,
    Recipient,
    message_payload_apns,
    message_payload_gcm,
)
from hubbub.push.triggers import zulip_trigger
from hubbub.queries.messages import READ
from hubbub.queries.push import (
    get_message_row,
    get_user_devices,
    get_user_message_flags,
    get_user_settings_of,
    is_recently_active,
)
from hubbub.queries.realms import get_realm_by_id
from hubbub.queries.user_dicts import avatar_url
from hubbub.queries.users import get_user_by_id
from hubbub.services import Services

logger = logging.getLogger("hubbub.push")

OFFLINE_THRESHOLD_SECONDS = 140.0
BATCH_SIZE = 100
# A claimed row becomes due again after this long if its worker never finished it.
LEASE_SECONDS = 60.0
MAX_ATTEMPTS = 3
RETRY_BACKOFF_SECONDS = 10.0


@dataclass(frozen=True)
class _Job:
    id: int
    user_id: int
    message_id: int
    trigger: str
    attempt: int  # deliveries tried before this one


def _split(stored: str) -> tuple[str, int]:
    # Failed attempts are counted in the trigger column ("mentioned:2").
    name, _, count = stored.partition(":")
    return name, int(count) if count.isdigit() else 0


async def _claim(services: Services, now: float) -> list[_Job]:
    q = push_notification_queue
    async with services.db.write() as conn:
        rows = (
            await conn.execute(
                sa.select(q.c.id, q.c.user_profile_id, q.c.message_id, q.c.trigger)
                .where(q.c.due_time <= now)
                .order_by(q.c.due_time, q.c.id)
                .limit(BATCH_SIZE)
                .with_for_update(skip_locked=True)
            )
        ).all()
        if rows:
            await conn.execute(
                sa.update(q)
                .where(q.c.id.in_([r.id for r in rows]))
                .values(due_time=now + LEASE_SECONDS)
            )
    return [_Job(r.id, r.user_profile_id, r.message_id, *_split(r.trigger)) for r in rows]


async def _finish(services: Services, job: _Job) -> None:
    async with services.db.write() as conn:
        await conn.execute(
            sa.delete(push_notification_queue).where(push_notification_queue.c.id == job.id)
        )


async def _retry_later(services: Services, job: _Job, now: float, reason: str) -> None:
    attempt = job.attempt + 1
    if attempt >= MAX_ATTEMPTS:
        logger.error(
            "dropping push notification of message %s for user %s after %d attempts: %s",
            job.message_id,
            job.user_id,
            attempt,
            reason,
        )
        await _finish(services, job)
        return
    logger.warning("push notification delivery failed (%s); retrying", reason)
    async with services.db.write() as conn:
        await conn.execute(
            sa.update(push_notification_queue)
            .where(push_notification_queue.c.id == job.id)
            .values(
                trigger=f"{job.trigger}:{attempt}",
                due_time=now + RETRY_BACKOFF_SECONDS * attempt,
            )
        )


async def _notify_request(services: Services, job: _Job, now: float) -> dict[str, object] | None:
    """The ``push/notify`` body for this job, or None when nothing should be sent."""
    async with services.db.read() as conn:
        flags = await get_user_message_flags(conn, job.user_id, job.message_id)
        if flags is None or flags & READ:
            return None  # read meanwhile, deleted, or no longer the user's
        msg = await get_message_row(conn, job.message_id)
        if msg is None:
            return None
        user = await get_user_by_id(conn, msg.sender.realm_id, job.user_id)
        realm = await get_realm_by_id(conn, msg.sender.realm_id)
        if user is None or not user.is_active or realm is None:
            return None
        user_settings = await get_user_settings_of(conn, user.id)
        online = await is_recently_active(conn, user.id, now - OFFLINE_THRESHOLD_SECONDS)
        if online and not user_settings["enable_online_push_notifications"]:
            return None
        devices = await get_user_devices(conn, user.id)
    if not devices:
        return None
    settings = services.settings
    realm_uri = _realm_uri(services, realm.string_id)
    to = Recipient(user.id, realm.id, realm.name, realm_uri, realm_uri.split("://", 1)[-1])
    facts = MessageFacts(
        id=msg.id,
        date_sent=msg.date_sent,
        rendered_content=msg.rendered_content,
        sender_id=msg.sender.id,
        sender_email=msg.sender.email,
        sender_full_name=msg.sender.full_name,
        sender_avatar_url=avatar_url(msg.sender, client_gravatar=False) or "",
        stream_id=msg.stream_id,
        stream_name=msg.stream_name,
        topic=msg.topic if msg.stream_id is not None else None,
        group_user_ids=msg.group_user_ids,
        group_names=msg.group_names,
    )
    gcm_payload, gcm_options = message_payload_gcm(to, facts)
    return {
        "user_uuid": user_uuid(settings, user.id),
        # Old registrations were made with the user id; Zulip sends both.
        "user_id": user.id,
        "realm_uuid": realm_uuid(settings, realm.id),
        "apns_payload": message_payload_apns(to, facts, zulip_trigger(job.trigger)),
        "gcm_payload": gcm_payload,
        "gcm_options": gcm_options,
        "android_devices": [d.token for d in devices if d.kind == FCM],
        "apple_devices": [d.token for d in devices if d.kind == APNS],
    }


def _realm_uri(services: Services, subdomain: str) -> str:
    """The realm's URL without a request to read the Host from: the configured external
    host (https), else the address this server listens on."""
    settings = services.settings
    if settings.external_host:
        return f"https://{subdomain + '.' if subdomain else ''}{settings.external_host}"
    return f"http://{settings.host}:{settings.port}"


async def _forget_devices(services: Services, deleted: object) -> None:
    """Tokens the bouncer reports as dead (``deleted_devices``) are removed here too."""
    if not isinstance(deleted, dict):
        return
    async with services.db.write() as conn:
        for kind, key in ((FCM, "android_devices"), (APNS, "apple_devices")):
            tokens = [t for t in deleted.get(key) or [] if isinstance(t, str)]
            if tokens:
                await conn.execute(
                    sa.delete(push_device).where(
                        push_device.c.kind == kind, push_device.c.token.in_(tokens)
                    )
                )


async def _deliver(services: Services, job: _Job, now: float) -> bool:
    body = await _notify_request(services, job, now)
    if body is None:
        await _finish(services, job)
        return False
    try:
        response = await send_to_bouncer(services.settings, "push/notify", body, as_json=True)
    except BouncerRetryLaterError as exc:
        await _retry_later(services, job, now, exc.msg)
        return False
    except ApiError as exc:
        # The bouncer refused this request for good (bad credentials, unknown server).
        logger.error("push bouncer refused a notification: %s", exc.msg)
        await _finish(services, job)
        return False
    await _forget_devices(services, response.get("deleted_devices"))
    await _finish(services, job)
    return True


async def run_once(services: Services) -> int:
    """Deliver the due notifications once; how many reached the bouncer."""
    now = services.clock.now()
    # Most runs find nothing due: a read, so the idle loop never takes SQLite's write lock.
    async with services.db.read() as conn:
        due = (
            await conn.execute(
                sa.select(push_notification_queue.c.id)
                .where(push_notification_queue.c.due_time <= now)
                .limit(1)
            )
        ).first()
    if due is None:
        return 0
    if not push_configured(services.settings):
        # No bouncer: nothing can be delivered; don't let the queue grow.
        async with services.db.write() as conn:
            await conn.execute(
                sa.delete(push_notification_queue).where(push_notification_queue.c.due_time <= now)
            )
        return 0
    sent = 0
    for job in await _claim(services, now):
        try:
            sent += await _deliver(services, job, now)
        except Exception as exc:  # one bad row must not stop the others
            logger.exception("push notification delivery of row %s failed", job.id)
            await _retry_later(services, job, now, type(exc).__name__)
    return sent
