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


def user_permission_flags(role: int, policy_of: Callable[[str], int]) -> dict[str, bool]:
    """The ``can_*`` keys of /register, from a role and the realm's policies."""
    public = role_has_policy_permission(role, policy_of("create_public_stream_policy"))
    private = role_has_policy_permission(role, policy_of("create_private_stream_policy"))
    return {
        "can_create_streams": public or private,
        "can_create_public_streams": public,
        "can_create_private_streams": private,
        "can_create_web_public_streams": role_has_policy_permission(
            role, policy_of("create_web_public_stream_policy")
        ),
        "can_subscribe_other_users": role_has_policy_permission(
            role, policy_of("invite_to_stream_policy")
        ),
        "can_invite_others_to_realm": role_has_policy_permission(
            role, policy_of("invite_to_realm_policy")
        ),
    }
