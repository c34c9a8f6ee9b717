"""Organization settings that clients read from ``/register`` as ``realm_<name>``.

Each entry is a property name (as ``realm`` update events name it) and its Zulip 8.0
default. A realm stores only the values that differ from these defaults (the ``settings``
JSON column), so adding a setting needs no data migration. Settings with a column of their
own (name, description, ...) are not listed here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hubbub.models import Realm

# The organization's permissions are group-valued settings since Zulip 10.0; they live in
# realm_group_settings.py, which also reads the Zulip 8.0 ``*_policy`` values a realm may
# still store here.
REALM_SETTING_DEFAULTS: dict[str, Any] = {
    "allow_message_editing": True,
    "avatar_changes_disabled": False,
    "default_code_block_language": "",
    "default_language": "en",
    "digest_emails_enabled": False,
    "digest_weekday": 1,
    "disallow_disposable_email_addresses": True,
    "email_changes_disabled": False,
    "emails_restricted_to_domains": False,
    # Feature level 348: whether clients warn before a direct message to a guest.
    "enable_guest_user_dm_warning": True,
    "enable_guest_user_indicator": True,
    "enable_read_receipts": True,
    "giphy_rating": 2,
    "inline_image_preview": True,
    "inline_url_embed_preview": False,
    "invite_required": True,
    "jitsi_server_url": None,
    "mandatory_topics": False,
    "message_content_allowed_in_email_notifications": True,
    "message_content_delete_limit_seconds": 600,
    "message_content_edit_limit_seconds": 600,
    # Feature level 358; read it with message_edit_history_policy, which knows the
    # ``allow_edit_history`` boolean it replaced.
    "message_edit_history_visibility_policy": "all",
    # -1 means "unlimited" (keep forever), as in Zulip.
    "message_retention_days": -1,
    "move_messages_between_streams_limit_seconds": 604800,
    "move_messages_within_stream_limit_seconds": 259200,
    "name_changes_disabled": False,
    "org_type": 0,
    "presence_disabled": False,
    # Feature level 246: full names must differ (see check_unique_full_name).
    "require_unique_names": False,
    "send_welcome_emails": True,
    "video_chat_provider": 1,
    "waiting_period_threshold": 0,
    "want_advertise_in_communities_directory": False,
}

# The values each choice setting accepts. An integer outside its set is refused with
# Zulip's check_int_in wording ("Invalid <name>").
POLICY_CHOICES: dict[str, tuple[int, ...]] = {
    "digest_weekday": (0, 1, 2, 3, 4, 5, 6),
    # Zulip's Realm.ORG_TYPES ids.
    "org_type": (0, 10, 20, 30, 35, 40, 50, 60, 70, 80, 90, 100, 1000),
}

# The values of message_edit_history_visibility_policy (feature level 358).
EDIT_HISTORY_POLICIES = ("all", "moves", "none")

# Keys an older hubbub stored in ``realm.settings`` for a setting that has since replaced
# them; storing the new setting drops them.
LEGACY_SETTING_KEYS: dict[str, tuple[str, ...]] = {
    "message_edit_history_visibility_policy": ("allow_edit_history",),
}


def message_edit_history_policy(realm: Realm) -> str:
    """The realm's edit-history visibility: "all", "moves" or "none". A realm that stored
    the Zulip 8.0 ``allow_edit_history`` boolean (replaced at feature level 358) reads as
    "all" for true and "none" for false, so no data migration is needed."""
    policy = realm.settings.get("message_edit_history_visibility_policy")
    if policy in EDIT_HISTORY_POLICIES:
        return str(policy)
    if realm.settings.get("allow_edit_history") is False:
        return "none"
    return "all"


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
        "message_retention_days",
        "waiting_period_threshold",
    }
)

# Settings whose ``realm`` event is ``update_dict`` rather than ``update``, for historical
# reasons (Zulip 8.0's do_set_realm_property; one event per changed setting since feature
# level 150).
UPDATE_DICT_SETTINGS = frozenset({"allow_message_editing", "message_content_edit_limit_seconds"})

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
