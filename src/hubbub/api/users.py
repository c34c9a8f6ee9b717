"""``/users``: list, fetch, create, update, deactivate and reactivate users."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import StringConstraints
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.profile_fields import check_update_profile_data
from hubbub.actions.unique_names import check_unique_full_name
from hubbub.actions.users import (
    check_change_role,
    check_create_user,
    check_deactivate_own_user,
    check_deactivate_user,
    check_full_name,
    do_change_full_name,
    do_reactivate_user,
    do_regenerate_api_key,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import PathInt, PathStr
from hubbub.api.urls import realm_url
from hubbub.errors import JsonableError, OrganizationAdminRequiredError
from hubbub.models import Role, User
from hubbub.queries.user_dicts import get_user_dicts
from hubbub.queries.user_status import get_user_status_for
from hubbub.queries.users import access_user_by_email_for, access_user_by_id
from hubbub.transaction import Tx

MAX_DEACTIVATION_COMMENT = 2000


def require_admin(user: User) -> None:
    if not user.is_realm_admin:
        raise JsonableError("Insufficient permission")


async def _user_payload(
    conn: AsyncConnection,
    req: ApiRequest,
    target: User,
    *,
    client_gravatar: bool,
    include_custom_profile_fields: bool,
) -> dict[str, Any]:
    [user_dict] = await get_user_dicts(
        conn,
        [target],
        req.me,
        client_gravatar=client_gravatar,
        include_custom_profile_fields=include_custom_profile_fields,
    )
    return user_dict


@endpoint("GET", "/users")
async def get_members(
    req: ApiRequest, *, client_gravatar: bool = True, include_custom_profile_fields: bool = False
) -> Payload:
    """Get all users"""
    async with req.services.db.read() as conn:
        users = await req.services.people.users(conn, req.my_realm.id)
        members = await get_user_dicts(
            conn,
            users,
            req.me,
            client_gravatar=client_gravatar,
            include_custom_profile_fields=include_custom_profile_fields,
        )
    return {"members": members}


@endpoint("GET", "/users/me", reads=True)
async def get_own_user(req: ApiRequest) -> Payload:
    """Get own user"""
    from hubbub.queries.messages import max_message_id_for_user

    # The caller as the request's transaction found them: their row, read once.
    conn = req.read_conn
    result = await _user_payload(
        conn, req, req.me, client_gravatar=False, include_custom_profile_fields=True
    )
    # Deprecated, kept for old clients: the newest message id the user received (or -1).
    result["max_message_id"] = await max_message_id_for_user(conn, req.me.id)
    return result


@endpoint("GET", "/users/{user_id:int}")
async def get_user(
    req: ApiRequest,
    *,
    user_id: PathInt,
    client_gravatar: bool = True,
    include_custom_profile_fields: bool = False,
) -> Payload:
    """Get a user"""
    async with req.services.db.read() as conn:
        target = await access_user_by_id(conn, req.my_realm.id, user_id, allow_deactivated=True)
        user = await _user_payload(
            conn,
            req,
            target,
            client_gravatar=client_gravatar,
            include_custom_profile_fields=include_custom_profile_fields,
        )
    return {"user": user}


@endpoint("GET", "/users/{email}")
async def get_user_by_email(
    req: ApiRequest,
    *,
    email: PathStr,
    client_gravatar: bool = True,
    include_custom_profile_fields: bool = False,
) -> Payload:
    """Get a user by email (feature level 39): by the address the API shows, or by the
    real one where the caller may see it (feature level 302)"""
    async with req.services.db.read() as conn:
        target = await access_user_by_email_for(conn, req.me, email)
        user = await _user_payload(
            conn,
            req,
            target,
            client_gravatar=client_gravatar,
            include_custom_profile_fields=include_custom_profile_fields,
        )
    return {"user": user}


@endpoint("POST", "/users")
async def create_user(req: ApiRequest, *, email: str, password: str, full_name: str) -> Payload:
    """Create a user"""
    # Zulip also requires a server-granted can_create_users flag; hubbub lets every
    # administrator create users (docs/compatibility.md).
    if not req.me.is_realm_admin:
        raise OrganizationAdminRequiredError()
    async with req.services.write() as tx:
        user = await check_create_user(
            tx,
            req.my_realm,
            email=email,
            full_name=full_name,
            password=password,
            now=req.services.clock.now(),
        )
    return {"user_id": user.id}


RoleValue = Literal[100, 200, 300, 400, 600]


async def _update_user(
    tx: Tx,
    req: ApiRequest,
    target: User,
    *,
    full_name: str | None,
    role: RoleValue | None,
    profile_data: list[dict[str, Any]] | None,
) -> None:
    # Administrators edit anyone; a bot's owner may edit the bot.
    if not req.me.is_realm_admin and not (target.is_bot and target.bot_owner_id == req.me.id):
        raise JsonableError("Insufficient permission")
    if role is not None:
        await check_change_role(tx, req.me, target, Role(role))
    # Zulip ignores an empty or unchanged name rather than failing.
    if full_name is not None and full_name.strip() and full_name.strip() != target.full_name:
        name = check_full_name(full_name)
        await check_unique_full_name(tx.conn, target.realm_id, name, user_id=target.id)
        await do_change_full_name(tx, target, name)
    if profile_data is not None:
        await check_update_profile_data(
            tx, target, profile_data, acting_user=req.me, realm_url=realm_url(req)
        )


# ``new_email`` (feature level 313) is not taken: Zulip grants it only to administrators
# with the server-granted ``can_change_user_emails`` permission, which hubbub has not.
@endpoint("PATCH", "/users/{user_id:int}")
async def update_user(
    req: ApiRequest,
    *,
    user_id: PathInt,
    full_name: str | None = None,
    role: RoleValue | None = None,
    profile_data: list[dict[str, Any]] | None = None,
) -> Payload:
    """Update a user"""
    async with req.services.write() as tx:
        target = await access_user_by_id(tx.conn, req.my_realm.id, user_id, allow_deactivated=True)
        await _update_user(
            tx, req, target, full_name=full_name, role=role, profile_data=profile_data
        )
    return {}


@endpoint("PATCH", "/users/{email}")
async def update_user_by_email(
    req: ApiRequest,
    *,
    email: PathStr,
    full_name: str | None = None,
    role: RoleValue | None = None,
    profile_data: list[dict[str, Any]] | None = None,
) -> Payload:
    """Update a user by email (feature level 313): the user is found as ``GET
    /users/{email}`` finds them"""
    async with req.services.write() as tx:
        target = await access_user_by_email_for(tx.conn, req.me, email)
        await _update_user(
            tx, req, target, full_name=full_name, role=role, profile_data=profile_data
        )
    return {}


@endpoint("GET", "/users/{user_id:int}/status")
async def get_user_status(req: ApiRequest, *, user_id: PathInt) -> Payload:
    """Get a user's status (feature level 262)"""
    async with req.services.db.read() as conn:
        # As Zulip: bots have no status ("No such user"), nor do deactivated users.
        target = await access_user_by_id(conn, req.my_realm.id, user_id, allow_bots=False)
        status = await get_user_status_for(conn, target)
    return {"status": status}


@endpoint("DELETE", "/users/{user_id:int}")
async def deactivate_user(
    req: ApiRequest,
    *,
    user_id: PathInt,
    deactivation_notification_comment: Annotated[
        str, StringConstraints(max_length=MAX_DEACTIVATION_COMMENT)
    ]
    | None = None,
) -> Payload:
    """Deactivate a user"""
    require_admin(req.me)
    async with req.services.write() as tx:
        target = await access_user_by_id(tx.conn, req.my_realm.id, user_id, allow_bots=False)
        await check_deactivate_user(tx, req.me, target)
    # hubbub sends no email; the comment Zulip would mail to the user is accepted and dropped.
    del deactivation_notification_comment
    return {}


@endpoint("DELETE", "/users/me")
async def deactivate_own_user(req: ApiRequest) -> Payload:
    """Deactivate own user"""
    async with req.services.write() as tx:
        me = await access_user_by_id(tx.conn, req.my_realm.id, req.me.id)
        await check_deactivate_own_user(tx, me)
    return {}


@endpoint("POST", "/users/{user_id:int}/reactivate")
async def reactivate_user(req: ApiRequest, *, user_id: PathInt) -> Payload:
    """Reactivate a user"""
    require_admin(req.me)
    async with req.services.write() as tx:
        target = await access_user_by_id(tx.conn, req.my_realm.id, user_id, allow_deactivated=True)
        # Reactivating an active user is a no-op success, as in Zulip.
        await do_reactivate_user(tx, target)
    return {}


@endpoint("POST", "/users/me/api_key/regenerate")
async def regenerate_api_key(req: ApiRequest) -> Payload:
    """Replace the caller's API key (Zulip's web app "Generate new API key")"""
    async with req.services.write() as tx:
        api_key = await do_regenerate_api_key(tx, req.me)
    return {"api_key": api_key}
