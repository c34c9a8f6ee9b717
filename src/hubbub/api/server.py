"""Unauthenticated endpoints: ``GET /server_settings`` and ``POST /fetch_api_key``."""

from __future__ import annotations

from hubbub import ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION
from hubbub.actions.auth import check_password_login
from hubbub.api.auth import client_address
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.urls import realm_url
from hubbub.errors import InvalidSubdomainError
from hubbub.push.bouncer import push_configured
from hubbub.queries.realm_info import authentication_methods, realm_icon_url


@endpoint("GET", "/server_settings", auth=False)
async def get_server_settings(req: ApiRequest) -> Payload:
    """Get server settings"""
    realm = req.realm
    methods = authentication_methods(realm)
    result: Payload = {
        "authentication_methods": methods,
        "external_authentication_methods": [],
        "zulip_feature_level": ZULIP_FEATURE_LEVEL,
        "zulip_version": ZULIP_VERSION,
        "zulip_merge_base": ZULIP_MERGE_BASE,
        # Zulip's push_notifications_configured(): a bouncer URL and credentials.
        "push_notifications_enabled": push_configured(req.services.settings),
        "is_incompatible": False,
        "email_auth_enabled": methods["email"],
        "require_email_format_usernames": True,
    }
    # On a subdomain with no organization only the server-wide keys are known.
    if realm is not None:
        url = realm_url(req)
        # Zulip 10.2 renders it in the realm, without previews; kept until it changes.
        async with req.services.db.read() as conn:
            description = await req.services.realm_descriptions.render(
                conn, realm.id, realm.description, realm_url=url
            )
        result.update(
            {
                # realm_url is the name since feature level 257; realm_uri stays for
                # older clients, as Zulip 10.2 still sends it.
                "realm_url": url,
                "realm_uri": url,
                "realm_name": realm.name,
                "realm_icon": realm_icon_url(realm),
                "realm_description": description,
                "realm_web_public_access_enabled": realm.enable_spectator_access,
            }
        )
    return result


@endpoint("POST", "/fetch_api_key", auth=False)
async def fetch_api_key(req: ApiRequest, *, username: str, password: str) -> Payload:
    """Fetch an API key (production)"""
    if req.realm is None:
        raise InvalidSubdomainError()
    services = req.services
    user = await check_password_login(
        services.db, services.login_guard, req.realm, username, password, client_address(req.http)
    )
    # The real address, which is what the client logs in with (Zulip does the same).
    return {"api_key": user.api_key, "email": user.delivery_email, "user_id": user.id}
