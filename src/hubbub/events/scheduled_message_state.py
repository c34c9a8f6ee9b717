"""Placeholder: filled in by issue 8 (``scheduled_messages`` state)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.events.context import StateContext


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    return {}


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    return False
