"""``verify_action``: old state + the events an action produced == a fresh /register."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

from hubbub.models import User
from hubbub.register.state import apply_event
from tests.helpers import TestEnv, assert_success

# Keys that legitimately differ between two registrations.
# ``server_timestamp`` is the time of each fetch (presence); ``presence_last_update_id``
# (feature level 263) is carried by no event, as in Zulip's own verify_action.
VOLATILE = {
    "queue_id",
    "last_event_id",
    "result",
    "msg",
    "server_timestamp",
    "presence_last_update_id",
}


def normalized(state: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in state.items() if k not in VOLATILE}
    for key in ("realm_users", "realm_non_active_users"):
        if key in out:
            out[key] = sorted(out[key], key=lambda p: p["user_id"])
    return out


async def register(env: TestEnv, user: User, **params: Any) -> dict[str, Any]:
    return assert_success(await env.client(user).post("/register", params))


def call_api(
    env: TestEnv, user: str, method: str, path: str, params: dict[str, Any] | None = None
) -> Callable[[], Awaitable[dict[str, Any]]]:
    """An action for ``verify_action``: ``method path`` with ``params`` as ``user``, which
    must succeed; the action returns the success body."""

    async def action() -> dict[str, Any]:
        return assert_success(await env.client(user).request(method.upper(), path, params))

    return action


async def verify_action(
    env: TestEnv,
    user: User,
    action: Callable[[], Awaitable[object]],
    *,
    num_events: int | None = None,
    **register_params: Any,
) -> list[dict[str, Any]]:
    """Run ``action``; check the events it sends ``user`` turn the old state into the new."""
    before = await register(env, user, **register_params)
    await action()
    events = await env.events(user, before)
    if num_events is not None:
        assert len(events) == num_events, events
    state = copy.deepcopy(before)
    for event in events:
        apply_event(
            state, event, include_subscribers=bool(register_params.get("include_subscribers"))
        )
    after = await register(env, user, **register_params)
    old, new = normalized(state), normalized(after)
    # Compare key by key so a failure names the state that went wrong.
    differing = {
        k: (old.get(k), new.get(k)) for k in old.keys() | new.keys() if old.get(k) != new.get(k)
    }
    assert not differing, (events, differing)
    return events
