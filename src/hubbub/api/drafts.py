"""``/drafts``: server-stored message drafts (feature level 87)."""

from __future__ import annotations

from typing import Any

from hubbub.actions.drafts import (
    check_drafts_enabled,
    do_create_drafts,
    do_delete_draft,
    do_edit_draft,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import PathInt
from hubbub.queries.drafts import list_drafts


@endpoint("GET", "/drafts")
async def get_drafts(req: ApiRequest) -> Payload:
    """Get drafts"""
    async with req.services.db.read() as conn:
        await check_drafts_enabled(conn, req.me)
        drafts = await list_drafts(conn, req.me.id)
    return {"count": len(drafts), "drafts": drafts}


@endpoint("POST", "/drafts")
async def create_drafts(req: ApiRequest, *, drafts: list[Any]) -> Payload:
    """Create drafts"""
    async with req.services.write() as tx:
        ids = await do_create_drafts(tx, req.me, drafts, now=req.services.clock.now())
    return {"ids": ids}


@endpoint("PATCH", "/drafts/{draft_id:int}")
async def edit_draft(req: ApiRequest, *, draft_id: PathInt, draft: Any) -> Payload:
    """Edit a draft"""
    async with req.services.write() as tx:
        await do_edit_draft(tx, req.me, draft_id, draft, now=req.services.clock.now())
    return {}


@endpoint("DELETE", "/drafts/{draft_id:int}")
async def delete_draft(req: ApiRequest, *, draft_id: PathInt) -> Payload:
    """Delete a draft"""
    async with req.services.write() as tx:
        await do_delete_draft(tx, req.me, draft_id)
    return {}
