"""Mobile devices: registering push tokens (APNs and FCM) and the test notification.

Device registration is undocumented in Zulip 8.0's OpenAPI document but is what the
mobile apps call: ``POST``/``DELETE /users/me/apns_device_token`` and
``/users/me/android_gcm_reg_id``.
"""

from __future__ import annotations

import base64
import binascii
import re

from hubbub.actions.push_notifications import (
    do_add_push_device,
    do_remove_push_device,
    register_with_bouncer,
    send_test_notifications,
    unregister_with_bouncer,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.urls import realm_url
from hubbub.errors import JsonableError
from hubbub.push.bouncer import APNS, FCM, push_configured
from hubbub.push.errors import InvalidPushDeviceTokenError
from hubbub.queries.push import get_user_device, get_user_devices

MAX_TOKEN_LENGTH = 4096
# Zulip's ``ApnsAppId``: an iOS bundle id (the APNs topic), e.g. "org.zulip.Zulip".
_APP_ID = re.compile(r"^[.a-zA-Z0-9-]+$")


def _check_human(req: ApiRequest) -> None:
    # Zulip's ``human_users_only``: bots have no phones.
    if req.me.is_bot:
        raise JsonableError("This endpoint does not accept bot requests.")


def check_token(token: str, kind: int) -> None:
    if token == "" or len(token) > MAX_TOKEN_LENGTH:
        raise JsonableError("Empty or invalid length token")
    if kind == APNS:
        # Zulip stores APNs tokens as base64 and insists that they decode.
        try:
            base64.b64decode(token)
        except (binascii.Error, ValueError):
            raise JsonableError("Invalid APNS token") from None


async def _add(req: ApiRequest, token: str, kind: int, app_id: str | None) -> Payload:
    _check_human(req)
    check_token(token, kind)
    async with req.services.db.write() as conn:
        await do_add_push_device(conn, req.me, token, kind, app_id, req.services.clock.now())
    await register_with_bouncer(req.services.settings, req.me, token, kind, app_id)
    return {}


async def _remove(req: ApiRequest, token: str, kind: int) -> Payload:
    _check_human(req)
    check_token(token, kind)
    settings = req.services.settings
    async with req.services.db.write() as conn:
        await do_remove_push_device(
            conn, req.me, token, kind, uses_bouncer=push_configured(settings)
        )
    await unregister_with_bouncer(settings, req.me, token, kind)
    return {}


@endpoint("POST", "/users/me/apns_device_token")
async def add_apns_device_token(req: ApiRequest, *, token: str, appid: str) -> Payload:
    """Add an APNs device token"""
    if not _APP_ID.match(appid):
        raise JsonableError("appid has invalid format")
    return await _add(req, token, APNS, appid)


@endpoint("DELETE", "/users/me/apns_device_token")
async def remove_apns_device_token(req: ApiRequest, *, token: str) -> Payload:
    """Remove an APNs device token"""
    return await _remove(req, token, APNS)


@endpoint("POST", "/users/me/android_gcm_reg_id")
async def add_android_reg_id(req: ApiRequest, *, token: str) -> Payload:
    """Add an FCM registration id"""
    return await _add(req, token, FCM, None)


@endpoint("DELETE", "/users/me/android_gcm_reg_id")
async def remove_android_reg_id(req: ApiRequest, *, token: str) -> Payload:
    """Remove an FCM registration id"""
    return await _remove(req, token, FCM)


@endpoint("POST", "/mobile_push/test_notification")
async def send_test_push_notification(req: ApiRequest, *, token: str | None = None) -> Payload:
    """Sends a test notification to the user's mobile device(s)"""
    _check_human(req)
    async with req.services.db.read() as conn:
        if token is not None:
            device = await get_user_device(conn, req.me.id, token)
            if device is None:
                raise InvalidPushDeviceTokenError()
            devices = [device]
        else:
            # No device at all: Zulip succeeds having sent nothing.
            devices = await get_user_devices(conn, req.me.id)
    # Without a bouncer this succeeds having sent nothing, as Zulip 10.2 does when it has
    # neither a bouncer nor APNs/FCM credentials of its own: the only errors are the two
    # about tokens.
    await send_test_notifications(
        req.services.settings,
        req.my_realm,
        req.me,
        realm_url(req),
        [(d.token, d.kind) for d in devices],
    )
    return {}
