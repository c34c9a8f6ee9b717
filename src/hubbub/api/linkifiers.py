"""``/realm/filters`` and ``/realm/linkifiers``: a realm's linkifiers.

Anyone may list them; adding, changing, removing and reordering need an administrator.
The legacy ``url_format_string`` parameter (before feature level 176) is not accepted:
Zulip 8.0 only takes ``url_template``.
"""

from __future__ import annotations

from hubbub.actions.linkifiers import (
    check_add_linkifier,
    check_remove_linkifier,
    check_reorder_linkifiers,
    check_update_linkifier,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import PathInt
from hubbub.errors import OrganizationAdminRequiredError
from hubbub.models import User
from hubbub.queries.linkifiers import linkifiers_for_realm


def _require_admin(user: User) -> None:
    if not user.is_realm_admin:
        raise OrganizationAdminRequiredError()


@endpoint("GET", "/realm/linkifiers")
async def list_linkifiers(req: ApiRequest) -> Payload:
    """Get linkifiers"""
    async with req.services.db.read() as conn:
        return {"linkifiers": await linkifiers_for_realm(conn, req.me.realm_id)}


@endpoint("PATCH", "/realm/linkifiers")
async def reorder_linkifiers(req: ApiRequest, *, ordered_linkifier_ids: list[int]) -> Payload:
    """Reorder all linkifiers"""
    _require_admin(req.me)
    async with req.services.write() as tx:
        await check_reorder_linkifiers(tx, req.me.realm_id, ordered_linkifier_ids)
    return {}


@endpoint("POST", "/realm/filters")
async def add_linkifier(req: ApiRequest, *, pattern: str, url_template: str) -> Payload:
    """Add a linkifier"""
    _require_admin(req.me)
    async with req.services.write() as tx:
        linkifier_id = await check_add_linkifier(tx, req.me.realm_id, pattern, url_template)
    return {"id": linkifier_id}


@endpoint("PATCH", "/realm/filters/{filter_id:int}")
async def update_linkifier(
    req: ApiRequest, *, filter_id: PathInt, pattern: str, url_template: str
) -> Payload:
    """Update a linkifier"""
    _require_admin(req.me)
    async with req.services.write() as tx:
        await check_update_linkifier(tx, req.me.realm_id, filter_id, pattern, url_template)
    return {}


@endpoint("DELETE", "/realm/filters/{filter_id:int}")
async def remove_linkifier(req: ApiRequest, *, filter_id: PathInt) -> Payload:
    """Remove a linkifier"""
    _require_admin(req.me)
    async with req.services.write() as tx:
        await check_remove_linkifier(tx, req.me.realm_id, filter_id)
    return {}
