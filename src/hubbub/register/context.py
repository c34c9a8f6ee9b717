"""What a ``/register`` state fetch knows about its client, shared by every state part."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hubbub.models import Realm, User
from hubbub.queries.people import PeopleCache


@dataclass(frozen=True)
class StateContext:
    me: User
    realm: Realm
    # Whether the client asked for the state of this event type (``fetch_event_types``).
    wanted: Callable[[str], bool]
    # The process's kept users and groups (``Services.people``).
    people: PeopleCache
    client_gravatar: bool = False
    include_subscribers: bool = False
    # ``presences`` keyed by user id (True) or, for old clients, by email (False).
    slim_presence: bool = False
    # Only users connected within this many days get presences (feature level 288).
    presence_history_limit_days: int | None = None
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    # The services' clock at the fetch (``server_timestamp``, presence's two-week window).
    now: float | None = None
    # The server's WEB_PUBLIC_STREAMS_ENABLED: without it nobody creates web-public streams.
    web_public_streams_enabled: bool = True
