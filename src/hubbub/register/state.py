"""``POST /register`` state: fetched fresh, and kept current by applying events.

``fetch_initial_state`` reads what a client asked for; ``apply_event`` updates such a state
with one event exactly as a client would. ``/register`` uses the second to fold in events
that raced with the fetch; the tests use both to prove that old state plus events equals
new state for every event type (Zulip's ``verify_action``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub import ZULIP_FEATURE_LEVEL, ZULIP_MERGE_BASE, ZULIP_VERSION
from hubbub.events.queues import LONGPOLL_TIMEOUT_SECONDS
from hubbub.models import Realm, Role, User
from hubbub.push.bouncer import push_configured
from hubbub.queries.people import PeopleCache
from hubbub.queries.profile_fields import DEFAULT_EXTERNAL_ACCOUNTS
from hubbub.queries.realm_info import (
    authentication_methods,
    realm_authentication_methods,
    realm_icon_url,
)
from hubbub.queries.user_dicts import GRAVATAR_URL, avatar_url, get_user_dicts
from hubbub.realm_settings import REALM_SETTING_DEFAULTS
from hubbub.register import (
    bot_state,
    edit_history_state,
    linkifier_state,
    message_delete_state,
    message_edit_state,
    message_state,
    misc_state,
    muting_state,
    playground_state,
    presence_state,
    profile_field_state,
    realm_emoji_state,
    realm_group_settings_state,
    saved_snippet_state,
    scheduled_message_state,
    settings_state,
    thumbnail_state,
    topic_state,
    user_group_state,
)
from hubbub.register.context import StateContext
from hubbub.register.stream_state import apply_stream_event, fetch_stream_state
from hubbub.settings import Settings

# Limits clients validate against before sending (Zulip 8.0's values).
SERVER_LIMITS: dict[str, Any] = {
    "max_message_length": 10000,
    "max_topic_length": 60,
    "max_stream_name_length": 60,
    "max_stream_description_length": 1024,
    "max_avatar_file_size_mib": 5,
    "max_icon_file_size_mib": 5,
    "max_logo_file_size_mib": 5,
    "password_min_length": 6,
    # Feature level 338.
    "password_max_length": 100,
    "password_min_guesses": 10000,
    "server_presence_ping_interval_seconds": 60,
    "server_presence_offline_threshold_seconds": 140,
    "server_typing_started_expiry_period_milliseconds": 45000,
    "server_typing_stopped_wait_period_milliseconds": 5000,
    "server_typing_started_wait_period_milliseconds": 10000,
}

DEFAULT_JITSI_SERVER_URL = "https://meet.jit.si"

_VIDEO_CHAT_PROVIDERS = {
    "disabled": {"name": "None", "id": 0},
    "jitsi_meet": {"name": "Jitsi Meet", "id": 1},
}
_GIPHY_RATINGS = {
    "y": {"name": "Allow GIFs rated Y (Very young audience)", "id": 1},
    "g": {"name": "Allow GIFs rated G (General audience)", "id": 2},
    "pg": {"name": "Allow GIFs rated PG (Parental guidance)", "id": 3},
    "pg13": {"name": "Allow GIFs rated PG-13 (Parental guidance - under 13)", "id": 4},
    "r": {"name": "Allow GIFs rated R (Restricted)", "id": 5},
    "disabled": {"name": "Disable GIFs", "id": 0},
}

# The event types whose state /register can return.
STATE_TYPES = (
    "realm",
    "realm_user",
    "subscription",
    "stream",
    "default_streams",
    "user_topic",
    "muted_topics",
    "realm_user_groups",
    "default_stream_groups",
    "user_settings",
    "realm_user_settings_defaults",
    "drafts",
    "saved_snippets",
    "custom_profile_fields",
    "realm_linkifiers",
    "realm_filters",
    "realm_emoji",
    "realm_playgrounds",
    "muted_users",
    "alert_words",
    "presence",
    "user_status",
    "realm_bot",
    *misc_state.STATE_TYPES,
)

# The other parts of the state, one module each: ``fetch`` returns the keys its client
# wants; ``apply`` updates a state with one event and says whether the event was its own.
_PARTS: tuple[
    tuple[
        Callable[[AsyncConnection, StateContext], Awaitable[dict[str, Any]]],
        Callable[[dict[str, Any], dict[str, Any]], bool],
    ],
    ...,
] = (
    (realm_group_settings_state.fetch, realm_group_settings_state.apply),
    (user_group_state.fetch, user_group_state.apply),
    (settings_state.fetch, settings_state.apply),
    (profile_field_state.fetch, profile_field_state.apply),
    (realm_emoji_state.fetch, realm_emoji_state.apply),
    (linkifier_state.fetch, linkifier_state.apply),
    (bot_state.fetch, bot_state.apply),
    (playground_state.fetch, playground_state.apply),
    (muting_state.fetch, muting_state.apply),
    (presence_state.fetch, presence_state.apply),
    (message_state.fetch, message_state.apply),
    (message_edit_state.fetch, message_edit_state.apply),
    (message_delete_state.fetch, message_delete_state.apply),
    (scheduled_message_state.fetch, scheduled_message_state.apply),
    (saved_snippet_state.fetch, saved_snippet_state.apply),
    (misc_state.fetch, misc_state.apply),
    (thumbnail_state.fetch, thumbnail_state.apply),
    (topic_state.fetch, topic_state.apply),
    (edit_history_state.fetch, edit_history_state.apply),
)


def realm_state(realm: Realm, realm_uri: str, settings: Settings) -> dict[str, Any]:
    methods = authentication_methods(realm)
    state: dict[str, Any] = {
        f"realm_{name}": realm.setting(name) for name in REALM_SETTING_DEFAULTS
    }
    state.update(
        {
            "realm_name": realm.name,
            # The Markdown source, as Zulip's /register sends it (and as ``realm`` update
            # events carry it); only /server_settings shows the rendered HTML.
            "realm_description": realm.description,
            "realm_date_created": int(realm.date_created),
            # Renamed realm_url at feature level 257; Zulip 10.2 still sends both.
            "realm_url": realm_uri,
            "realm_uri": realm_uri,
            "realm_enable_spectator_access": realm.enable_spectator_access,
            "realm_authentication_methods": realm_authentication_methods(realm),
            "realm_email_auth_enabled": methods["email"],
            "realm_password_auth_enabled": methods["password"],
            "realm_icon_url": realm_icon_url(realm),
            "realm_icon_source": "G",
            "realm_logo_url": "",
            "realm_logo_source": "D",
            "realm_night_logo_url": "",
            "realm_night_logo_source": "D",
            "realm_bot_domain": realm_uri.split("://", 1)[-1].split(":", 1)[0],
            "realm_is_zephyr_mirror_realm": False,
            # A bouncer URL and credentials (Zulip's push_notifications_configured()).
            "realm_push_notifications_enabled": push_configured(settings),
            "realm_push_notifications_enabled_end_timestamp": None,
            "realm_upload_quota_mib": None,
            "realm_plan_type": 1,
            "realm_available_video_chat_providers": _VIDEO_CHAT_PROVIDERS,
            "realm_default_external_accounts": DEFAULT_EXTERNAL_ACCOUNTS,
            "realm_presence_disabled": realm.setting("presence_disabled"),
            "realm_digest_emails_enabled": realm.setting("digest_emails_enabled"),
            "settings_send_digest_emails": False,
            "zulip_plan_is_not_limited": True,
            "upgrade_text_for_wide_organization_logo": "",
            "development_environment": False,
            "server_generation": 1,
            "giphy_rating_options": _GIPHY_RATINGS,
            "server_inline_image_preview": True,
            "server_inline_url_embed_preview": False,
            "server_avatar_changes_disabled": False,
            "server_name_changes_disabled": False,
            "server_needs_upgrade": False,
            "server_web_public_streams_enabled": settings.web_public_streams_enabled,
            "server_jitsi_server_url": None,
            # No topic summaries: hubbub runs no language model (feature level 350).
            "server_can_summarize_topics": False,
            # Deactivated organizations are never scheduled for deletion (feature level
            # 332): hubbub keeps their data until an operator removes it.
            "server_min_deactivated_realm_deletion_days": None,
            "server_max_deactivated_realm_deletion_days": None,
            # The Jitsi server calls use: the realm's own, else the server's default.
            "jitsi_server_url": realm.setting("jitsi_server_url") or DEFAULT_JITSI_SERVER_URL,
            "event_queue_longpoll_timeout_seconds": LONGPOLL_TIMEOUT_SECONDS,
            **SERVER_LIMITS,
            "max_file_upload_size_mib": settings.max_file_upload_mib,
            "server_emoji_data_url": realm_emoji_state.server_emoji_data_url(realm_uri),
        }
    )
    return state


def identity_state(me: User) -> dict[str, Any]:
    medium = GRAVATAR_URL.format(
        hash=hashlib.md5(me.delivery_email.lower().encode(), usedforsecurity=False).hexdigest(),
        version=me.avatar_version,
    ).replace("&version=", "&s=500&version=")
    return {
        "user_id": me.id,
        "email": me.email,
        "delivery_email": me.delivery_email,
        "full_name": me.full_name,
        "is_admin": me.role in (Role.OWNER, Role.ADMINISTRATOR),
        "is_owner": me.role == Role.OWNER,
        "is_billing_admin": me.is_billing_admin,
        "is_moderator": me.role == Role.MODERATOR,
        "is_guest": me.role == Role.GUEST,
        "avatar_source": me.avatar_source,
        # Always a URL here (the schema has no null for the own avatar).
        "avatar_url": avatar_url(me, client_gravatar=False),
        "avatar_url_medium": medium,
    }


async def fetch_initial_state(
    conn: AsyncConnection,
    me: User,
    realm: Realm,
    wanted: Callable[[str], bool],
    *,
    client_gravatar: bool,
    realm_uri: str,
    settings: Settings,
    include_subscribers: bool = False,
    slim_presence: bool = False,
    presence_history_limit_days: int | None = None,
    client_capabilities: dict[str, Any] | None = None,
    now: float | None = None,
    people: PeopleCache,
) -> dict[str, Any]:
    """``/register``'s state; ``people``, the process's users and groups kept by realm
    (``Services.people``), saves reading them all when none has changed since."""
    state: dict[str, Any] = {
        "zulip_version": ZULIP_VERSION,
        "zulip_feature_level": ZULIP_FEATURE_LEVEL,
        "zulip_merge_base": ZULIP_MERGE_BASE,
    }
    if wanted("realm"):
        state.update(realm_state(realm, realm_uri, settings))
        # Renamed at feature level 241, with the update-announcements stream (242) and the
        # moderation-request channel (331) beside them: none is configured (-1).
        state["realm_new_stream_announcements_stream_id"] = -1
        state["realm_signup_announcements_stream_id"] = -1
        state["realm_zulip_update_announcements_stream_id"] = -1
        state["realm_moderation_request_channel_id"] = -1
    if wanted("realm_user"):
        users = await people.users(conn, realm.id)
        persons = await get_user_dicts(
            conn, users, me, client_gravatar=client_gravatar, include_custom_profile_fields=True
        )
        state["realm_users"] = [p for p in persons if p["is_active"]]
        state["realm_non_active_users"] = [p for p in persons if not p["is_active"]]
        state["cross_realm_bots"] = []
        state.update(identity_state(me))
    state.update(
        await fetch_stream_state(
            conn,
            me,
            wanted,
            include_subscribers=include_subscribers,
            archived_channels=bool((client_capabilities or {}).get("archived_channels")),
        )
    )
    ctx = StateContext(
        me=me,
        realm=realm,
        wanted=wanted,
        client_gravatar=client_gravatar,
        include_subscribers=include_subscribers,
        slim_presence=slim_presence,
        presence_history_limit_days=presence_history_limit_days,
        client_capabilities=client_capabilities or {},
        now=now,
        people=people,
        web_public_streams_enabled=settings.web_public_streams_enabled,
    )
    for fetch, _ in _PARTS:
        state.update(await fetch(conn, ctx))
    # Topics in the other parts' keys, as this client can show them (feature level 334).
    topic_state.show_to_client(state, ctx.client_capabilities)
    return state


def _apply_person_update(state: dict[str, Any], person: dict[str, Any]) -> None:
    user_id = person["user_id"]
    active, inactive = state["realm_users"], state["realm_non_active_users"]
    target = next((p for p in active + inactive if p["user_id"] == user_id), None)
    if target is None:
        return
    for key, value in person.items():
        if key == "custom_profile_field":
            data = target.setdefault("profile_data", {})
            if value["value"] is None:
                data.pop(str(value["id"]), None)
            else:
                entry = {"value": value["value"]}
                if value.get("rendered_value") is not None:
                    entry["rendered_value"] = value["rendered_value"]
                data[str(value["id"])] = entry
        elif key == "role":
            target.update(
                role=value,
                is_owner=value == Role.OWNER,
                is_admin=value in (Role.OWNER, Role.ADMINISTRATOR),
                is_guest=value == Role.GUEST,
            )
        elif key != "user_id":
            target[key] = value
    if "is_active" in person:
        source, dest = (inactive, active) if person["is_active"] else (active, inactive)
        if target in source:
            source.remove(target)
            dest.append(target)
            dest.sort(key=lambda p: p["user_id"])
    if state.get("user_id") == user_id:
        if "full_name" in person:
            state["full_name"] = person["full_name"]
        if "role" in person:
            role = person["role"]
            state.update(
                is_owner=role == Role.OWNER,
                is_admin=role in (Role.OWNER, Role.ADMINISTRATOR),
                is_moderator=role == Role.MODERATOR,
                is_guest=role == Role.GUEST,
            )


def apply_event(
    state: dict[str, Any], event: dict[str, Any], *, include_subscribers: bool = False
) -> None:
    """Update ``state`` (a /register response) with one event, as a client would."""
    if apply_stream_event(state, event, include_subscribers=include_subscribers):
        return
    for _, apply in _PARTS:
        if apply(state, event):
            return
    kind = event["type"]
    if kind == "realm_user" and "realm_users" in state:
        if event["op"] == "add":
            person = event["person"]
            bucket = "realm_users" if person["is_active"] else "realm_non_active_users"
            state[bucket] = [p for p in state[bucket] if p["user_id"] != person["user_id"]]
            state[bucket].append(person)
            state[bucket].sort(key=lambda p: p["user_id"])
        elif event["op"] == "remove":
            user_id = event["person"]["user_id"]
            state["realm_users"] = [p for p in state["realm_users"] if p["user_id"] != user_id]
        elif event["op"] == "update":
            _apply_person_update(state, event["person"])
    elif kind == "realm" and event["op"] in ("update", "update_dict"):
        # A client treats ``update`` as an ``update_dict`` of one setting.
        update = event["op"] == "update"
        _apply_realm_changes(
            state, {event["property"]: event["value"]} if update else event["data"]
        )


def _apply_realm_changes(state: dict[str, Any], changes: dict[str, Any]) -> None:
    for name, value in changes.items():
        key = f"realm_{name}"
        if key in state:
            state[key] = value
        if name == "jitsi_server_url" and "jitsi_server_url" in state:
            state["jitsi_server_url"] = value or DEFAULT_JITSI_SERVER_URL
