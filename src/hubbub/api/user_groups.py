"""``/user_groups: user-defined groups, their members and subgroups``."""

from __future__ import annotations

from typing import Annotated

from hubbub.actions.user_groups import (
    check_create_user_group,
    check_delete_user_group,
    check_member_or_admin,
    check_update_group_members,
    check_update_subgroups,
    check_update_user_group,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import Param, PathInt
from hubbub.queries.user_groups import (
    access_group_by_id,
    get_group_member_ids,
    get_subgroup_ids,
    is_direct_member,
    is_user_in_group,
)
from hubbub.queries.users import access_user_by_id

# Named ``can_mention_group_id`` between feature levels 191 and 197.
MentionGroup = Annotated[int | None, Param(aliases=("can_mention_group_id",))]


@endpoint("POST", "/user_groups/create")
async def create_user_group(
    req: ApiRequest,
    *,
    name: str,
    description: str,
    # Required by the document, but Zulip 8.0's code defaults it to no members.
    members: list[int] | None = None,
    can_mention_group: MentionGroup = None,
) -> Payload:
    """Create a user group"""
    async with req.services.write() as tx:
        await check_create_user_group(
            tx,
            req.me,
            req.my_realm,
            name=name,
            description=description,
            members=members or [],
            can_mention_group_id=can_mention_group,
        )
    return {}


@endpoint("GET", "/user_groups")
async def get_user_groups(req: ApiRequest) -> Payload:
    """Get user groups"""
    check_member_or_admin(req.me)
    async with req.services.db.read() as conn:
        return {"user_groups": await req.services.people.groups(conn, req.me.realm_id)}


@endpoint("PATCH", "/user_groups/{user_group_id:int}")
async def update_user_group(
    req: ApiRequest,
    *,
    user_group_id: PathInt,
    # Both optional since feature level 165.
    name: str | None = None,
    description: str | None = None,
    can_mention_group: MentionGroup = None,
) -> Payload:
    """Update a user group"""
    async with req.services.write() as tx:
        await check_update_user_group(
            tx,
            req.me,
            req.my_realm,
            user_group_id,
            name=name,
            description=description,
            can_mention_group_id=can_mention_group,
        )
    return {}


@endpoint("DELETE", "/user_groups/{user_group_id:int}")
async def remove_user_group(req: ApiRequest, *, user_group_id: PathInt) -> Payload:
    """Delete a user group"""
    async with req.services.write() as tx:
        await check_delete_user_group(tx, req.me, req.my_realm, user_group_id)
    return {}


@endpoint("POST", "/user_groups/{user_group_id:int}/members")
async def update_user_group_members(
    req: ApiRequest,
    *,
    user_group_id: PathInt,
    delete: list[int] | None = None,
    add: list[int] | None = None,
) -> Payload:
    """Update user group members"""
    async with req.services.write() as tx:
        await check_update_group_members(
            tx, req.me, req.my_realm, user_group_id, add=add or [], delete=delete or []
        )
    return {}


@endpoint("GET", "/user_groups/{user_group_id:int}/members")
async def get_user_group_members(
    req: ApiRequest, *, user_group_id: PathInt, direct_member_only: bool = False
) -> Payload:
    """Get user group members"""
    check_member_or_admin(req.me)
    async with req.services.db.read() as conn:
        group = await access_group_by_id(conn, req.me.realm_id, user_group_id)
        members = await get_group_member_ids(
            conn, req.me.realm_id, group.id, direct_member_only=direct_member_only
        )
    return {"members": members}


@endpoint("GET", "/user_groups/{user_group_id:int}/members/{user_id:int}")
async def get_is_user_group_member(
    req: ApiRequest, *, user_group_id: PathInt, user_id: PathInt, direct_member_only: bool = False
) -> Payload:
    """Get user group membership status"""
    check_member_or_admin(req.me)
    async with req.services.db.read() as conn:
        group = await access_group_by_id(conn, req.me.realm_id, user_group_id)
        # As Zulip's access_user_by_id defaults: no deactivated users, no bots.
        target = await access_user_by_id(conn, req.me.realm_id, user_id, allow_bots=False)
        if direct_member_only:
            member = await is_direct_member(conn, target.id, group.id)
        else:
            member = await is_user_in_group(conn, req.me.realm_id, target.id, group.id)
    return {"is_user_group_member": member}


@endpoint("POST", "/user_groups/{user_group_id:int}/subgroups")
async def update_user_group_subgroups(
    req: ApiRequest,
    *,
    user_group_id: PathInt,
    delete: list[int] | None = None,
    add: list[int] | None = None,
) -> Payload:
    """Update subgroups of a user group"""
    async with req.services.write() as tx:
        await check_update_subgroups(
            tx, req.me, req.my_realm, user_group_id, add=add or [], delete=delete or []
        )
    return {}


@endpoint("GET", "/user_groups/{user_group_id:int}/subgroups")
async def get_user_group_subgroups(
    req: ApiRequest, *, user_group_id: PathInt, direct_subgroup_only: bool = False
) -> Payload:
    """Get subgroups of the user group"""
    check_member_or_admin(req.me)
    async with req.services.db.read() as conn:
        group = await access_group_by_id(conn, req.me.realm_id, user_group_id)
        subgroups = await get_subgroup_ids(
            conn, req.me.realm_id, group.id, direct_subgroup_only=direct_subgroup_only
        )
    return {"subgroups": subgroups}
