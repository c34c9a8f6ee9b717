"""Zulip's common permission policies (``*_policy`` realm settings)."""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum

from hubbub.models import Role, User


class Policy(IntEnum):
    """Who may do something, in Zulip's numbering."""

    MEMBERS_ONLY = 1
    ADMINS_ONLY = 2
    FULL_MEMBERS_ONLY = 3
    MODERATORS_ONLY = 4
    EVERYONE = 5
    NOBODY = 6
    OWNERS_ONLY = 7


def has_policy_permission(user: User, policy: int) -> bool:
    return role_has_policy_permission(user.role, policy)


def role_has_policy_permission(role: int, policy: int) -> bool:
    """Whether ``user`` passes ``policy``.

    Full membership would also need the realm's waiting period; hubbub's default period is
    0 days, so every member is a full member (revisit when the period becomes settable).
    """
    if policy == Policy.EVERYONE:
        return True
    if policy == Policy.NOBODY:
        return False
    if policy == Policy.OWNERS_ONLY:
        return role == Role.OWNER
    if policy == Policy.ADMINS_ONLY:
        return role in (Role.OWNER, Role.ADMINISTRATOR)
    if policy == Policy.MODERATORS_ONLY:
        return role in (Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR)
    return role != Role.GUEST


def user_permission_flags(
    role: int, policy_of: Callable[[str], int], *, web_public_enabled: bool
) -> dict[str, bool]:
    """The ``can_*`` keys of /register, from a role and the realm's policies.

    ``web_public_enabled``: the server allows web-public streams and the realm has
    spectator access on; without both nobody can create one, whatever the policy."""
    public = role_has_policy_permission(role, policy_of("create_public_stream_policy"))
    private = role_has_policy_permission(role, policy_of("create_private_stream_policy"))
    return {
        "can_create_streams": public or private,
        "can_create_public_streams": public,
        "can_create_private_streams": private,
        "can_create_web_public_streams": web_public_enabled
        and role_has_policy_permission(role, policy_of("create_web_public_stream_policy")),
        "can_subscribe_other_users": role_has_policy_permission(
            role, policy_of("invite_to_stream_policy")
        ),
        "can_invite_others_to_realm": role_has_policy_permission(
            role, policy_of("invite_to_realm_policy")
        ),
    }


# Zulip's wildcard_mention_policy has its own numbering (WildcardMentionPolicyEnum).
WILDCARD_EVERYONE, WILDCARD_MEMBERS, WILDCARD_FULL_MEMBERS = 1, 2, 3
WILDCARD_STREAM_ADMINS, WILDCARD_ADMINS, WILDCARD_NOBODY, WILDCARD_MODERATORS = 4, 5, 6, 7
# Wildcard mentions reaching at most this many people are always allowed (Zulip's
# WILDCARD_MENTION_THRESHOLD).
WILDCARD_MENTION_THRESHOLD = 15


def wildcard_mention_allowed(role: int, policy: int, audience: int) -> bool:
    """Whether a user of ``role`` may use a wildcard mention that reaches ``audience``
    people (a stream's subscribers, or a topic's participants) under ``policy``."""
    if audience <= WILDCARD_MENTION_THRESHOLD or policy == WILDCARD_EVERYONE:
        return True
    if policy == WILDCARD_NOBODY:
        return False
    if policy in (WILDCARD_ADMINS, WILDCARD_STREAM_ADMINS):
        # "Stream administrators" is deprecated; Zulip treats it as organization admins.
        return role in (Role.OWNER, Role.ADMINISTRATOR)
    if policy == WILDCARD_MODERATORS:
        return role in (Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR)
    # Members and full members (every member is a full member in hubbub).
    return role != Role.GUEST
