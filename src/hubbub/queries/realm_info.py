"""Facts about a realm that several responses share (server settings, /register)."""

from __future__ import annotations

import hashlib

from hubbub.models import Realm

# Every authentication backend Zulip 8.0 names; hubbub offers password (email) login.
AUTH_BACKENDS = (
    "password",
    "dev",
    "email",
    "ldap",
    "remoteuser",
    "github",
    "azuread",
    "gitlab",
    "apple",
    "google",
    "saml",
    "openid connect",
)


def realm_icon_url(realm: Realm) -> str:
    """Zulip's default icon: a Gravatar identicon derived from the subdomain."""
    digest = hashlib.md5(realm.string_id.encode(), usedforsecurity=False).hexdigest()
    return f"https://secure.gravatar.com/avatar/{digest}?d=identicon"


def realm_authentication_methods(realm: Realm) -> dict[str, dict[str, bool]]:
    """``/register``'s ``realm_authentication_methods`` (feature level 243): each backend
    this server offers, by Zulip's display name, with whether the organization enables it.
    Email and password is the only backend hubbub has, and it is always available."""
    return {"Email": {"enabled": realm.password_auth_enabled, "available": True}}


def authentication_methods(realm: Realm | None) -> dict[str, bool]:
    enabled = realm is None or realm.password_auth_enabled
    return {name: enabled and name in ("password", "email") for name in AUTH_BACKENDS}
