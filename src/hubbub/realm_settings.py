"""Organization settings that clients read from ``/register`` as ``realm_<name>``.

Each entry is a property name (as ``realm`` update events name it) and its Zulip 8.0
default. A realm stores only the values that differ from these defaults (the ``settings``
JSON column), so adding a setting needs no data migration. Settings with a column of their
own (name, description, ...) are not listed here.
"""

from __future__ import annotations

from typing import Any

# Zulip's policy values: 1 members, 2 admins, 3 full members, 4 moderators, 5 everyone
# (the exact set differs per policy).
REALM_SETTING_DEFAULTS: dict[str, Any] = {
    "add_custom_emoji_policy": 1,
    "allow_edit_history": True,
    "allow_message_editing": True,
    "avatar_changes_disabled": False,
    "bot_creation_policy": 1,
    "create_private_stream_policy": 1,
    "create_public_stream_policy": 1,
    "create_web_public_stream_policy": 7,
    "default_code_block_language": "",
    "default_language": "en",
    "delete_own_message_policy": 2,
    "digest_emails_enabled": False,
    "digest_weekday": 1,
    "disallow_disposable_email_addresses": True,
    "edit_topic_policy": 5,
    "email_changes_disabled": False,
    "emails_restricted_to_domains": False,
    "enable_guest_user_indicator": True,
    "enable_read_receipts": True,
    "giphy_rating": 2,
    "inline_image_preview": True,
    "inline_url_embed_preview": False,
    "invite_required": True,
    "invite_to_realm_policy": 1,
    "invite_to_stream_policy": 1,
    "jitsi_server_url": None,
    "mandatory_topics": False,
    "message_content_allowed_in_email_notifications": True,
    "message_content_delete_limit_seconds": 600,
    "message_content_edit_limit_seconds": 600,
    # -1 means "unlimited" (keep forever), as in Zulip.
    "message_retention_days": -1,
    "move_messages_between_streams_limit_seconds": 604800,
    "move_messages_between_streams_policy": 1,
    "move_messages_within_stream_limit_seconds": 259200,
    "name_changes_disabled": False,
    "org_type": 0,
    "presence_disabled": False,
    "private_message_policy": 1,
    "send_welcome_emails": True,
    "user_group_edit_policy": 1,
    "video_chat_provider": 1,
    "waiting_period_threshold": 0,
    "want_advertise_in_communities_directory": False,
    "wildcard_mention_policy": 5,
}

# The values each ``*_policy`` (and other choice) setting accepts in Zulip 8.0. An integer
# outside its set is refused with Zulip's check_int_in wording ("Invalid <name>").
COMMON_POLICY = (1, 2, 3, 4)  # members, admins, full members, moderators
POLICY_CHOICES: dict[str, tuple[int, ...]] = {
    "add_custom_emoji_policy": COMMON_POLICY,
    "create_private_stream_policy": COMMON_POLICY,
    "create_public_stream_policy": COMMON_POLICY,
    "invite_to_stream_policy": COMMON_POLICY,
    "user_group_edit_policy": COMMON_POLICY,
    # ... plus 6 (nobody).
    "invite_to_realm_policy": (*COMMON_POLICY, 6),
    "move_messages_between_streams_policy": (*COMMON_POLICY, 6),
    # ... plus 5 (everyone).
    "delete_own_message_policy": (*COMMON_POLICY, 5),
    "edit_topic_policy": (*COMMON_POLICY, 5),
    # admins, moderators, nobody, owners.
    "create_web_public_stream_policy": (2, 4, 6, 7),
    # unlimited, disabled.
    "private_message_policy": (1, 2),
    # everyone, members, full members, admins, nobody, moderators (4, the retired
    # "stream admins" value, is refused as in Zulip 8.0).
    "wildcard_mention_policy": (1, 2, 3, 5, 6, 7),
    # everyone, generic bots only, admins only.
    "bot_creation_policy": (1, 2, 3),
    "digest_weekday": (0, 1, 2, 3, 4, 5, 6),
    # Zulip's Realm.ORG_TYPES ids.
    "org_type": (0, 10, 20, 30, 35, 40, 50, 60, 70, 80, 90, 100, 1000),
}

# The video call providers this server offers (/register realm_available_video_chat_providers).
VIDEO_CHAT_PROVIDER_IDS = (0, 1)
# Zulip's GIPHY rating ids (/register giphy_rating_options).
GIPHY_RATING_IDS = (0, 1, 2, 3, 4, 5)

# Settings only organization owners may change (Zulip 8.0's update_realm).
OWNER_ONLY_SETTINGS = frozenset(
    {
        "disallow_disposable_email_addresses",
        "emails_restricted_to_domains",
        "invite_required",
        "invite_to_realm_policy",
        "message_retention_days",
        "waiting_period_threshold",
    }
)

# Settings whose ``realm`` event is ``update_dict`` rather than ``update``, for historical
# reasons (Zulip 8.0's do_set_realm_property; one event per changed setting since feature
# level 150).
UPDATE_DICT_SETTINGS = frozenset(
    {"allow_message_editing", "edit_topic_policy", "message_content_edit_limit_seconds"}
)

# Time limits that take a positive number of seconds or "unlimited" (stored as None).
TIME_LIMIT_SETTINGS = (
    "message_content_delete_limit_seconds",
    "message_content_edit_limit_seconds",
    "move_messages_between_streams_limit_seconds",
    "move_messages_within_stream_limit_seconds",
)

MAX_REALM_NAME_LENGTH = 40
MAX_REALM_DESCRIPTION_LENGTH = 1000
MAX_JITSI_SERVER_URL_LENGTH = 200

# The language codes Zulip 8.0 ships translations for (``default_language`` must be one).
LANGUAGE_CODES = frozenset(
    {
        "ar", "be", "bg", "bn", "bqi", "ca", "cs", "cy", "da", "de", "el", "en", "en-gb",
        "eo", "es", "fa", "fi", "fr", "gl", "gu", "hi", "hu", "id", "it", "ja", "ko", "lt",
        "lrc", "ml", "mn", "ne", "nl", "no", "pl", "pt", "pt-br", "pt-pt", "ro", "ru", "si",
        "sk", "sr", "sv", "ta", "te", "tl", "tr", "uk", "uz", "vi", "zh-hans", "zh-hant",
    }
)  # fmt: skip
