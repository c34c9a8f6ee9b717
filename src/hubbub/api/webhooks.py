"""Incoming webhooks: ``/api/v1/external/{integration}``.

A service (GitHub, Grafana, ...) posts its own JSON here; the integration named in the
path turns it into a message that the authenticated account (usually an incoming-webhook
bot) sends through the ordinary send path, to the channel named by ``stream`` (a name or
an id), or, without one, as a direct message to the bot's owner, as Zulip 10.2 does. The
``topic`` parameter overrides the integration's topic; ``only_events`` and
``exclude_events`` filter event types with shell-style patterns.

Zulip routes these URLs for any method, so GET is served too (a body-less GET gets the
"Malformed JSON" answer a service's test ping would).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import orjson

from hubbub.actions.send_message import SendRequest, check_send_message, render_before_writing
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import PathStr
from hubbub.api.urls import realm_url
from hubbub.api.webhook_auth import authenticate_webhook
from hubbub.errors import NotFoundError, StreamDoesNotExistError, StreamIdDoesNotExistError
from hubbub.integrations import format_event, get_integration
from hubbub.integrations.base import WebhookInput
from hubbub.integrations.errors import InvalidJsonError, MissingHttpEventHeaderError
from hubbub.integrations.notices import (
    invalid_json_notice,
    missing_header_notice,
    should_notify,
)
from hubbub.json_values import load_json
from hubbub.models import User


def _read_payload(body: bytes, form_payload: str | None) -> Any:
    """The JSON the service sent: the body, or its ``payload`` form field (what services
    configured for form-encoded webhooks send, Slack's clients among them)."""
    raw: bytes | str = form_payload if form_payload is not None else body
    try:
        return load_json("payload", raw)
    except orjson.JSONDecodeError:
        raise InvalidJsonError() from None


async def _send(req: ApiRequest, sender: User, request: SendRequest) -> None:
    url = realm_url(req)
    rendering = await render_before_writing(
        req.services.db, req.my_realm, sender, request, realm_url=url
    )
    async with req.services.write() as tx:
        await check_send_message(
            tx,
            req.my_realm,
            sender,
            request,
            realm_url=url,
            now=req.services.clock.now(),
            rendering=rendering,
        )


def _owner_target(bot: User) -> str:
    """Direct messages of a webhook go to the bot's owner (to the account itself when it
    is no bot: Zulip 10.2 fails there)."""
    return orjson.dumps([bot.bot_owner_id or bot.id]).decode()


def _missing_stream_notice(bot: User, stream: str) -> str:
    return (
        f"Your bot @_**{bot.full_name}|{bot.id}** received a webhook for the channel "
        f"**{stream}**, which does not exist (or the bot cannot see it), so nothing was "
        "posted. Create the channel, or fix the `stream` parameter of the webhook URL."
    )


async def _notify_owner(req: ApiRequest, kind: str, text: str, client_name: str) -> None:
    bot = req.me
    # Kept per application: separate servers (and tests) keep apart.
    if not should_notify(req.http.app, bot, kind, req.services.clock.now()):
        return
    request = SendRequest(
        type="direct", to=_owner_target(bot), topic=None, content=text, client_name=client_name
    )
    await _send(req, bot, request)


async def _receive(
    req: ApiRequest,
    integration_name: str,
    stream: str | None,
    topic: str | None,
    only_events: list[str] | None,
    exclude_events: list[str] | None,
    payload: str | None,
    options: dict[str, str | None],
) -> Payload:
    integration = get_integration(integration_name)
    if integration is None:
        raise NotFoundError()
    try:
        data = WebhookInput(
            payload=_read_payload(await req.http.body(), payload),
            headers={k.lower(): v for k, v in req.http.headers.items()},
            options={k: v for k, v in options.items() if v is not None},
        )
        message = format_event(
            integration, data, only_events=only_events, exclude_events=exclude_events
        )
    except InvalidJsonError:
        text = invalid_json_notice(req.me, integration.display_name)
        await _notify_owner(req, "json", text, integration.client_name)
        raise
    except MissingHttpEventHeaderError as error:
        text = missing_header_notice(
            req.me, req.http.url.path, error.header, integration.display_name
        )
        await _notify_owner(req, "header", text, integration.client_name)
        raise
    if message is None:
        return {}
    if integration.unquote_parameters:
        stream = unquote(stream) if stream is not None else None
        topic = unquote(topic) if topic is not None else None
    client_name = integration.client_name
    bot = req.me
    if stream is None:
        request = SendRequest(
            type="direct",
            to=_owner_target(bot),
            topic=None,
            content=message.content,
            client_name=client_name,
        )
        await _send(req, bot, request)
        return {}
    to = [int(stream)] if stream.isdecimal() else [stream]
    chosen_topic = topic if topic is not None else (message.topic or integration.default_topic)
    request = SendRequest(
        type="stream",
        to=orjson.dumps(to).decode(),
        topic=chosen_topic,
        content=message.content,
        client_name=client_name,
    )
    try:
        await _send(req, bot, request)
    except (StreamDoesNotExistError, StreamIdDoesNotExistError):
        # Zulip answers success to the service (retrying would not help) and tells the
        # bot's owner instead.
        await _notify_owner(req, "stream", _missing_stream_notice(bot, stream), client_name)
    return {}


@endpoint("POST", "/external/{integration}", authenticator=authenticate_webhook)
@endpoint("GET", "/external/{integration}", authenticator=authenticate_webhook)
async def incoming_webhook(
    req: ApiRequest,
    *,
    integration: PathStr,
    stream: str | None = None,
    topic: str | None = None,
    only_events: list[str] | None = None,
    exclude_events: list[str] | None = None,
    payload: str | None = None,
    branches: str | None = None,
    ignore_private_repositories: str | None = None,
    name: str | None = None,
    desc: str | None = None,
) -> Payload:
    """Post a message from an incoming webhook"""
    options = {
        "branches": branches,
        "ignore_private_repositories": ignore_private_repositories,
        "name": name,
        "desc": desc,
    }
    return await _receive(
        req, integration, stream, topic, only_events, exclude_events, payload, options
    )
