"""/register state for the organization's edit-history visibility (feature level 358).

``realm_message_edit_history_visibility_policy`` replaced the ``allow_edit_history``
boolean, which Zulip 10.2 still sends (true unless the policy is "none") for clients that
predate the change. Both are read through ``message_edit_history_policy``, so a realm that
stored only the old boolean shows the matching policy, and one event keeps both current.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.realm_settings import message_edit_history_policy
from hubbub.register.context import StateContext

_POLICY_KEY = "realm_message_edit_history_visibility_policy"


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    if not ctx.wanted("realm"):
        return {}
    policy = message_edit_history_policy(ctx.realm)
    return {_POLICY_KEY: policy, "realm_allow_edit_history": policy != "none"}


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """The ``realm`` update of the policy sets both keys."""
    if not (
        event["type"] == "realm"
        and event.get("op") == "update"
        and event.get("property") == "message_edit_history_visibility_policy"
    ):
        return False
    if _POLICY_KEY in state:
        state[_POLICY_KEY] = event["value"]
        state["realm_allow_edit_history"] = event["value"] != "none"
    return True
