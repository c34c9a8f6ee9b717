"""Small parts of the ``/register`` state, each with the one answer hubbub can honestly
give, and how a client applies the events Zulip defines for them.

hubbub has no onboarding notices, no billing, no allowed-domain list, no embedded bots, no
Zoom and no GIPHY key, so these keys say so: an empty
list, ``false``, ``""`` or ``null``, as Zulip 10.2 sends them for a server without the
feature. Only ``stop_words`` depends on the server: it names what the database's search
leaves out of a query.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.integrations import incoming_webhook_bots_state
from hubbub.register.context import StateContext
from hubbub.search.stop_words import stop_words

# The event types whose state this module fetches (register/state.py lists them).
STATE_TYPES = (
    "onboarding_steps",
    "realm_billing",
    "realm_domains",
    "realm_embedded_bots",
    "realm_incoming_webhook_bots",
    "stop_words",
    "video_calls",
    "giphy",
)


def _fixed_state(ctx: StateContext) -> dict[str, Any]:
    state: dict[str, Any] = {}
    if ctx.wanted("onboarding_steps"):
        # The one-time notices the user has yet to see (feature level 259): hubbub defines
        # none, so none is pending; nor a tour video (feature level 369).
        state["onboarding_steps"] = []
        state["navigation_tour_video_url"] = None
    if ctx.wanted("realm_billing"):
        # Feature level 363: no billing, hence no sponsorship request.
        state["realm_billing"] = {"has_pending_sponsorship_request": False}
    if ctx.wanted("realm_domains"):
        # hubbub keeps no list of the organization's email domains.
        state["realm_domains"] = []
    if ctx.wanted("realm_embedded_bots"):
        # The embedded bot types the server can run: hubbub runs none.
        state["realm_embedded_bots"] = []
    if ctx.wanted("realm_incoming_webhook_bots"):
        # The incoming-webhook integrations the server offers (integrations/).
        state["realm_incoming_webhook_bots"] = incoming_webhook_bots_state()
    if ctx.wanted("video_calls"):
        # Whether the user has linked a Zoom account: hubbub has no Zoom integration.
        state["has_zoom_token"] = False
    if ctx.wanted("giphy"):
        # Zulip sends "" when the server has no GIPHY API key; hubbub never has one.
        state["giphy_api_key"] = ""
    return state


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    state = _fixed_state(ctx)
    if ctx.wanted("stop_words"):
        state["stop_words"] = stop_words(conn.dialect.name)
    return state


def _apply_realm_domains(state: dict[str, Any], event: dict[str, Any]) -> None:
    domains: list[dict[str, Any]] = state["realm_domains"]
    if event["op"] == "add":
        domains.append(dict(event["realm_domain"]))
    elif event["op"] == "change":
        changed = event["realm_domain"]
        for entry in domains:
            if entry["domain"] == changed["domain"]:
                entry["allow_subdomains"] = changed["allow_subdomains"]
    elif event["op"] == "remove":
        state["realm_domains"] = [d for d in domains if d["domain"] != event["domain"]]


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """Apply one event as a Zulip client does; False when it is not this part's type.
    hubbub sends none of these events, since nothing here can change."""
    kind = event["type"]
    if kind == "onboarding_steps":
        if "onboarding_steps" in state:
            state["onboarding_steps"] = event["onboarding_steps"]
    elif kind == "realm_billing":
        if "realm_billing" in state:
            state["realm_billing"][event["property"]] = event["value"]
    elif kind == "realm_domains":
        if "realm_domains" in state:
            _apply_realm_domains(state, event)
    elif kind == "has_zoom_token":
        if "has_zoom_token" in state:
            state["has_zoom_token"] = event["value"]
    else:
        return False
    return True
