"""``POST /register`` against Zulip 10.2 (feature level 372): which top-level keys each
event type brings, that the keys Zulip removed after 8.0 are gone (bar the ones hubbub
keeps on purpose), and the types of the keys clients depend on most.

The inventory is Zulip 10.2's ``fetch_initial_state_data``: for every event type a client
may name in ``fetch_event_types`` (or ``event_types``), the keys it adds for a logged-in
user of an organization that is not a demo organization (a demo organization adds
``demo_organization_scheduled_deletion_date``; hubbub has none).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub import ZULIP_FEATURE_LEVEL
from hubbub.register.state import apply_event
from hubbub.search.stop_words import POSTGRESQL_ENGLISH_STOP_WORDS
from tests.helpers import TestEnv, assert_success
from tests.zulip_reference import base_path, read_base

# Sent whatever the client asks for, besides the envelope's "result" and "msg".
ALWAYS = frozenset(
    {"queue_id", "last_event_id", "zulip_version", "zulip_feature_level", "zulip_merge_base"}
)
ENVELOPE = frozenset({"result", "msg"})

_REALM_KEYS = """
    realm_allow_message_editing realm_avatar_changes_disabled realm_digest_emails_enabled
    realm_disallow_disposable_email_addresses realm_email_changes_disabled
    realm_emails_restricted_to_domains realm_enable_guest_user_dm_warning
    realm_enable_guest_user_indicator realm_enable_read_receipts realm_enable_spectator_access
    realm_inline_image_preview realm_inline_url_embed_preview realm_invite_required
    realm_message_content_allowed_in_email_notifications realm_name_changes_disabled
    realm_push_notifications_enabled realm_require_unique_names realm_send_welcome_emails
    realm_want_advertise_in_communities_directory realm_default_code_block_language
    realm_default_language realm_description realm_name realm_jitsi_server_url
    realm_digest_weekday realm_giphy_rating realm_message_retention_days
    realm_video_chat_provider realm_waiting_period_threshold
    realm_message_content_edit_limit_seconds realm_message_content_delete_limit_seconds
    realm_move_messages_between_streams_limit_seconds
    realm_move_messages_within_stream_limit_seconds
    realm_message_edit_history_visibility_policy realm_mandatory_topics

    realm_create_multiuse_invite_group realm_can_access_all_users_group
    realm_can_add_subscribers_group realm_can_add_custom_emoji_group
    realm_can_create_bots_group realm_can_create_groups
    realm_can_create_public_channel_group realm_can_create_private_channel_group
    realm_can_create_web_public_channel_group realm_can_create_write_only_bots_group
    realm_can_delete_any_message_group realm_can_delete_own_message_group
    realm_can_invite_users_group realm_can_manage_all_groups realm_can_manage_billing_group
    realm_can_mention_many_users_group realm_can_move_messages_between_channels_group
    realm_can_move_messages_between_topics_group realm_can_resolve_topics_group
    realm_can_summarize_topics_group realm_direct_message_initiator_group
    realm_direct_message_permission_group

    realm_create_public_stream_policy realm_create_private_stream_policy
    realm_create_web_public_stream_policy realm_wildcard_mention_policy
    realm_allow_edit_history

    realm_authentication_methods realm_presence_disabled realm_upload_quota_mib
    realm_icon_url realm_icon_source realm_logo_url realm_logo_source realm_night_logo_url
    realm_night_logo_source realm_url realm_uri realm_bot_domain
    realm_available_video_chat_providers realm_email_auth_enabled realm_password_auth_enabled
    realm_org_type realm_plan_type realm_push_notifications_enabled_end_timestamp
    realm_default_external_accounts realm_date_created realm_empty_topic_display_name
    realm_is_zephyr_mirror_realm realm_moderation_request_channel_id
    realm_new_stream_announcements_stream_id realm_signup_announcements_stream_id
    realm_zulip_update_announcements_stream_id

    max_avatar_file_size_mib max_file_upload_size_mib max_icon_file_size_mib
    max_logo_file_size_mib max_stream_name_length max_stream_description_length
    max_topic_length max_message_length password_min_length password_max_length
    password_min_guesses settings_send_digest_emails server_generation
    development_environment zulip_plan_is_not_limited upgrade_text_for_wide_organization_logo
    server_inline_image_preview server_inline_url_embed_preview server_thumbnail_formats
    server_avatar_changes_disabled server_name_changes_disabled
    server_web_public_streams_enabled giphy_rating_options server_emoji_data_url
    server_needs_upgrade event_queue_longpoll_timeout_seconds server_jitsi_server_url
    jitsi_server_url server_can_summarize_topics server_presence_ping_interval_seconds
    server_presence_offline_threshold_seconds
    server_typing_started_expiry_period_milliseconds
    server_typing_stopped_wait_period_milliseconds
    server_typing_started_wait_period_milliseconds server_supported_permission_settings
    server_min_deactivated_realm_deletion_days server_max_deactivated_realm_deletion_days
"""

# Zulip 10.2's top-level /register keys, by the event type that brings them.
INVENTORY_10_2: dict[str, frozenset[str]] = {
    name: frozenset(keys.split())
    for name, keys in {
        "alert_words": "alert_words",
        "custom_profile_fields": "custom_profile_fields custom_profile_field_types",
        "onboarding_steps": "onboarding_steps navigation_tour_video_url",
        "message": "max_message_id",
        "saved_snippets": "saved_snippets",
        "drafts": "drafts",
        "scheduled_messages": "scheduled_messages",
        "muted_topics": "muted_topics",
        "muted_users": "muted_users",
        "presence": "presences presence_last_update_id server_timestamp",
        "realm_user_groups": "realm_user_groups",
        "realm": _REALM_KEYS,
        "realm_user_settings_defaults": "realm_user_settings_defaults",
        "realm_domains": "realm_domains",
        "realm_emoji": "realm_emoji",
        "realm_linkifiers": "realm_linkifiers",
        "realm_filters": "realm_filters",
        "realm_playgrounds": "realm_playgrounds",
        "realm_billing": "realm_billing",
        "realm_user": """
            realm_users realm_non_active_users cross_realm_bots avatar_source
            avatar_url_medium avatar_url can_create_private_streams can_create_public_streams
            can_create_web_public_streams can_create_streams can_invite_others_to_realm
            is_admin is_owner is_moderator is_guest user_id email delivery_email full_name
        """,
        "realm_bot": "realm_bots",
        "realm_embedded_bots": "realm_embedded_bots",
        "realm_incoming_webhook_bots": "realm_incoming_webhook_bots",
        "recent_private_conversations": "recent_private_conversations",
        "subscription": "subscriptions unsubscribed never_subscribed",
        "starred_messages": "starred_messages",
        "stream": "streams",
        "default_streams": "realm_default_streams",
        "default_stream_groups": "realm_default_stream_groups",
        "stop_words": "stop_words",
        # The two legacy settings types: only for clients without user_settings_object.
        "update_display_settings": """
            color_scheme default_language web_home_view demote_inactive_streams emojiset
            enable_drafts_synchronization enter_sends fluid_layout_width high_contrast_mode
            left_side_userlist starred_message_counts translate_emoticons
            twenty_four_hour_time emojiset_choices timezone
        """,
        "update_global_notifications": """
            desktop_icon_count_display email_notifications_batching_period_seconds
            enable_desktop_notifications enable_digest_emails enable_login_emails
            enable_marketing_emails enable_offline_email_notifications
            enable_offline_push_notifications enable_online_push_notifications enable_sounds
            enable_stream_audible_notifications enable_stream_desktop_notifications
            enable_stream_email_notifications enable_stream_push_notifications
            message_content_in_email_notifications pm_content_in_desktop_notifications
            presence_enabled wildcard_mentions_notify notification_sound
            realm_name_in_email_notifications_policy available_notification_sounds
        """,
        "user_settings": "user_settings",
        "user_status": "user_status",
        "user_topic": "user_topics",
        "video_calls": "has_zoom_token",
        "giphy": "giphy_api_key",
    }.items()
}

LEGACY_SETTINGS_TYPES = ("update_display_settings", "update_global_notifications")

# Keys only a request naming all of these types gets.
JOINTLY_GATED: dict[tuple[str, ...], frozenset[str]] = {
    ("message", "update_message_flags"): frozenset({"unread_msgs"}),
}

# Top-level keys Zulip 8.0 sent and 10.2 does not: the feature level that removed each,
# and the event type that brought it.
REMOVED_IN_10_2: dict[str, tuple[int, str]] = {
    "realm_notifications_stream_id": (241, "realm"),
    "realm_signup_notifications_stream_id": (241, "realm"),
    "realm_private_message_policy": (270, "realm"),
    "realm_delete_own_message_policy": (291, "realm"),
    # The changelog calls it deprecated rather than removed, but Zulip's code computes no
    # compatibility value for it (as it does for the stream-creation policies): removed.
    "realm_user_group_edit_policy": (299, "realm"),
    "realm_add_custom_emoji_policy": (307, "realm"),
    "realm_move_messages_between_streams_policy": (310, "realm"),
    "realm_edit_topic_policy": (316, "realm"),
    "realm_invite_to_realm_policy": (321, "realm"),
    "realm_invite_to_stream_policy": (341, "realm"),
    "can_subscribe_other_users": (341, "realm_user"),
    "realm_bot_creation_policy": (344, "realm"),
    "is_billing_admin": (363, "realm_user"),
    "dense_mode": (364, "update_display_settings"),
}

# Removed keys hubbub still sends, and why.
KEPT_DELIBERATELY: dict[str, str] = {
    "is_billing_admin": (
        "The seed specification requires is_billing_admin in user objects, so hubbub keeps "
        "the flag; the top-level key states the same fact about the current user as that "
        "user's own entry of realm_users, and keeping one without the other would give a "
        "Zulip 8.0 client two answers to one question."
    ),
}

# Sub-keys Zulip removed: (top-level key, how to reach the objects, removed names).
_Objects = Callable[[Any], Iterable[dict[str, Any]]]
REMOVED_SUB_KEYS: list[tuple[str, _Objects, frozenset[str], int]] = [
    ("user_settings", lambda value: [value], frozenset({"dense_mode"}), 364),
    ("realm_user_settings_defaults", lambda value: [value], frozenset({"dense_mode"}), 364),
    (
        "server_supported_permission_settings",
        lambda value: [entry for kind in value.values() for entry in kind.values()],
        frozenset({"allow_owners_group", "id_field_name"}),
        326,
    ),
    ("realm_incoming_webhook_bots", lambda value: value, frozenset({"config"}), 318),
]

# Keys 10.2 sends only in circumstances hubbub never has.
CONDITIONAL_10_2 = {"demo_organization_scheduled_deletion_date": "only a demo organization"}


def expected_keys(types: Iterable[str] | None, *, user_settings_object: bool) -> set[str]:
    """The top-level keys Zulip 10.2 sends for ``types`` (None: everything), the
    envelope aside, plus the removed keys hubbub keeps."""
    requested = set(INVENTORY_10_2) | {"update_message_flags"} if types is None else set(types)
    keys = set(ALWAYS)
    for kind in requested & INVENTORY_10_2.keys():
        if kind in LEGACY_SETTINGS_TYPES and user_settings_object:
            continue
        # Zulip leaves the legacy muted_topics out for a client that names user_topic too;
        # one that names no types at all gets both.
        if kind == "muted_topics" and types is not None and "user_topic" in requested:
            continue
        keys |= INVENTORY_10_2[kind]
    for together, joint in JOINTLY_GATED.items():
        if requested.issuperset(together):
            keys |= joint
    for key in KEPT_DELIBERATELY:
        if REMOVED_IN_10_2[key][1] in requested:
            keys.add(key)
    return keys


def _describe(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "no parameters"


def _differences(params: dict[str, Any], body: dict[str, Any], expected: set[str]) -> str | None:
    got = set(body) - ENVELOPE
    missing, unexpected = sorted(expected - got), sorted(got - expected)
    if not missing and not unexpected:
        return None
    lines = [f"  {_describe(params)}:"]
    if missing:
        lines.append(f"    missing ({len(missing)}): {', '.join(missing)}")
    if unexpected:
        lines.append(f"    unexpected ({len(unexpected)}): {', '.join(unexpected)}")
    return "\n".join(lines)


async def _register(env: TestEnv, params: dict[str, Any], **client: Any) -> dict[str, Any]:
    return assert_success(await env.client("hamlet", **client).post("/register", params))


def _capabilities(user_settings_object: bool) -> dict[str, Any]:
    return {"client_capabilities": {"user_settings_object": True}} if user_settings_object else {}


async def _check_cases(
    env: TestEnv, cases: list[tuple[dict[str, Any], Iterable[str] | None, bool]]
) -> None:
    """Register once per case; fail once, listing every case's missing and unexpected
    keys (the schema check is off so that this message, not the first extra key, is what
    a failure shows)."""
    failures = []
    for params, types, user_settings_object in cases:
        body = await _register(env, params, check_spec=False)
        expected = expected_keys(types, user_settings_object=user_settings_object)
        difference = _differences(params, body, expected)
        if difference:
            failures.append(difference)
    assert not failures, "POST /register differs from Zulip 10.2:\n" + "\n".join(failures)


@pytest.mark.parametrize("user_settings_object", [False, True])
async def test_everything(env: TestEnv, user_settings_object: bool) -> None:
    """No event_types at all: every key of every type."""
    params = _capabilities(user_settings_object)
    await _check_cases(env, [(params, None, user_settings_object)])


@pytest.mark.parametrize("parameter", ["fetch_event_types", "event_types"])
async def test_each_type_alone(env: TestEnv, parameter: str) -> None:
    cases: list[tuple[dict[str, Any], Iterable[str] | None, bool]] = []
    for kind in [*INVENTORY_10_2, "update_message_flags"]:
        cases.append(({parameter: [kind]}, [kind], False))
        if kind in LEGACY_SETTINGS_TYPES:
            cases.append(({parameter: [kind], **_capabilities(True)}, [kind], True))
    await _check_cases(env, cases)


async def test_types_that_combine(env: TestEnv) -> None:
    combinations = [
        ["message", "update_message_flags"],
        ["muted_topics", "user_topic"],
        ["realm", "realm_user"],
        [*LEGACY_SETTINGS_TYPES, "user_settings"],
    ]
    cases: list[tuple[dict[str, Any], Iterable[str] | None, bool]] = [
        ({"fetch_event_types": types}, types, False) for types in combinations
    ]
    cases.append(
        ({"fetch_event_types": combinations[-1], **_capabilities(True)}, combinations[-1], True)
    )
    await _check_cases(env, cases)


async def test_removed_keys_are_gone(env: TestEnv) -> None:
    """Zulip 10.2 no longer sends these; hubbub keeps only KEPT_DELIBERATELY's."""
    problems = []
    for user_settings_object in (False, True):
        body = await _register(env, _capabilities(user_settings_object), check_spec=False)
        where = f"user_settings_object={user_settings_object}"
        for key, (level, _) in REMOVED_IN_10_2.items():
            if key in KEPT_DELIBERATELY:
                if key not in body:
                    problems.append(f"{where}: {key} is kept deliberately but missing")
            elif key in body:
                problems.append(f"{where}: {key} (removed at feature level {level}) is sent")
        for key, objects, names, level in REMOVED_SUB_KEYS:
            for entry in objects(body.get(key, [])):
                for name in sorted(names & entry.keys()):
                    problems.append(f"{where}: {key} still has {name} (removed at {level})")
        for key, reason in CONDITIONAL_10_2.items():
            if key in body:
                problems.append(f"{where}: {key} is sent, though Zulip sends it for {reason}")
        # The seed specification's user objects keep the flag.
        problems += [
            f"{where}: realm_users entry {person['user_id']} lacks is_billing_admin"
            for person in body["realm_users"]
            if "is_billing_admin" not in person
        ]
    assert not problems, "\n".join(problems)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_group_setting(value: Any) -> bool:
    """A group id, or an anonymous group of direct members and subgroups."""
    if _is_int(value):
        return True
    return (
        isinstance(value, dict)
        and set(value) == {"direct_members", "direct_subgroups"}
        and all(_is_int(i) for i in value["direct_members"] + value["direct_subgroups"])
    )


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(check(item) for item in value)


def _object(shape: dict[str, Callable[[Any], bool]]) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        return (
            isinstance(value, dict)
            and set(value) == set(shape)
            and all(test(value[name]) for name, test in shape.items())
        )

    return check


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_str_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


_TYPES: dict[str, Callable[[Any], bool]] = {
    "zulip_feature_level": lambda value: value == ZULIP_FEATURE_LEVEL == 372,
    "zulip_version": _is_str,
    "realm_billing": _object({"has_pending_sponsorship_request": _is_bool}),
    "onboarding_steps": _list_of(
        _object({"type": lambda value: value == "one_time_notice", "name": _is_str})
    ),
    "navigation_tour_video_url": _is_str_or_none,
    "realm_domains": _list_of(_object({"domain": _is_str, "allow_subdomains": _is_bool})),
    "stop_words": _list_of(_is_str),
    "realm_embedded_bots": _list_of(
        _object({"name": _is_str, "config": lambda v: isinstance(v, dict)})
    ),
    "realm_incoming_webhook_bots": lambda value: isinstance(value, list),
    "has_zoom_token": _is_bool,
    "giphy_api_key": _is_str,
    "realm_default_streams": _list_of(_is_int),
    "realm_default_stream_groups": _list_of(lambda group: _list_of(_is_int)(group["streams"])),
    "realm_message_edit_history_visibility_policy": lambda value: value in ("all", "moves", "none"),
    "realm_allow_edit_history": _is_bool,
    "realm_require_unique_names": _is_bool,
    "realm_enable_guest_user_dm_warning": _is_bool,
    "realm_empty_topic_display_name": _is_str,
    "realm_authentication_methods": lambda value: all(
        _is_bool(method["enabled"]) and _is_bool(method["available"]) for method in value.values()
    ),
    "presence_last_update_id": _is_int,
    "realm_url": _is_str,
    "realm_org_type": _is_int,
    "max_file_upload_size_mib": _is_int,
    "server_supported_permission_settings": lambda value: (
        set(value) == {"realm", "stream", "group"}
    ),
    "saved_snippets": lambda value: isinstance(value, list),
    "realm_is_zephyr_mirror_realm": lambda value: value is False,
    "realm_mandatory_topics": _is_bool,
    **{
        f"realm_{name}_stream_id": _is_int
        for name in (
            "new_stream_announcements",
            "signup_announcements",
            "zulip_update_announcements",
        )
    },
    "realm_moderation_request_channel_id": _is_int,
    **{
        key: _is_int
        for key in (
            "realm_create_public_stream_policy",
            "realm_create_private_stream_policy",
            "realm_create_web_public_stream_policy",
            "realm_wildcard_mention_policy",
        )
    },
    **{
        key: _is_group_setting
        for key in INVENTORY_10_2["realm"]
        if key.endswith("_group")
        and key.startswith(("realm_can_", "realm_direct_message_", "realm_create_multiuse"))
    },
}


async def test_key_types(env: TestEnv) -> None:
    body = await _register(env, {})
    wrong = {
        key: body.get(key, "(missing)")
        for key, check in _TYPES.items()
        if key not in body or not check(body[key])
    }
    assert not wrong, f"keys of the wrong type or value: {wrong}"
    # Feature level 358: the old flag is derived from the policy.
    assert body["realm_allow_edit_history"] is (
        body["realm_message_edit_history_visibility_policy"] != "none"
    )
    assert body["realm_url"] == body["realm_uri"]


async def test_stop_words_are_what_search_ignores(env: TestEnv) -> None:
    """A search for one word of a message finds it exactly when the word is no stop word."""
    body = await _register(env, {"fetch_event_types": ["stop_words"]})
    stop_words = set(body["stop_words"])
    await env.subscribe("hamlet", "Denmark")
    content = "the quick fox jumps over a lazy dog and runs"
    sent = assert_success(
        await env.client("hamlet").post(
            "/messages", {"type": "stream", "to": "Denmark", "topic": "words", "content": content}
        )
    )
    wrong = []
    for word in content.split():
        found = assert_success(
            await env.client("hamlet").get(
                "/messages",
                {
                    "anchor": "newest",
                    "num_before": 10,
                    "num_after": 0,
                    "narrow": [{"operator": "search", "operand": word}],
                },
            )
        )
        if (sent["id"] in [m["id"] for m in found["messages"]]) == (word in stop_words):
            wrong.append(word)
    assert not wrong, f"stop_words {sorted(stop_words)} disagree with search for {wrong}"
    if env.services.db.dialect_name == "postgresql":
        assert {"the", "a", "over", "and"} <= stop_words
    else:
        assert stop_words == set()


async def test_postgresql_stop_words_are_the_servers(env: TestEnv) -> None:
    """The list is PostgreSQL's english.stop file, read from the server where it lets us."""
    if env.services.db.dialect_name != "postgresql":
        pytest.skip("PostgreSQL variant")
    async with env.services.db.read() as conn:
        dropped = await conn.execute(
            sa.text(
                "SELECT w FROM unnest(CAST(:words AS text[])) AS w"
                " WHERE to_tsvector('english', w) <> ''::tsvector"
            ),
            {"words": list(POSTGRESQL_ENGLISH_STOP_WORDS)},
        )
        assert [row.w for row in dropped] == []
        superuser = (
            await conn.execute(
                sa.text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            )
        ).scalar()
        if not superuser:
            return
        share = (
            await conn.execute(sa.text("SELECT setting FROM pg_config WHERE name = 'SHAREDIR'"))
        ).scalar()
        text = (
            await conn.execute(
                sa.text("SELECT pg_read_file(:path)"),
                {"path": f"{share}/tsearch_data/english.stop"},
            )
        ).scalar()
    assert isinstance(text, str)
    assert tuple(text.split()) == POSTGRESQL_ENGLISH_STOP_WORDS


async def test_client_applies_zulip_events_to_the_small_parts(env: TestEnv) -> None:
    """hubbub sends none of these events (nothing here changes), but a state updated by
    them follows Zulip's client rules."""
    state = await _register(env, {})
    events: list[dict[str, Any]] = [
        {
            "type": "realm_domains",
            "op": "add",
            "realm_domain": {"domain": "example.com", "allow_subdomains": False},
        },
        {
            "type": "realm_domains",
            "op": "add",
            "realm_domain": {"domain": "example.org", "allow_subdomains": False},
        },
        {
            "type": "realm_domains",
            "op": "change",
            "realm_domain": {"domain": "example.com", "allow_subdomains": True},
        },
        {"type": "realm_domains", "op": "remove", "domain": "example.org"},
        {"type": "realm_billing", "property": "has_pending_sponsorship_request", "value": True},
        {
            "type": "onboarding_steps",
            "onboarding_steps": [{"type": "one_time_notice", "name": "x"}],
        },
        {"type": "has_zoom_token", "value": True},
    ]
    for event in events:
        apply_event(state, {"id": 0, **event})
    assert state["realm_domains"] == [{"domain": "example.com", "allow_subdomains": True}]
    assert state["realm_billing"] == {"has_pending_sponsorship_request": True}
    assert state["onboarding_steps"] == [{"type": "one_time_notice", "name": "x"}]
    assert state["has_zoom_token"] is True


def test_inventory_accounts_for_every_8_0_key() -> None:
    """Every top-level key Zulip 8.0 documents is in 10.2's inventory, removed, or sent
    only in circumstances hubbub never has; and no removed key is in the inventory."""
    document = read_base(base_path())
    schema = document["paths"]["/register"]["post"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]
    documented = {name for part in schema["allOf"] for name in part.get("properties", {})}
    inventory = set().union(*INVENTORY_10_2.values(), *JOINTLY_GATED.values(), ALWAYS, ENVELOPE)
    unaccounted = documented - inventory - REMOVED_IN_10_2.keys() - CONDITIONAL_10_2.keys()
    assert unaccounted == {"ignored_parameters_unsupported"}
    assert not inventory & REMOVED_IN_10_2.keys()
    assert set(KEPT_DELIBERATELY) <= REMOVED_IN_10_2.keys()
