"""``/user_groups: user-defined groups, their members and subgroups``."""

from __future__ import annotations

from typing import Annotated

from hubbub.actions.group_setting_values import parse_group_setting_value
from hubbub.actions.user_group_edit import (
    check_create_user_group,
    check_deactivate_user_group,
    check_update_group_members,
    check_update_subgroups,
    check_update_user_group,
)
from hubbub.actions.user_groups import check_member_or_admin
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import Param, PathInt
from hubbub.api.realm import AnonymousGroup, GroupSettingChange
from hubbub.queries.user_groups import (
    access_group_by_id,
    get_group_member_ids,
    get_subgroup_ids,
    is_direct_member,
    is_user_in_group,
)
from hubbub.queries.users import access_user_by_id
from hubbub.realm_group_settings import GroupSettingValue

# A group-setting value at creation: a group id or an anonymous group. The mention
# setting was named ``can_mention_group_id`` between feature levels 191 and 197.
SettingValue = int | AnonymousGroup
MentionValue = Annotated[SettingValue | None, Param(aliases=("can_mention_group_id",))]
# A change of one (feature level 258 onwards): ``{"new", "old"}``. A bare value is taken as
# ``new`` for clients older than that, which sent the mention group's id alone.
SettingChange = GroupSettingChange | int
MentionChange = Annotated[SettingChange | None, Param(aliases=("can_mention_group_id",))]


def _value(value: SettingValue) -> GroupSettingValue:
    parsed = parse_group_setting_value(value)
    assert parsed is not None
    return parsed


def _change(change: SettingChange) -> tuple[GroupSettingValue, GroupSettingValue | None]:
    if isinstance(change, int):
        return change, None
    return _value(change["new"]), parse_group_setting_value(change.get("old"))


@endpoint("POST", "/user_groups/create")
async def create_user_group(
    req: ApiRequest,
    *,
    name: str,
    description: str,
    # Required by the document, but Zulip's code defaults it to no members.
    members: list[int] | None = None,
    # Feature level 311.
    subgroups: list[int] | None = None,
    can_add_members_group: SettingValue | None = None,
    can_join_group: SettingValue | None = None,
    can_leave_group: SettingValue | None = None,
    can_manage_group: SettingValue | None = None,
    can_mention_group: MentionValue = None,
    can_remove_members_group: SettingValue | None = None,
) -> Payload:
    """Create a user group"""
    given = {
        "can_add_members_group": can_add_members_group,
        "can_join_group": can_join_group,
        "can_leave_group": can_leave_group,
        "can_manage_group": can_manage_group,
        "can_mention_group": can_mention_group,
        "can_remove_members_group": can_remove_members_group,
    }
    async with req.services.write() as tx:
        await check_create_user_group(
            tx,
            req.me,
            req.my_realm,
            name=name,
            description=description,
            members=members or [],
            subgroups=subgroups or [],
            settings={k: _value(v) for k, v in given.items() if v is not None},
            now=req.services.clock.now(),
        )
    return {}


@endpoint("GET", "/user_groups")
async def get_user_groups(req: ApiRequest, *, include_deactivated_groups: bool = False) -> Payload:
    """Get user groups"""
    check_member_or_admin(req.me)
    async with req.services.db.read() as conn:
        groups = await req.services.people.groups(conn, req.me.realm_id)
    if not include_deactivated_groups:
        # Feature level 294: deactivated groups only when asked for.
        groups = [g for g in groups if not g["deactivated"]]
    return {"user_groups": groups}


@endpoint("PATCH", "/user_groups/{user_group_id:int}")
async def update_user_group(
    req: ApiRequest,
    *,
    user_group_id: PathInt,
    # Both optional since feature level 165.
    name: str | None = None,
    description: str | None = None,
    can_add_members_group: SettingChange | None = None,
    can_join_group: SettingChange | None = None,
    can_leave_group: SettingChange | None = None,
    can_manage_group: SettingChange | None = None,
    can_mention_group: MentionChange = None,
    can_remove_members_group: SettingChange | None = None,
) -> Payload:
    """Update a user group"""
    given = {
        "can_add_members_group": can_add_members_group,
        "can_join_group": can_join_group,
        "can_leave_group": can_leave_group,
        "can_manage_group": can_manage_group,
        "can_mention_group": can_mention_group,
        "can_remove_members_group": can_remove_members_group,
    }
    async with req.services.write() as tx:
        await check_update_user_group(
            tx,
            req.me,
            req.my_realm,
            user_group_id,
            name=name,
            description=description,
            settings={k: _change(v) for k, v in given.items() if v is not None},
        )
    return {}


# DELETE /user_groups/{id} went at feature level 294: groups are deactivated instead.
@endpoint("POST", "/user_groups/{user_group_id:int}/deactivate")
async def deactivate_user_group(req: ApiRequest, *, user_group_id: PathInt) -> Payload:
    """Deactivate a user group"""
    async with req.services.write() as tx:
        await check_deactivate_user_group(tx, req.me, req.my_realm, user_group_id)
    return {}


@endpoint("POST", "/user_groups/{user_group_id:int}/members")
async def update_user_group_members(
    req: ApiRequest,
    *,
    user_group_id: PathInt,
    delete: list[int] | None = None,
    add: list[int] | None = None,
    # Feature level 311.
    delete_subgroups: list[int] | None = None,
    add_subgroups: list[int] | None = None,
) -> Payload:
    """Update user group members"""
    async with req.services.write() as tx:
        await check_update_group_members(
            tx,
            req.me,
            req.my_realm,
            user_group_id,
            add=add or [],
            delete=delete or [],
            add_subgroups=add_subgroups or [],
            delete_subgroups=delete_subgroups or [],
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
