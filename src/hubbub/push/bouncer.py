"""A client of Zulip's push notification bouncer (``PUSH_NOTIFICATION_BOUNCER_URL``).

The bouncer serves ``/api/v1/remotes/<endpoint>`` to registered servers, authenticated
with HTTP Basic ``org_id:org_key`` (Zulip's ``ZULIP_ORG_ID`` / ``ZULIP_ORG_KEY``).
Registration calls are form-encoded; notification calls carry a JSON body, as Zulip
sends them. Its errors are mapped as Zulip maps them: unreachable or 5xx -> retry later
(502), ``INVALID_REMOTE_PUSH_DEVICE_TOKEN`` from the test endpoint -> that error,
any other 4xx -> its message as a plain error.
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urljoin

import orjson

from hubbub import ZULIP_VERSION
from hubbub.push.errors import (
    BouncerRefusedError,
    BouncerRetryLaterError,
    InvalidRemotePushDeviceTokenError,
)
from hubbub.settings import Settings

# Zulip waits 15 s for the bouncer; a request thread (or the delivery loop) should not
# wait longer than that.
BOUNCER_TIMEOUT_SECONDS = 10.0

# The kinds of ``push_device`` rows, as Zulip numbers them.
APNS = 1
FCM = 2


def push_configured(settings: Settings) -> bool:
    """Zulip's ``push_notifications_configured``: a bouncer URL and our credentials."""
    return bool(
        settings.push_bouncer_url and settings.push_bouncer_org_id and settings.push_bouncer_org_key
    )


def _namespace(settings: Settings) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"hubbub:{settings.push_bouncer_org_id}")


# hubbub keeps no uuid column for users and realms; the bouncer only needs identifiers
# that stay the same for as long as this server keeps its registration, so they are
# derived from the server's org id and the row id.
def user_uuid(settings: Settings, user_id: int) -> str:
    return str(uuid.uuid5(_namespace(settings), f"user:{user_id}"))


def realm_uuid(settings: Settings, realm_id: int) -> str:
    return str(uuid.uuid5(_namespace(settings), f"realm:{realm_id}"))


async def send_to_bouncer(
    settings: Settings, endpoint: str, data: dict[str, Any], *, as_json: bool = False
) -> dict[str, Any]:
    """POST ``data`` to the bouncer's ``remotes/<endpoint>``; the decoded success body."""
    url = urljoin(settings.push_bouncer_url, "/api/v1/remotes/" + endpoint)
    headers = {"User-Agent": f"ZulipServer/{ZULIP_VERSION}"}
    auth = (settings.push_bouncer_org_id, settings.push_bouncer_org_key)
    # Imported on first use: httpx costs megabytes of idle memory on servers without push.
    import httpx

    try:
        async with httpx.AsyncClient(timeout=BOUNCER_TIMEOUT_SECONDS) as http:
            if as_json:
                headers["Content-Type"] = "application/json"
                response = await http.post(
                    url, content=orjson.dumps(data), headers=headers, auth=auth
                )
            else:
                form = {k: str(v) for k, v in data.items() if v is not None}
                response = await http.post(url, data=form, headers=headers, auth=auth)
    except httpx.HTTPError as exc:
        raise BouncerRetryLaterError(
            f"{type(exc).__name__} while trying to connect to push notification bouncer"
        ) from None
    if response.status_code >= 500:
        raise BouncerRetryLaterError(
            f"Received {response.status_code} from push notification bouncer"
        )
    try:
        body = response.json()
    except ValueError:
        raise BouncerRefusedError(
            f"Push notification bouncer returned unexpected status code {response.status_code}"
        ) from None
    if response.status_code >= 400:
        code = body.get("code") if isinstance(body, dict) else None
        msg = str(body.get("msg", "")) if isinstance(body, dict) else ""
        if code == "INVALID_ZULIP_SERVER":
            raise BouncerRefusedError(f"Push notifications bouncer error: {msg}")
        if endpoint == "push/test_notification" and code == "INVALID_REMOTE_PUSH_DEVICE_TOKEN":
            raise InvalidRemotePushDeviceTokenError()
        raise BouncerRefusedError(msg)
    if response.status_code != 200 or not isinstance(body, dict):
        raise BouncerRefusedError(
            f"Push notification bouncer returned unexpected status code {response.status_code}"
        )
    return body
