"""``/bot_storage``: the caller's own key-value store, which zulip-bots' stateful bots
(through ``Client.get_storage`` and ``update_storage``) keep their state in.

Zulip lets any authenticated user, bot or not, use it; each user sees only their own.
Zulip's OpenAPI document does not describe it (tools/api_coverage.py lists it).
"""

from __future__ import annotations

from typing import Any

from hubbub.actions.bot_storage import check_remove_storage, check_set_storage
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.queries.bot_storage import access_storage


@endpoint("GET", "/bot_storage")
async def get_bot_storage(req: ApiRequest, *, keys: list[str] | None = None) -> Payload:
    """Get bot storage"""
    async with req.services.db.read() as conn:
        return {"storage": await access_storage(conn, req.me.id, keys)}


@endpoint("PUT", "/bot_storage")
async def update_bot_storage(req: ApiRequest, *, storage: dict[str, Any]) -> Payload:
    """Update bot storage"""
    async with req.services.write() as tx:
        await check_set_storage(tx, req.me.id, storage)
    return {}


@endpoint("DELETE", "/bot_storage")
async def remove_bot_storage(req: ApiRequest, *, keys: list[str] | None = None) -> Payload:
    """Remove bot storage"""
    async with req.services.write() as tx:
        await check_remove_storage(tx, req.me.id, keys)
    return {}
