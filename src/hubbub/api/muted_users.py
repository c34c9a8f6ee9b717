"""``/users/me/muted_users/{muted_user_id}``: muting and unmuting users (feature level 48)."""

from __future__ import annotations

from hubbub.actions.muted_users import check_mute_user, check_unmute_user
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import PathInt


@endpoint("POST", "/users/me/muted_users/{muted_user_id:int}")
async def mute_user(req: ApiRequest, *, muted_user_id: PathInt) -> Payload:
    """Mute a user"""
    async with req.services.write() as tx:
        await check_mute_user(tx, req.me, muted_user_id, now=req.services.clock.now())
    return {}


@endpoint("DELETE", "/users/me/muted_users/{muted_user_id:int}")
async def unmute_user(req: ApiRequest, *, muted_user_id: PathInt) -> Payload:
    """Unmute a user"""
    async with req.services.write() as tx:
        await check_unmute_user(tx, req.me, muted_user_id)
    return {}
