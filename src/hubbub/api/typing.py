"""``POST /typing``: typing notifications."""

from __future__ import annotations

from typing import Literal

from hubbub.actions.typing import check_send_direct_typing, check_send_stream_typing
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.errors import JsonableError


@endpoint("POST", "/typing")
async def set_typing_status(
    req: ApiRequest,
    *,
    op: Literal["start", "stop"],
    # "private" is no longer accepted since feature level 215.
    type: Literal["direct", "stream"] = "direct",
    to: list[int] | None = None,
    stream_id: int | None = None,
    topic: str | None = None,
) -> Payload:
    """Set "typing" status"""
    async with req.services.write() as tx:
        if type == "stream":
            await check_send_stream_typing(tx, req.me, stream_id, topic, op)
        else:
            if to is None:
                raise JsonableError("Missing 'to' argument")
            await check_send_direct_typing(tx, req.me, to, op)
    return {}
