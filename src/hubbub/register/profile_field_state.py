"""/register state for custom_profile_fields and custom_profile_field_types, and how the
``custom_profile_fields`` event updates it."""

from __future__ import annotations

import copy
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.queries.profile_fields import FIELD_TYPE_CATALOGUE, list_fields
from hubbub.register.context import StateContext


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    if not ctx.wanted("custom_profile_fields"):
        return {}
    return {
        "custom_profile_fields": await list_fields(conn, ctx.realm.id),
        "custom_profile_field_types": copy.deepcopy(FIELD_TYPE_CATALOGUE),
    }


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """Apply one event; False when it is not one of this part's event types."""
    if event["type"] != "custom_profile_fields":
        return False
    fields = event["fields"]
    if "custom_profile_fields" in state:
        state["custom_profile_fields"] = copy.deepcopy(fields)
    # A deleted field takes its values with it and Zulip sends no per-user event for
    # that: drop the ids that left the list from every person's profile_data, as
    # Zulip's own apply_event does.
    known = {str(field["id"]) for field in fields}
    for key in ("realm_users", "realm_non_active_users"):
        for person in state.get(key, []):
            data = person.get("profile_data")
            if data:
                for field_id in [f for f in data if f not in known]:
                    del data[field_id]
    return True
