"""Incoming webhook integrations: one module per service, on the framework of ``base``.

``all_integrations()`` maps each URL name (``/api/v1/external/<name>``) to its integration;
``format_event`` turns one request into the message to post.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
import logging
from collections.abc import Sequence
from typing import Any

from hubbub.integrations.base import Integration, WebhookInput, WebhookMessage
from hubbub.integrations.errors import (
    AnomalousWebhookPayloadError,
    MissingHttpEventHeaderError,
    UnsupportedWebhookEventTypeError,
)

logger = logging.getLogger("hubbub.webhooks")

# The integration modules, imported on first use: an idle server that never receives a
# webhook does not hold them.
_MODULES = (
    "alertmanager",
    "gitea",
    "github",
    "gitlab",
    "grafana",
    "jira",
    "json",
    "sentry",
    "slack_incoming",
)


@functools.cache
def all_integrations() -> dict[str, Integration]:
    """Each integration by its URL name."""
    found: dict[str, Integration] = {}
    for name in _MODULES:
        integration: Integration = importlib.import_module(
            f"hubbub.integrations.{name}"
        ).INTEGRATION
        found[integration.name] = integration
    return found


def get_integration(name: str) -> Integration | None:
    return all_integrations().get(name)


def incoming_webhook_bots_state() -> list[dict[str, Any]]:
    """``/register``'s ``realm_incoming_webhook_bots``, in Zulip 10.2's shape (the
    ``config_options`` list is feature level 318)."""
    return [
        {
            "name": item.name,
            "display_name": item.display_name,
            "all_event_types": item.all_event_types,
            "config_options": [
                {"key": option.key, "label": option.label, "validator": option.validator}
                for option in item.config_options
            ],
        }
        for item in sorted(all_integrations().values(), key=lambda i: i.name)
    ]


def event_is_wanted(
    event: str, only_events: Sequence[str] | None, exclude_events: Sequence[str] | None
) -> bool:
    """Zulip's filter: shell-style patterns (``pull_request*``); an event must match one
    of ``only_events`` (when given) and none of ``exclude_events``."""
    if only_events is not None and not any(fnmatch.fnmatch(event, p) for p in only_events):
        return False
    return not (
        exclude_events is not None and any(fnmatch.fnmatch(event, p) for p in exclude_events)
    )


def format_event(
    integration: Integration,
    data: WebhookInput,
    *,
    only_events: Sequence[str] | None = None,
    exclude_events: Sequence[str] | None = None,
) -> WebhookMessage | None:
    """The message for this request, or None when nothing is to be posted (a filtered
    event, or one the integration deliberately keeps quiet about).

    Errors name the integration; unsupported events and unreadable payloads are logged,
    since the service that sent them will not show anyone the answer.
    """
    name = integration.client
    try:
        event = integration.event_source(data) if integration.event_source else ""
        formatter = integration.formatters.get(event)
        if formatter is None:
            raise UnsupportedWebhookEventTypeError(event, name)
        if integration.event_source is not None and not event_is_wanted(
            event, only_events, exclude_events
        ):
            return None
        return formatter(WebhookInput(data.payload, data.headers, data.options, event))
    except UnsupportedWebhookEventTypeError as error:
        error.webhook_name = name
        error.msg = UnsupportedWebhookEventTypeError(error.event_type, name).msg
        logger.warning("Unsupported %s webhook event: %r", name, error.event_type)
        raise
    except MissingHttpEventHeaderError as error:
        logger.warning("%s webhook request without its %s header", name, error.header)
        raise
    except AnomalousWebhookPayloadError:
        logger.warning("Unreadable %s webhook payload", name)
        raise AnomalousWebhookPayloadError(name) from None
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        logger.warning("Unreadable %s webhook payload (%s)", name, type(exc).__name__)
        raise AnomalousWebhookPayloadError(name) from None
