"""The catalogue of a user's personal settings (Zulip 10.2, feature level 372).

One place names every setting of ``PATCH /settings`` and ``PATCH
/realm/user_settings_defaults``: its Zulip default, the values it accepts, and which legacy
``/register`` keys and events repeat it. Both endpoints declare their parameters from here,
so the two can never disagree.
"""

from __future__ import annotations

from typing import Any, Literal

from hubbub.realm_settings import LANGUAGE_CODES

# Zulip's defaults (``UserBaseSettings`` in Zulip 10.2). ``dense_mode`` was removed at
# feature level 364: the font size and line height (feature level 245) replace it.
USER_SETTING_DEFAULTS: dict[str, Any] = {
    "twenty_four_hour_time": False,
    "web_mark_read_on_scroll_policy": 1,
    # Feature level 269: 1 opens a channel at its first topic, 2 shows the channel feed.
    "web_channel_default_view": 1,
    "starred_message_counts": True,
    "fluid_layout_width": False,
    "high_contrast_mode": False,
    "color_scheme": 1,
    # Feature level 245; Zulip 10.2's defaults (its compact values are 14 and 122).
    "web_font_size_px": 16,
    "web_line_height_percent": 140,
    "translate_emoticons": False,
    "display_emoji_reaction_users": True,
    "default_language": "en",
    "web_home_view": "recent_topics",
    "web_escape_navigates_to_home_view": True,
    "left_side_userlist": False,
    "emojiset": "google",
    "demote_inactive_streams": 1,
    "user_list_style": 2,
    "web_stream_unreads_count_display_policy": 2,
    "web_animate_image_previews": "on_hover",  # feature level 275
    "web_navigate_to_sent_message": True,  # feature level 268
    "web_suggest_update_timezone": True,  # feature level 329
    "timezone": "",
    "enter_sends": False,
    "enable_drafts_synchronization": True,
    "enable_stream_desktop_notifications": False,
    "enable_stream_email_notifications": False,
    "enable_stream_push_notifications": False,
    "enable_stream_audible_notifications": False,
    "notification_sound": "zulip",
    "enable_desktop_notifications": True,
    "enable_sounds": True,
    "enable_followed_topic_desktop_notifications": True,
    "enable_followed_topic_email_notifications": True,
    "enable_followed_topic_push_notifications": True,
    "enable_followed_topic_audible_notifications": True,
    "email_notifications_batching_period_seconds": 120,
    "enable_offline_email_notifications": True,
    "enable_offline_push_notifications": True,
    "enable_online_push_notifications": True,
    "enable_digest_emails": True,
    "enable_marketing_emails": True,
    "enable_login_emails": True,
    "message_content_in_email_notifications": True,
    "pm_content_in_desktop_notifications": True,
    "wildcard_mentions_notify": True,
    "enable_followed_topic_wildcard_mentions_notify": True,
    "desktop_icon_count_display": 1,
    "realm_name_in_email_notifications_policy": 1,
    # 3 = topics the user starts; 2 = topics the user sends a message to.
    "automatically_follow_topics_policy": 3,
    "automatically_unmute_topics_in_muted_streams_policy": 2,
    "automatically_follow_topics_where_mentioned": True,
    "presence_enabled": True,
    "send_private_typing_notifications": True,
    "send_stream_typing_notifications": True,
    "send_read_receipts": True,
    "receives_typing_notifications": True,  # feature level 253
    "allow_private_data_export": False,  # feature level 293
    "hide_ai_features": False,  # feature level 350
    "email_address_visibility": 1,
}

# Settings kept in ``user_profile`` columns rather than in the ``user_setting`` JSON.
COLUMN_SETTINGS = frozenset({"timezone", "email_address_visibility"})

_POLICY_1_3 = Literal[1, 2, 3]
_POLICY_1_4 = Literal[1, 2, 3, 4]
# The wire type of every setting; a ``Literal`` lists the accepted values.
SETTING_TYPES: dict[str, Any] = {
    "web_mark_read_on_scroll_policy": _POLICY_1_3,
    "color_scheme": _POLICY_1_3,
    "web_home_view": Literal["recent_topics", "inbox", "all_messages"],
    "emojiset": Literal["google", "google-blob", "twitter", "text"],
    "demote_inactive_streams": _POLICY_1_3,
    "user_list_style": _POLICY_1_3,
    "web_stream_unreads_count_display_policy": _POLICY_1_3,
    # Values 3 and 4 came after Zulip 10.2 (feature levels 383 and 401).
    "web_channel_default_view": Literal[1, 2],
    "web_animate_image_previews": Literal["always", "on_hover", "never"],
    "web_font_size_px": int,
    "web_line_height_percent": int,
    # Four values since feature level 227.
    "desktop_icon_count_display": _POLICY_1_4,
    "realm_name_in_email_notifications_policy": _POLICY_1_3,
    "automatically_follow_topics_policy": _POLICY_1_4,
    "automatically_unmute_topics_in_muted_streams_policy": _POLICY_1_4,
    "email_address_visibility": Literal[1, 2, 3, 4, 5],
    "default_language": str,
    "timezone": str,
    "notification_sound": str,
    "email_notifications_batching_period_seconds": int,
}
for _name, _default in USER_SETTING_DEFAULTS.items():
    if isinstance(_default, bool):
        SETTING_TYPES[_name] = bool

# Names renamed at feature level 219 ("default_view" and
# "escape_navigates_to_default_view"); old clients still send the old ones.
LEGACY_PARAMETER_NAMES: dict[str, tuple[str, ...]] = {
    "web_home_view": ("default_view",),
    "web_escape_navigates_to_home_view": ("escape_navigates_to_default_view",),
}

# ``PATCH /settings`` accepts every setting (in the order Zulip 8.0 processes them, the
# column settings last).
USER_SETTING_NAMES: tuple[str, ...] = tuple(USER_SETTING_DEFAULTS)

# ``PATCH /realm/user_settings_defaults``: everything but the time zone, the language
# (the realm's own default_language decides it), and the security and marketing emails,
# which Zulip leaves to each user.
NOT_REALM_DEFAULTS = frozenset(
    {"timezone", "default_language", "enable_login_emails", "enable_marketing_emails"}
)
# Consent to a private data export (feature level 293) is each user's own: /register shows
# the realm's default, but Zulip 10.2's endpoint takes no parameter for it.
REALM_DEFAULT_EDITABLE: tuple[str, ...] = tuple(
    name
    for name in USER_SETTING_NAMES
    if name not in NOT_REALM_DEFAULTS and name != "allow_private_data_export"
)
# The keys of /register ``realm_user_settings_defaults`` (everything but the time zone).
REALM_DEFAULT_KEYS: tuple[str, ...] = tuple(n for n in USER_SETTING_NAMES if n != "timezone")

# Settings that clients older than feature level 89 read at the top level of /register and
# hear about through ``update_display_settings`` / ``update_global_notifications``. Zulip
# froze these lists at that feature level; newer settings never appear there.
DISPLAY_SETTINGS_LEGACY: tuple[str, ...] = (
    "color_scheme",
    "default_language",
    "web_home_view",
    "demote_inactive_streams",
    "emojiset",
    "enable_drafts_synchronization",
    "enter_sends",
    "fluid_layout_width",
    "high_contrast_mode",
    "left_side_userlist",
    "starred_message_counts",
    "translate_emoticons",
    "twenty_four_hour_time",
)
NOTIFICATION_SETTINGS_LEGACY: tuple[str, ...] = (
    "desktop_icon_count_display",
    "email_notifications_batching_period_seconds",
    "enable_desktop_notifications",
    "enable_digest_emails",
    "enable_login_emails",
    "enable_marketing_emails",
    "enable_offline_email_notifications",
    "enable_offline_push_notifications",
    "enable_online_push_notifications",
    "enable_sounds",
    "enable_stream_audible_notifications",
    "enable_stream_desktop_notifications",
    "enable_stream_email_notifications",
    "enable_stream_push_notifications",
    "message_content_in_email_notifications",
    "notification_sound",
    "pm_content_in_desktop_notifications",
    "presence_enabled",
    "realm_name_in_email_notifications_policy",
    "wildcard_mentions_notify",
)

# Zulip 8.0's emoji sets and notification sounds ("none" is also accepted as a sound).
EMOJISET_CHOICES: list[dict[str, str]] = [
    {"key": "google", "text": "Google"},
    {"key": "twitter", "text": "Twitter"},
    {"key": "text", "text": "Plain text"},
    {"key": "google-blob", "text": "Google blobs"},
]
NOTIFICATION_SOUNDS: list[str] = ["chime", "ding", "zulip"]
# Zulip caps the email batching period at one week.
MAX_EMAIL_BATCHING_PERIOD_SECONDS = 7 * 24 * 60 * 60
# Zulip keeps the font size and line height in positive small integer columns; any value
# outside them fails there (feature level 245).
MAX_SMALL_POSITIVE_INT = 32767
SMALL_POSITIVE_INT_SETTINGS = ("web_font_size_px", "web_line_height_percent")

# Each language's name as Zulip's language list spells it (``language_name`` in events).
LANGUAGE_NAMES: dict[str, str] = {
    "ar": "العربيّة", "be": "Беларуская", "bg": "български", "bn": "বাংলা",
    "bqi": "Luri (Bakhtiari)", "ca": "català", "cs": "česky", "cy": "Cymraeg",
    "da": "dansk", "de": "Deutsch", "el": "Ελληνικά", "en": "English",
    "en-gb": "British English", "eo": "Esperanto", "es": "español", "fa": "فارسی",
    "fi": "suomi", "fr": "français", "gl": "galego", "gu": "ગુજરાતી", "hi": "हिंदी",
    "hu": "Magyar", "id": "Bahasa Indonesia", "it": "italiano", "ja": "日本語", "ko": "한국어",
    "lt": "Lietuviškai", "lrc": "لۊری شومالی", "ml": "മലയാളം", "mn": "Mongolian",
    "ne": "नेपाली", "nl": "Nederlands", "no": "norsk", "pl": "polski", "pt": "Português",
    "pt-br": "Portuguese (Brazil)", "pt-pt": "Portuguese (Portugal)", "ro": "Română",
    "ru": "Русский", "si": "Sinhala", "sk": "Slovak", "sr": "српски", "sv": "svenska",
    "ta": "தமிழ்", "te": "తెలుగు", "tl": "Tagalog", "tr": "Türkçe", "uk": "Українська",
    "uz": "o‘zbek", "vi": "Tiếng Việt", "zh-hans": "简体中文", "zh-hant": "繁體中文",
}  # fmt: skip


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code)


def is_valid_language(code: str) -> bool:
    return code in LANGUAGE_CODES


def is_valid_notification_sound(sound: str) -> bool:
    return sound in NOTIFICATION_SOUNDS or sound == "none"


def is_valid_batching_period(seconds: int) -> bool:
    return 0 < seconds <= MAX_EMAIL_BATCHING_PERIOD_SECONDS


def is_valid_small_positive_int(value: int) -> bool:
    return 0 <= value <= MAX_SMALL_POSITIVE_INT


def merged(stored: dict[str, Any], defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every setting: the stored overrides on top of ``defaults`` (Zulip's by default)."""
    base = USER_SETTING_DEFAULTS if defaults is None else defaults
    return {name: stored.get(name, base[name]) for name in base}


def overrides(values: dict[str, Any]) -> dict[str, Any]:
    """What the JSON column keeps: only the values that differ from Zulip's defaults. A
    setting Zulip removed (``dense_mode``, feature level 364) is dropped on the next write."""
    return {
        k: v
        for k, v in values.items()
        if k in USER_SETTING_DEFAULTS and USER_SETTING_DEFAULTS[k] != v
    }
