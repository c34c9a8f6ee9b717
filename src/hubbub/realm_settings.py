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
