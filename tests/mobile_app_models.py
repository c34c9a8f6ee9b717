"""What the official Zulip mobile app (zulip-flutter) needs from the server, as data.

The facts below were read from the public repository ``zulip/zulip-flutter``:

- ``lib/api/model/initial_snapshot.dart`` and its generated ``initial_snapshot.g.dart``
  (the ``POST /register`` result and its nested objects);
- ``lib/api/model/model.dart`` / ``model.g.dart`` (users, channels, subscriptions, user
  groups, custom profile fields, messages, group-setting values);
- ``lib/api/model/reaction.dart`` / ``reaction.g.dart`` and ``submessage.g.dart``;
- ``lib/api/model/events.dart`` / ``events.g.dart`` (every event type the app decodes);
- ``lib/api/model/narrow.dart`` and ``lib/model/narrow.dart`` (the narrows it sends);
- ``lib/api/route/realm.dart`` (``GET /server_settings`` and the server emoji data),
  ``account.dart`` (``POST /fetch_api_key``), ``events.dart`` (``POST /register`` and
  ``GET /events``), ``messages.dart`` (``GET /messages`` and related routes);
- ``lib/api/core.dart`` (the feature levels below which the app refuses to connect or
  shows its "unsupported server" banner).

Type descriptors, one per JSON key:

- ``int``: a JSON number (the app's generated decoders read any number and drop a
  fraction); ``int!``: a JSON integer (read by a hand-written cast that rejects a fraction);
- ``str``, ``bool``, ``any``, ``dict`` (any object), ``list`` (any list);
- ``url``: an absolute http(s) URL (the app hands it straight to its HTTP client);
- ``color``: ``#`` and six lowercase hex digits;
- ``group_setting``: a group id (a JSON integer), or an object of the model
  ``GroupSettingValueNameless``;
- ``enum:a|b`` (string values) and ``intenum:1|2`` (integer values): the only values
  the app can decode (an enum the app maps unknown values of is written ``str``/``int``);
- ``list[X]``: a list of X; ``map[X]``: an object whose values are X; ``idmap[X]``: the
  same, with every key a decimal integer (a user or message id);
- a model name: an object checked against that model;
- a trailing ``?``: the key may be absent or null (the app reads it as optional).

A descriptor without ``?`` is a required key: the app fails to decode the whole response
(and so cannot load the account) when it is missing, null or of another type.
"""

from __future__ import annotations

# The app's version as its User-Agent reports it; hubbub names the message client after
# the text before the first slash.
USER_AGENT = "ZulipFlutter/30.0.261 (Android 14)"

# Below this level (Zulip 9.0) the app refuses to connect.
MIN_ALLOWED_FEATURE_LEVEL = 277
MIN_ALLOWED_VERSION = "9.0"
# Below this level (Zulip 10.0) the app connects but shows an "unsupported server" banner.
MIN_SUPPORTED_FEATURE_LEVEL = 371
MIN_SUPPORTED_VERSION = "10.0"

# The parameters of the app's one POST /register call: no event_types, no
# fetch_event_types, no include_subscribers (so the queue wants every event type).
REGISTER_PARAMS: dict[str, object] = {
    "apply_markdown": True,
    "slim_presence": True,
    "client_gravatar": False,
    "client_capabilities": {
        "notification_settings_null": True,
        "bulk_message_deletion": True,
        "user_avatar_url_field_optional": False,
        "stream_typing_notifications": True,
        "user_settings_object": True,
        "include_deactivated_groups": True,
        "empty_topic_name": True,
    },
}

# GET /messages: the app always sends allow_empty_topic_name=true, the anchor as raw text
# ("newest", "oldest", "first_unread" or a message id) and the narrow as a list of
# {"operator", "operand"} objects; include_anchor only when fetching older or newer.
MESSAGE_FETCH_BATCH = 100

# The narrows of the app's message lists, by the app's name for each view, as templates:
# ``{stream}`` a channel id, ``{topic}`` a topic name, ``{message}`` a message id,
# ``{dm}`` the sorted ids of everyone in a DM conversation (self included),
# ``{keyword}`` a search keyword.
NARROWS: dict[str, list[dict[str, object]]] = {
    "combined feed": [],
    "channel": [{"operator": "channel", "operand": "{stream}"}],
    "topic": [
        {"operator": "channel", "operand": "{stream}"},
        {"operator": "topic", "operand": "{topic}"},
    ],
    "topic with message": [
        {"operator": "channel", "operand": "{stream}"},
        {"operator": "topic", "operand": "{topic}"},
        {"operator": "with", "operand": "{message}"},
    ],
    "direct messages": [{"operator": "dm", "operand": "{dm}"}],
    "mentions": [{"operator": "is", "operand": "mentioned"}],
    "starred": [{"operator": "is", "operand": "starred"}],
    "search": [{"operator": "search", "operand": "{keyword}"}],
}
# POST /users/me/presence, as the app sends it every minute.
PRESENCE_PARAMS: dict[str, object] = {
    "status": "active",
    "new_user_input": True,
    "ping_only": False,
    "slim_presence": True,
}

# "Mark as read" sends a view's narrow plus this element to POST /messages/flags/narrow.
UNREAD_ELEMENT: dict[str, object] = {"operator": "is", "operand": "unread"}

REACTION_TYPE = "enum:unicode_emoji|realm_emoji|zulip_extra_emoji"
# The flags the app can decode in an update_message event (it maps unknown flags to
# "unknown" everywhere else, but not there).
UPDATE_MESSAGE_FLAG = (
    "enum:read|starred|collapsed|mentioned|wildcard_mentioned|has_alert_word|historical|unknown"
)
MESSAGE_TYPE = "enum:stream|private|direct"

_STREAM_FIELDS: dict[str, str] = {
    "stream_id": "int",
    "name": "str",
    "is_archived": "bool?",
    "description": "str",
    "rendered_description": "str",
    "date_created": "int",
    "first_message_id": "int?",
    "invite_only": "bool",
    "is_web_public": "bool",
    "history_public_to_subscribers": "bool",
    "message_retention_days": "int?",
    "stream_post_policy": "int?",
    "folder_id": "int?",
    "can_add_subscribers_group": "group_setting?",
    "can_delete_any_message_group": "group_setting?",
    "can_delete_own_message_group": "group_setting?",
    "can_send_message_group": "group_setting?",
    "can_subscribe_group": "group_setting?",
    "is_recently_active": "bool?",
    "stream_weekly_traffic": "int?",
}

_USER_FIELDS: dict[str, str] = {
    "user_id": "int",
    "delivery_email": "str?",
    "email": "str",
    "full_name": "str",
    "date_joined": "str",
    "is_active": "bool",
    "is_bot": "bool",
    "bot_type": "int?",
    "bot_owner_id": "int?",
    "role": "int",
    "timezone": "str",
    "avatar_url": "str?",
    "avatar_version": "int",
    "profile_data": "idmap[ProfileFieldUserData]?",
    "is_system_bot": "bool?",
}

_STATUS_FIELDS: dict[str, str] = {
    "status_text": "str?",
    "emoji_name": "str?",
    "emoji_code": "str?",
    # An empty string clears the emoji.
    "reaction_type": "enum:|unicode_emoji|realm_emoji|zulip_extra_emoji?",
}

_MESSAGE_FIELDS: dict[str, str] = {
    "client": "str",
    "content": "str",
    "content_type": "str",
    "edit_history": "list[EditHistoryEntry]?",
    "id": "int",
    "is_me_message": "bool",
    # Also read by a hand-written cast when the app works out whether a message was edited.
    "last_edit_timestamp": "int!?",
    "reactions": "list[Reaction]",
    "recipient_id": "int",
    "sender_email": "str",
    "sender_full_name": "str",
    "sender_id": "int",
    "sender_realm_str": "str",
    "timestamp": "int",
    "flags": "list[str]",
    "match_content": "str?",
    "match_subject": "str?",
    "submessages": "list[Submessage]?",
    "type": "enum:stream|private",
}

MODELS: dict[str, dict[str, str]] = {
    # GET /server_settings
    "ServerSettings": {
        "authentication_methods": "map[bool]",
        "external_authentication_methods": "list[ExternalAuthenticationMethod]",
        "zulip_feature_level": "int",
        "zulip_version": "str",
        "zulip_merge_base": "str",
        "push_notifications_enabled": "bool",
        "is_incompatible": "bool",
        "email_auth_enabled": "bool",
        "require_email_format_usernames": "bool",
        "realm_uri": "url",
        "realm_name": "str",
        "realm_icon": "str",
        "realm_description": "str",
        "realm_web_public_access_enabled": "bool",
    },
    "ExternalAuthenticationMethod": {
        "name": "str",
        "display_name": "str",
        "display_icon": "str?",
        "login_url": "str",
        "signup_url": "str",
    },
    # POST /fetch_api_key
    "FetchApiKeyResult": {"api_key": "str", "email": "str", "user_id": "int?"},
    # The JSON document at server_emoji_data_url (fetched without authentication).
    "ServerEmojiData": {"code_to_names": "map[list[str]]"},
    # POST /register
    "InitialSnapshot": {
        "queue_id": "str?",
        "last_event_id": "int",
        "zulip_feature_level": "int",
        "zulip_version": "str",
        "zulip_merge_base": "str",
        "alert_words": "list[str]",
        "custom_profile_fields": "list[CustomProfileField]",
        "max_stream_name_length": "int",
        "max_topic_length": "int",
        "server_presence_ping_interval_seconds": "int",
        "server_presence_offline_threshold_seconds": "int",
        "server_typing_started_expiry_period_milliseconds": "int?",
        "server_typing_stopped_wait_period_milliseconds": "int?",
        "server_typing_started_wait_period_milliseconds": "int?",
        "muted_users": "list[MutedUserItem]",
        "presences": "idmap[PerUserPresence]",
        "realm_emoji": "map[RealmEmojiItem]",
        "realm_user_groups": "list[UserGroup]",
        "recent_private_conversations": "list[RecentDmConversation]",
        "saved_snippets": "list[SavedSnippet]?",
        "subscriptions": "list[Subscription]",
        "channel_folders": "list[ChannelFolder]?",
        "unread_msgs": "UnreadMessagesSnapshot",
        "streams": "list[ZulipStream]",
        "user_status": "idmap[UserStatusChange]",
        "user_settings": "UserSettings",
        "user_topics": "list[UserTopicItem]",
        "realm_can_delete_any_message_group": "group_setting?",
        "realm_can_delete_own_message_group": "group_setting?",
        "realm_delete_own_message_policy": "intenum:1|2|3|4|5?",
        "realm_wildcard_mention_policy": "intenum:1|2|3|5|6|7",
        "realm_mandatory_topics": "bool",
        "realm_name": "str",
        "realm_waiting_period_threshold": "int",
        "realm_message_content_delete_limit_seconds": "int?",
        "realm_allow_message_editing": "bool",
        "realm_message_content_edit_limit_seconds": "int?",
        "realm_enable_read_receipts": "bool",
        "realm_icon_url": "str",
        "realm_presence_disabled": "bool",
        "realm_default_external_accounts": "map[RealmDefaultExternalAccount]",
        "max_file_upload_size_mib": "int",
        "server_emoji_data_url": "url",
        "realm_empty_topic_display_name": "str?",
        "realm_users": "list[SnapshotUser]",
        "realm_non_active_users": "list[SnapshotUser]",
        "cross_realm_bots": "list[SnapshotUser]",
    },
    "CustomProfileField": {
        "id": "int",
        "type": "int",
        "order": "int",
        "name": "str",
        "hint": "str",
        "field_data": "str",
        "display_in_profile_summary": "bool?",
    },
    "MutedUserItem": {"id": "int"},
    "PerUserPresence": {"active_timestamp": "int", "idle_timestamp": "int"},
    "RealmEmojiItem": {
        "id": "str",
        "name": "str",
        "source_url": "str",
        "still_url": "str?",
        "deactivated": "bool",
        "author_id": "int?",
    },
    "UserGroup": {
        "id": "int",
        "members": "list[int]",
        "direct_subgroup_ids": "list[int]",
        "name": "str",
        "description": "str",
        "is_system_group": "bool",
        "deactivated": "bool?",
    },
    "RecentDmConversation": {"max_message_id": "int", "user_ids": "list[int]"},
    "SavedSnippet": {"id": "int", "title": "str", "content": "str", "date_created": "int"},
    "ZulipStream": dict(_STREAM_FIELDS),
    "Subscription": {
        **_STREAM_FIELDS,
        "desktop_notifications": "bool?",
        "email_notifications": "bool?",
        "wildcard_mentions_notify": "bool?",
        "push_notifications": "bool?",
        "audible_notifications": "bool?",
        "pin_to_top": "bool",
        "is_muted": "bool",
        "color": "color",
    },
    "ChannelFolder": {
        "id": "int",
        "name": "str",
        "order": "int?",
        "date_created": "int?",
        "creator_id": "int?",
        "description": "str",
        "rendered_description": "str",
        "is_archived": "bool",
    },
    "GroupSettingValueNameless": {"direct_members": "list[int]", "direct_subgroups": "list[int]"},
    "UnreadMessagesSnapshot": {
        "count": "int",
        "pms": "list[UnreadDmSnapshot]",
        "streams": "list[UnreadChannelSnapshot]",
        "huddles": "list[UnreadHuddleSnapshot]",
        "mentions": "list[int]",
        "old_unreads_missing": "bool",
    },
    "UnreadDmSnapshot": {"other_user_id": "int", "unread_message_ids": "list[int]"},
    "UnreadChannelSnapshot": {
        "topic": "str",
        "stream_id": "int",
        "unread_message_ids": "list[int]",
    },
    "UnreadHuddleSnapshot": {"user_ids_string": "str", "unread_message_ids": "list[int]"},
    "UserStatusChange": dict(_STATUS_FIELDS),
    "UserSettings": {
        "twenty_four_hour_time": "bool?",
        "display_emoji_reaction_users": "bool",
        "emojiset": "str",
        "presence_enabled": "bool",
    },
    "UserTopicItem": {
        "stream_id": "int",
        "topic_name": "str",
        "last_updated": "int",
        "visibility_policy": "int",
    },
    "RealmDefaultExternalAccount": {
        "name": "str",
        "text": "str",
        "hint": "str",
        "url_pattern": "str",
    },
    "User": dict(_USER_FIELDS),
    # In the three user lists of /register the app fills in a missing is_active.
    "SnapshotUser": {**_USER_FIELDS, "is_active": "bool?"},
    "ProfileFieldUserData": {"value": "str", "rendered_value": "str?"},
    # Messages (GET /messages, GET /messages/{id}, message events).
    "StreamMessage": {
        **_MESSAGE_FIELDS,
        "stream_id": "int",
        "subject": "str",
        "display_recipient": "str",
    },
    "DmMessage": {**_MESSAGE_FIELDS, "display_recipient": "list[DmRecipient]"},
    "DmRecipient": {"id": "int"},
    "EditHistoryEntry": {
        "prev_content": "str?",
        "prev_stream": "int?",
        "prev_topic": "str?",
        "topic": "str?",
    },
    "Reaction": {
        "emoji_name": "str",
        "emoji_code": "str",
        "reaction_type": REACTION_TYPE,
        "user_id": "int",
    },
    "Submessage": {"msg_type": "str", "content": "str", "sender_id": "int"},
    "GetMessagesResult": {
        "anchor": "int",
        "found_newest": "bool",
        "found_oldest": "bool",
        "found_anchor": "bool",
        "history_limited": "bool",
        "messages": "list[Message]",
    },
    "GetMessageResult": {"message": "Message"},
    "UpdateMessageFlagsForNarrowResult": {
        "processed_count": "int",
        "updated_count": "int",
        "first_processed_id": "int?",
        "last_processed_id": "int?",
        "found_oldest": "bool",
        "found_newest": "bool",
    },
    "GetEventsResult": {"events": "list[dict]", "queue_id": "str?"},
    # Results of the other requests the app reads an answer from.
    "SendMessageResult": {"id": "int"},
    "UpdateMessageFlagsResult": {"messages": "list[int]"},
    "GetReadReceiptsResult": {"user_ids": "list[int]"},
    "UploadFileResult": {"uri": "str"},
    "GetChannelTopicsResult": {"topics": "list[GetChannelTopicsEntry]"},
    "GetChannelTopicsEntry": {"max_id": "int", "name": "str"},
    "UpdatePresenceResult": {
        "presence_last_update_id": "int?",
        # Read as a floating-point number.
        "server_timestamp": "int?",
        "presences": "idmap[PerUserPresence]?",
    },
    # A 4xx answer: the app re-registers when ``code`` is BAD_EVENT_QUEUE_ID.
    "ErrorResult": {"result": "enum:error", "msg": "str", "code": "str?"},
    # Events (GET /events); every event also has EVENT_BASE.
    "RealmEmojiUpdateEvent": {"realm_emoji": "map[RealmEmojiItem]"},
    "AlertWordsEvent": {"alert_words": "list[str]"},
    "UserSettingsUpdateEvent": {"property": "str", "value": "any?"},
    "CustomProfileFieldsEvent": {"fields": "list[CustomProfileField]"},
    "UserGroupAddEvent": {"group": "UserGroup"},
    "UserGroupUpdateEvent": {"group_id": "int", "data": "UserGroupUpdateData"},
    "UserGroupUpdateData": {"name": "str?", "description": "str?", "deactivated": "bool?"},
    "UserGroupMembersEvent": {"group_id": "int", "user_ids": "list[int]"},
    "UserGroupSubgroupsEvent": {"group_id": "int", "direct_subgroup_ids": "list[int]"},
    "UserGroupRemoveEvent": {"group_id": "int"},
    "RealmUserAddEvent": {"person": "User"},
    "RealmUserRemoveEvent": {"person": "RemovedUser"},
    "RemovedUser": {"user_id": "int!"},
    "RealmUserUpdateEvent": {"person": "RealmUserUpdatePerson"},
    "RealmUserUpdatePerson": {
        "user_id": "int",
        "full_name": "str?",
        "avatar_url": "str?",
        "avatar_version": "int?",
        "timezone": "str?",
        "bot_owner_id": "int?",
        "role": "int?",
        "delivery_email": "str?",
        "custom_profile_field": "RealmUserUpdateCustomProfileField?",
        "new_email": "str?",
        "is_active": "bool?",
    },
    "RealmUserUpdateCustomProfileField": {"id": "int", "value": "str?", "rendered_value": "str?"},
    "SavedSnippetsChangeEvent": {"saved_snippet": "SavedSnippet"},
    "SavedSnippetsRemoveEvent": {"saved_snippet_id": "int"},
    "ChannelCreateEvent": {"streams": "list[ZulipStream]"},
    "ChannelDeleteEvent": {"stream_ids": "list[int!]?", "streams": "list[StreamIdItem]?"},
    "StreamIdItem": {"stream_id": "int!"},
    "ChannelUpdateEvent": {
        "stream_id": "int",
        "name": "str",
        "property": "str",
        "value": "any?",
        "rendered_description": "str?",
        "history_public_to_subscribers": "bool?",
        "is_web_public": "bool?",
    },
    "SubscriptionAddEvent": {"subscriptions": "list[Subscription]"},
    "SubscriptionRemoveEvent": {"subscriptions": "list[StreamIdItem]"},
    "SubscriptionUpdateEvent": {"stream_id": "int", "property": "str", "value": "any?"},
    "SubscriptionPeerEvent": {"stream_ids": "list[int]", "user_ids": "list[int]"},
    "ChannelFolderAddEvent": {"channel_folder": "ChannelFolder"},
    "ChannelFolderUpdateEvent": {"channel_folder_id": "int", "data": "ChannelFolderChange"},
    "ChannelFolderChange": {
        "name": "str?",
        "description": "str?",
        "rendered_description": "str?",
        "is_archived": "bool?",
    },
    "ChannelFolderReorderEvent": {"order": "list[int]"},
    "UserStatusEvent": {"user_id": "int", **_STATUS_FIELDS},
    "UserTopicEvent": {
        "stream_id": "int",
        "topic_name": "str",
        "last_updated": "int",
        "visibility_policy": "intenum:0|1|2|3",
    },
    "MutedUsersEvent": {"muted_users": "list[MutedUserItem]"},
    # The app moves the event's flags into the message before decoding the message, so the
    # test checks ``message`` merged with ``flags`` against the model "Message".
    "MessageEvent": {"message": "dict", "flags": "list[str]", "local_message_id": "str?"},
    "UpdateMessageEvent": {
        "user_id": "int?",
        "rendering_only": "bool",
        "message_id": "int",
        "message_ids": "list[int]",
        "flags": f"list[{UPDATE_MESSAGE_FLAG}]",
        "edit_timestamp": "int",
        "stream_id": "int?",
        "new_stream_id": "int?",
        "orig_subject": "str?",
        "subject": "str?",
        "propagate_mode": "enum:change_one|change_later|change_all?",
        "orig_content": "str?",
        "orig_rendered_content": "str?",
        "content": "str?",
        "rendered_content": "str?",
        "is_me_message": "bool?",
    },
    "DeleteMessageEvent": {
        "message_ids": "list[int]",
        "message_type": MESSAGE_TYPE,
        "stream_id": "int?",
        "topic": "str?",
    },
    "UpdateMessageFlagsAddEvent": {"flag": "str", "messages": "list[int]", "all": "bool"},
    "UpdateMessageFlagsRemoveEvent": {
        "flag": "str",
        "messages": "list[int]",
        "message_details": "idmap[UpdateMessageFlagsMessageDetail]?",
    },
    "UpdateMessageFlagsMessageDetail": {
        "type": MESSAGE_TYPE,
        "mentioned": "bool?",
        "user_ids": "list[int]?",
        "stream_id": "int?",
        "topic": "str?",
    },
    "SubmessageEvent": {
        "msg_type": "str",
        "content": "str",
        "message_id": "int",
        "sender_id": "int",
        "submessage_id": "int",
    },
    "TypingEvent": {
        "op": "enum:start|stop",
        "message_type": MESSAGE_TYPE,
        "sender": "TypingSender",
        "recipients": "list[TypingRecipient]?",
        "stream_id": "int?",
        "topic": "str?",
    },
    "TypingSender": {"user_id": "int"},
    "TypingRecipient": {"user_id": "int!"},
    "PresenceEvent": {
        "user_id": "int",
        "server_timestamp": "int",
        "presence": "map[PerClientPresence]",
    },
    "PerClientPresence": {
        "client": "str",
        "status": "enum:active|idle",
        "timestamp": "int",
        "pushable": "bool",
    },
    "ReactionEvent": {
        "op": "enum:add|remove",
        "emoji_name": "str",
        "emoji_code": "str",
        "reaction_type": REACTION_TYPE,
        "user_id": "int",
        "message_id": "int",
    },
    "HeartbeatEvent": {},
}

# A model whose fields depend on one key's value: the key, then model by value.
VARIANTS: dict[str, tuple[str, dict[str, str]]] = {
    "Message": ("type", {"stream": "StreamMessage", "private": "DmMessage"}),
}

# Keys the app requires only in some cases: model -> [(key, values or None, required)].
# ``values`` None means "when the key is present and not null".
REQUIRED_WHEN: dict[str, list[tuple[str, tuple[str, ...] | None, tuple[str, ...]]]] = {
    "EditHistoryEntry": [("prev_topic", None, ("topic",))],
    "DeleteMessageEvent": [("message_type", ("stream",), ("stream_id", "topic"))],
    "UpdateMessageFlagsRemoveEvent": [("flag", ("read",), ("message_details",))],
    "UpdateMessageFlagsMessageDetail": [
        ("type", ("stream",), ("stream_id", "topic")),
        ("type", ("private", "direct"), ("user_ids",)),
    ],
    "TypingEvent": [
        ("message_type", ("stream",), ("stream_id", "topic")),
        ("message_type", ("private", "direct"), ("recipients",)),
    ],
    # A move names where it came from and how far it spread.
    "UpdateMessageEvent": [("propagate_mode", None, ("stream_id", "orig_subject"))],
}

# Models that need at least one of several keys.
ANY_OF: dict[str, tuple[str, ...]] = {"ChannelDeleteEvent": ("stream_ids", "streams")}

# Keys every event has.
EVENT_BASE: dict[str, str] = {"id": "int!", "type": "str"}

# The events the app decodes: (type, op) -> model; op None for types without one.
# Every other event type (or op) the app ignores, so its shape does not matter.
EVENTS: dict[tuple[str, str | None], str] = {
    ("realm_emoji", "update"): "RealmEmojiUpdateEvent",
    ("alert_words", None): "AlertWordsEvent",
    ("user_settings", "update"): "UserSettingsUpdateEvent",
    ("custom_profile_fields", None): "CustomProfileFieldsEvent",
    ("user_group", "add"): "UserGroupAddEvent",
    ("user_group", "update"): "UserGroupUpdateEvent",
    ("user_group", "add_members"): "UserGroupMembersEvent",
    ("user_group", "remove_members"): "UserGroupMembersEvent",
    ("user_group", "add_subgroups"): "UserGroupSubgroupsEvent",
    ("user_group", "remove_subgroups"): "UserGroupSubgroupsEvent",
    ("user_group", "remove"): "UserGroupRemoveEvent",
    ("realm_user", "add"): "RealmUserAddEvent",
    ("realm_user", "remove"): "RealmUserRemoveEvent",
    ("realm_user", "update"): "RealmUserUpdateEvent",
    ("saved_snippets", "add"): "SavedSnippetsChangeEvent",
    ("saved_snippets", "update"): "SavedSnippetsChangeEvent",
    ("saved_snippets", "remove"): "SavedSnippetsRemoveEvent",
    ("stream", "create"): "ChannelCreateEvent",
    ("stream", "delete"): "ChannelDeleteEvent",
    ("stream", "update"): "ChannelUpdateEvent",
    ("subscription", "add"): "SubscriptionAddEvent",
    ("subscription", "remove"): "SubscriptionRemoveEvent",
    ("subscription", "update"): "SubscriptionUpdateEvent",
    ("subscription", "peer_add"): "SubscriptionPeerEvent",
    ("subscription", "peer_remove"): "SubscriptionPeerEvent",
    ("channel_folder", "add"): "ChannelFolderAddEvent",
    ("channel_folder", "update"): "ChannelFolderUpdateEvent",
    ("channel_folder", "reorder"): "ChannelFolderReorderEvent",
    ("user_status", None): "UserStatusEvent",
    ("user_topic", None): "UserTopicEvent",
    ("muted_users", None): "MutedUsersEvent",
    ("message", None): "MessageEvent",
    ("update_message", None): "UpdateMessageEvent",
    ("delete_message", None): "DeleteMessageEvent",
    ("update_message_flags", "add"): "UpdateMessageFlagsAddEvent",
    ("update_message_flags", "remove"): "UpdateMessageFlagsRemoveEvent",
    ("submessage", None): "SubmessageEvent",
    ("typing", "start"): "TypingEvent",
    ("typing", "stop"): "TypingEvent",
    ("presence", None): "PresenceEvent",
    ("reaction", "add"): "ReactionEvent",
    ("reaction", "remove"): "ReactionEvent",
    ("heartbeat", None): "HeartbeatEvent",
}

# Event types whose ``op`` the app reads to choose a model.
EVENTS_WITH_OP = frozenset(event_type for event_type, op in EVENTS if op is not None)

# Events the app handles that belong to features newer than feature level 372 (channel
# folders, Zulip 11): a level-372 server need not send them.
EVENTS_AFTER_372 = frozenset(
    {("channel_folder", "add"), ("channel_folder", "update"), ("channel_folder", "reorder")}
)

# The type of ``value`` in the *_update events, by ``property``; properties the app does
# not list it ignores.
VALUE_BY_PROPERTY: dict[str, dict[str, str]] = {
    "UserSettingsUpdateEvent": {
        "twenty_four_hour_time": "bool?",
        "display_emoji_reaction_users": "bool",
        "emojiset": "str",
        "presence_enabled": "bool",
    },
    "ChannelUpdateEvent": {
        "name": "str",
        "is_archived": "bool",
        "description": "str",
        "first_message_id": "int!?",
        "invite_only": "bool",
        "message_retention_days": "int!?",
        # Looked up without a fallback: an unknown policy value fails.
        "stream_post_policy": "intenum:1|2|3|4",
        "folder_id": "int!?",
        "can_add_subscribers_group": "group_setting",
        "can_delete_any_message_group": "group_setting",
        "can_delete_own_message_group": "group_setting",
        "can_send_message_group": "group_setting",
        "can_subscribe_group": "group_setting",
        "is_recently_active": "bool",
        "stream_weekly_traffic": "int!?",
    },
    "SubscriptionUpdateEvent": {
        "color": "color",
        "is_muted": "bool",
        "pin_to_top": "bool",
        "desktop_notifications": "bool",
        "audible_notifications": "bool",
        "push_notifications": "bool",
        "email_notifications": "bool",
        "wildcard_mentions_notify": "bool",
    },
}
