"""``realm_user_groups`` in /register state and how ``user_group`` events update it.

Deactivated groups (feature level 290) are in the list only for clients with the
``include_deactivated_groups`` capability (feature level 294); the others learn of a
deactivation as the group's removal (``actions/user_group_edit.py``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.register.context import StateContext


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    if ctx.wanted("realm_user_groups") or ctx.wanted("user_group"):
        groups = await ctx.people.groups(conn, ctx.me.realm_id)
        if not ctx.client_capabilities.get("include_deactivated_groups"):
            groups = [g for g in groups if not g["deactivated"]]
        return {"realm_user_groups": groups}
    return {}


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    if event["type"] != "user_group":
        return False
    if "realm_user_groups" not in state:
        return True
    groups: list[dict[str, Any]] = state["realm_user_groups"]
    op = event["op"]
    if op == "add":
        groups.append(event["group"])
        groups.sort(key=lambda g: g["id"])
        return True
    if op == "remove":
        state["realm_user_groups"] = [g for g in groups if g["id"] != event["group_id"]]
        return True
    for group in groups:
        if group["id"] != event["group_id"]:
            continue
        if op == "update":
            group.update(event["data"])
        elif op == "add_members":
            group["members"] = sorted(set(group["members"]) | set(event["user_ids"]))
        elif op == "remove_members":
            group["members"] = sorted(set(group["members"]) - set(event["user_ids"]))
        elif op == "add_subgroups":
            subgroups = set(group["direct_subgroup_ids"]) | set(event["direct_subgroup_ids"])
            group["direct_subgroup_ids"] = sorted(subgroups)
        elif op == "remove_subgroups":
            subgroups = set(group["direct_subgroup_ids"]) - set(event["direct_subgroup_ids"])
            group["direct_subgroup_ids"] = sorted(subgroups)
    return True
