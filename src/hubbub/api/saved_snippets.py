"""``/saved_snippets``: a user's reusable message texts (feature levels 297 and 368)."""

from __future__ import annotations

from hubbub.actions.saved_snippets import (
    check_create_saved_snippet,
    check_edit_saved_snippet,
    do_delete_saved_snippet,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import PathInt
from hubbub.queries.saved_snippets import list_saved_snippets


@endpoint("GET", "/saved_snippets")
async def get_saved_snippets(req: ApiRequest) -> Payload:
    """Get all saved snippets"""
    async with req.services.db.read() as conn:
        return {"saved_snippets": await list_saved_snippets(conn, req.me.id)}


@endpoint("POST", "/saved_snippets")
async def create_saved_snippet(req: ApiRequest, *, title: str, content: str) -> Payload:
    """Create a saved snippet"""
    async with req.services.write() as tx:
        snippet_id = await check_create_saved_snippet(
            tx, req.me, title=title, content=content, now=req.services.clock.now()
        )
    return {"saved_snippet_id": snippet_id}


@endpoint("PATCH", "/saved_snippets/{saved_snippet_id:int}")
async def edit_saved_snippet(
    req: ApiRequest,
    *,
    saved_snippet_id: PathInt,
    title: str | None = None,
    content: str | None = None,
) -> Payload:
    """Edit a saved snippet"""
    async with req.services.write() as tx:
        await check_edit_saved_snippet(tx, req.me, saved_snippet_id, title=title, content=content)
    return {}


@endpoint("DELETE", "/saved_snippets/{saved_snippet_id:int}")
async def delete_saved_snippet(req: ApiRequest, *, saved_snippet_id: PathInt) -> Payload:
    """Delete a saved snippet"""
    async with req.services.write() as tx:
        await do_delete_saved_snippet(tx, req.me, saved_snippet_id)
    return {}
