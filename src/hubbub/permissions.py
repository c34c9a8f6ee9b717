"""Zulip's common permission policies (``*_policy`` realm settings)."""

from __future__ import annotations

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
    """Whether ``user`` passes ``policy``.

    Full membership would also need the realm's waiting period; hubbub's default period is
    0 days, so every member is a full member (revisit when the period becomes settable).
    """
    role = user.role
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
