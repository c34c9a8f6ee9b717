"""Plain row types shared by actions, queries and the API layer (no ORM)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import orjson

from hubbub.db.fast import named
from hubbub.realm_settings import REALM_SETTING_DEFAULTS


class Role(IntEnum):
    """Zulip's role integers (feature level 59)."""

    OWNER = 100
    ADMINISTRATOR = 200
    MODERATOR = 300
    MEMBER = 400
    GUEST = 600

    @classmethod
    def from_name(cls, name: str) -> Role:
        return ROLE_NAMES[name]


ROLE_NAMES: dict[str, Role] = {
    "owner": Role.OWNER,
    "admin": Role.ADMINISTRATOR,
    "moderator": Role.MODERATOR,
    "member": Role.MEMBER,
    "guest": Role.GUEST,
}


class BotType(IntEnum):
    GENERIC = 1
    INCOMING_WEBHOOK = 2
    OUTGOING_WEBHOOK = 3
    EMBEDDED = 4


class Policy(IntEnum):
    """Who may do something, in Zulip's numbering."""

    MEMBERS_ONLY = 1
    ADMINS_ONLY = 2
    FULL_MEMBERS_ONLY = 3
    MODERATORS_ONLY = 4
    EVERYONE = 5
    NOBODY = 6
    OWNERS_ONLY = 7


class EmailVisibility(IntEnum):
    """Who may see a user's real (delivery) email; Zulip's values (feature level 163)."""

    EVERYONE = 1
    MEMBERS = 2
    ADMINS = 3
    NOBODY = 4
    MODERATORS = 5


@dataclass(frozen=True, slots=True)
class Realm:
    id: int
    string_id: str
    name: str
    description: str
    date_created: float
    deactivated: bool
    password_auth_enabled: bool
    enable_spectator_access: bool
    default_email_address_visibility: int
    # Settings that differ from realm_settings.REALM_SETTING_DEFAULTS.
    settings: dict[str, Any]

    @classmethod
    def from_row(cls, row: Any) -> Realm:
        return cls.from_mapping(row._mapping)

    @classmethod
    def from_mapping(cls, mapping: Any) -> Realm:
        values = {name: mapping[name] for name in cls.__slots__}
        values["settings"] = orjson.loads(values["settings"] or "{}")
        return cls(**values)

    def setting(self, name: str) -> Any:
        return self.settings.get(name, REALM_SETTING_DEFAULTS[name])


@dataclass(frozen=True, slots=True)
class User:
    id: int
    realm_id: int
    email: str
    delivery_email: str
    full_name: str
    password_hash: str | None
    api_key: str
    role: int
    is_active: bool
    is_billing_admin: bool
    is_bot: bool
    bot_type: int | None
    bot_owner_id: int | None
    date_joined: float
    timezone: str
    avatar_source: str
    avatar_version: int
    email_address_visibility: int

    @classmethod
    def from_row(cls, row: Any) -> User:
        """A user from a row whose first columns are ``user_profile``'s (a
        ``select(user_profile, ...)``), which are this class's fields in the same order
        (``tests/test_models.py``). By position: by name, through ``row._mapping``, or by
        attribute, turning a realm's users into objects cost several times as much, a
        large part of ``/register``."""
        return cls(*row[:_USER_FIELD_COUNT])

    @property
    def is_owner(self) -> bool:
        return self.role == Role.OWNER

    @property
    def is_realm_admin(self) -> bool:
        return self.role in (Role.OWNER, Role.ADMINISTRATOR)

    @property
    def is_moderator(self) -> bool:
        return self.role == Role.MODERATOR

    @property
    def is_guest(self) -> bool:
        return self.role == Role.GUEST


_USER_FIELD_COUNT = len(User.__slots__)


@dataclass(frozen=True, slots=True)
class Stream:
    id: int
    realm_id: int
    name: str
    description: str
    rendered_description: str
    date_created: float
    deactivated: bool
    invite_only: bool
    is_web_public: bool
    history_public_to_subscribers: bool
    stream_post_policy: int
    message_retention_days: int | None
    can_remove_subscribers_group_id: int
    first_message_id: int | None
    creator_id: int | None
    is_recently_active: bool
    # JSON text of the group-valued settings (queries/stream_permissions.py reads it).
    permission_settings: str

    @classmethod
    def from_row(cls, row: Any) -> Stream:
        mapping = named(row)
        return cls(**{name: mapping[name] for name in cls.__slots__})

    @property
    def is_public(self) -> bool:
        return not self.invite_only


# The per-user settings of a subscription that POST /users/me/subscriptions/properties sets.
SUBSCRIPTION_SETTINGS = (
    "color",
    "is_muted",
    "pin_to_top",
    "desktop_notifications",
    "audible_notifications",
    "push_notifications",
    "email_notifications",
    "wildcard_mentions_notify",
)


@dataclass(frozen=True, slots=True)
class Subscription:
    id: int
    user_profile_id: int
    stream_id: int
    active: bool
    color: str
    is_muted: bool
    pin_to_top: bool
    desktop_notifications: bool | None
    audible_notifications: bool | None
    push_notifications: bool | None
    email_notifications: bool | None
    wildcard_mentions_notify: bool | None

    @classmethod
    def from_row(cls, row: Any) -> Subscription:
        return cls(**{name: row._mapping[name] for name in cls.__slots__})
