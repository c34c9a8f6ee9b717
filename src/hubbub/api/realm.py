"""``PATCH /realm``: organization settings (administrators; some settings owners only).

Zulip 8.0's OpenAPI document does not describe this endpoint; its parameters are the
``realm_*`` settings of ``/register`` that hubbub stores, as Zulip's ``update_realm`` takes
them. ``email_address_visibility`` is not one of them: since feature level 163 it is a user
setting with a realm default (``PATCH /realm/user_settings_defaults``), so here it is
reported in ``ignored_parameters_unsupported``. So are the Zulip 8.0 permission policies
(``create_public_stream_policy``, ``wildcard_mention_policy`` ...): Zulip 10.2 takes their
group-valued replacements instead (feature levels 264 to 352), and
``allow_edit_history``: since feature level 358 Zulip 10.2 takes
``message_edit_history_visibility_policy`` in its place and no longer reads the boolean.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field, StringConstraints

# Pydantic reads TypedDicts from typing_extensions on Python 3.11.
from typing_extensions import TypedDict

from hubbub.actions.realm_settings import check_update_realm
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import Param
from hubbub.errors import OrganizationAdminRequiredError
from hubbub.realm_settings import MAX_REALM_DESCRIPTION_LENGTH, MAX_REALM_NAME_LENGTH

RealmName = Annotated[str, StringConstraints(max_length=MAX_REALM_NAME_LENGTH)]
RealmDescription = Annotated[str, StringConstraints(max_length=MAX_REALM_DESCRIPTION_LENGTH)]
# A number of seconds, or "unlimited"; Zulip reads JSON text, and a bare "unlimited" (what
# the official client sends for a string) is accepted too. Checked in check_update_realm.
TimeLimit = Annotated[str, Param(json=False)]
# The same for a number of days (see parse_message_retention_days).
RetentionDays = Annotated[str, Param(json=False)]
NonNegative = Annotated[int, Field(ge=0)]


class AnonymousGroup(TypedDict):
    """A group-setting value's object form: these users and these groups' members."""

    direct_members: list[int]
    direct_subgroups: list[int]


class GroupSettingChange(TypedDict):
    """A change of a group-setting value (feature level 264): ``old``, when given, must be
    the current value."""

    new: int | AnonymousGroup
    old: NotRequired[int | AnonymousGroup | None]


@endpoint("PATCH", "/realm")
async def update_realm(
    req: ApiRequest,
    *,
    name: RealmName | None = None,
    description: RealmDescription | None = None,
    enable_spectator_access: bool | None = None,
    emails_restricted_to_domains: bool | None = None,
    disallow_disposable_email_addresses: bool | None = None,
    invite_required: bool | None = None,
    name_changes_disabled: bool | None = None,
    email_changes_disabled: bool | None = None,
    avatar_changes_disabled: bool | None = None,
    inline_image_preview: bool | None = None,
    inline_url_embed_preview: bool | None = None,
    message_content_delete_limit_seconds: TimeLimit | None = None,
    allow_message_editing: bool | None = None,
    mandatory_topics: bool | None = None,
    message_content_edit_limit_seconds: TimeLimit | None = None,
    # Feature level 358: "all", "moves" or "none" (plain text, checked in
    # check_update_realm with Zulip's "Invalid ..." wording).
    message_edit_history_visibility_policy: str | None = None,
    default_language: str | None = None,
    waiting_period_threshold: NonNegative | None = None,
    message_retention_days: RetentionDays | None = None,
    send_welcome_emails: bool | None = None,
    digest_emails_enabled: bool | None = None,
    message_content_allowed_in_email_notifications: bool | None = None,
    video_chat_provider: int | None = None,
    jitsi_server_url: Annotated[str, Param(json=False)] | None = None,
    giphy_rating: int | None = None,
    default_code_block_language: str | None = None,
    digest_weekday: Literal[0, 1, 2, 3, 4, 5, 6] | None = None,
    org_type: Literal[0, 10, 20, 30, 35, 40, 50, 60, 70, 80, 90, 100, 1000] | None = None,
    want_advertise_in_communities_directory: bool | None = None,
    enable_read_receipts: bool | None = None,
    move_messages_within_stream_limit_seconds: TimeLimit | None = None,
    move_messages_between_streams_limit_seconds: TimeLimit | None = None,
    enable_guest_user_indicator: bool | None = None,
    presence_disabled: bool | None = None,
    # Feature level 246.
    require_unique_names: bool | None = None,
    # Feature level 348.
    enable_guest_user_dm_warning: bool | None = None,
    # The organization's permissions (Zulip 10.0): each a change of a group-setting value.
    create_multiuse_invite_group: GroupSettingChange | None = None,
    can_access_all_users_group: GroupSettingChange | None = None,
    can_add_custom_emoji_group: GroupSettingChange | None = None,
    can_add_subscribers_group: GroupSettingChange | None = None,
    can_create_bots_group: GroupSettingChange | None = None,
    can_create_groups: GroupSettingChange | None = None,
    can_create_public_channel_group: GroupSettingChange | None = None,
    can_create_private_channel_group: GroupSettingChange | None = None,
    can_create_web_public_channel_group: GroupSettingChange | None = None,
    can_create_write_only_bots_group: GroupSettingChange | None = None,
    can_delete_any_message_group: GroupSettingChange | None = None,
    can_delete_own_message_group: GroupSettingChange | None = None,
    can_invite_users_group: GroupSettingChange | None = None,
    can_manage_all_groups: GroupSettingChange | None = None,
    can_manage_billing_group: GroupSettingChange | None = None,
    can_mention_many_users_group: GroupSettingChange | None = None,
    can_move_messages_between_channels_group: GroupSettingChange | None = None,
    can_move_messages_between_topics_group: GroupSettingChange | None = None,
    can_resolve_topics_group: GroupSettingChange | None = None,
    can_summarize_topics_group: GroupSettingChange | None = None,
    direct_message_initiator_group: GroupSettingChange | None = None,
    direct_message_permission_group: GroupSettingChange | None = None,
) -> Payload:
    """Update realm settings"""
    # Every parameter is a setting of the same name; None means "not sent".
    params: dict[str, Any] = dict(locals())
    requested = {key: value for key, value in params.items() if key != "req" and value is not None}
    if not req.me.is_realm_admin:
        raise OrganizationAdminRequiredError()
    async with req.services.write() as tx:
        data = await check_update_realm(tx, req.my_realm, req.me, requested)
    return data
