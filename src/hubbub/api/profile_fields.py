"""``/realm/profile_fields`` (custom profile fields, administrators) and
``/users/me/profile_data`` (a user's own values)."""

from __future__ import annotations

from typing import Annotated, Any

from hubbub.actions.profile_fields import (
    check_create_field,
    check_remove_profile_data,
    check_reorder_fields,
    check_update_field,
    check_update_profile_data,
    do_delete_field,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import Param, PathInt
from hubbub.api.urls import realm_url
from hubbub.errors import JsonableError, OrganizationAdminRequiredError
from hubbub.models import User
from hubbub.queries.profile_fields import list_fields


def _require_admin(user: User) -> None:
    if not user.is_realm_admin:
        raise OrganizationAdminRequiredError()


def _require_human(user: User) -> None:
    # Zulip's ``human_users_only``: bots have no profile of their own to fill in.
    if user.is_bot:
        raise JsonableError("This endpoint does not accept bot requests.")


@endpoint("GET", "/realm/profile_fields")
async def get_custom_profile_fields(req: ApiRequest) -> Payload:
    """Get all custom profile fields"""
    async with req.services.db.read() as conn:
        return {"custom_fields": await list_fields(conn, req.my_realm.id)}


@endpoint("POST", "/realm/profile_fields")
async def create_custom_profile_field(
    req: ApiRequest,
    *,
    name: str = "",
    hint: str = "",
    field_type: int,
    field_data: dict[str, Any] | None = None,
    display_in_profile_summary: bool = False,
    required: bool = False,
    editable_by_user: bool = True,
) -> Payload:
    """Create a custom profile field"""
    _require_admin(req.me)
    async with req.services.write() as tx:
        field_id = await check_create_field(
            tx,
            req.my_realm.id,
            name=name,
            hint=hint,
            field_type=field_type,
            field_data=field_data or {},
            display_in_profile_summary=display_in_profile_summary,
            required=required,
            editable_by_user=editable_by_user,
        )
    return {"id": field_id}


@endpoint("PATCH", "/realm/profile_fields")
async def reorder_custom_profile_fields(req: ApiRequest, *, order: list[int]) -> Payload:
    """Reorder custom profile fields"""
    _require_admin(req.me)
    async with req.services.write() as tx:
        await check_reorder_fields(tx, req.my_realm.id, order)
    return {}


@endpoint("PATCH", "/realm/profile_fields/{field_id:int}")
async def update_custom_profile_field(
    req: ApiRequest,
    *,
    field_id: PathInt,
    name: str | None = None,
    hint: str | None = None,
    field_data: dict[str, Any] | None = None,
    display_in_profile_summary: bool | None = None,
    required: bool | None = None,
    editable_by_user: bool | None = None,
) -> Payload:
    """Update a custom profile field (Zulip has it, its API document does not)"""
    _require_admin(req.me)
    async with req.services.write() as tx:
        await check_update_field(
            tx,
            req.my_realm.id,
            field_id,
            name=name,
            hint=hint,
            field_data=field_data,
            display_in_profile_summary=display_in_profile_summary,
            required=required,
            editable_by_user=editable_by_user,
        )
    return {}


@endpoint("DELETE", "/realm/profile_fields/{field_id:int}")
async def delete_custom_profile_field(req: ApiRequest, *, field_id: PathInt) -> Payload:
    """Delete a custom profile field and every user's value of it"""
    _require_admin(req.me)
    async with req.services.write() as tx:
        await do_delete_field(tx, req.my_realm.id, field_id)
    return {}


@endpoint("PATCH", "/users/me/profile_data")
async def update_own_profile_data(
    req: ApiRequest,
    *,
    # Zulip's name is ``data``; ``profile_data`` (the name ``PATCH /users/{id}`` uses)
    # is accepted too.
    data: Annotated[list[Any], Param(aliases=("profile_data",))],
) -> Payload:
    """Set the user's own custom profile field values"""
    _require_human(req.me)
    async with req.services.write() as tx:
        await check_update_profile_data(
            tx, req.me, data, acting_user=req.me, var_name="data", realm_url=realm_url(req)
        )
    return {}


@endpoint("DELETE", "/users/me/profile_data")
async def remove_own_profile_data(req: ApiRequest, *, data: list[int]) -> Payload:
    """Clear some of the user's own custom profile field values"""
    _require_human(req.me)
    async with req.services.write() as tx:
        await check_remove_profile_data(tx, req.me, data)
    return {}
