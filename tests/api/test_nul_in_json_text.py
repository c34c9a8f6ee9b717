"""A NUL character inside JSON text that an action decodes by hand (``to``, a submessage's
``content``, a time-limit setting) is refused with a 400, like every other parameter's,
and nothing is written: PostgreSQL cannot store one, and a lookup by such a name failed
with a 500 there."""

from __future__ import annotations

import pytest

from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import send_stream_message

_NUL = "\\u0000"


@pytest.mark.parametrize(
    "params",
    [
        {"type": "stream", "to": f'["Den{_NUL}mark"]', "topic": "t", "content": "x"},
        {"type": "stream", "to": f'"Den{_NUL}mark"', "topic": "t", "content": "x"},
        {"type": "private", "to": f'["ham{_NUL}let@zulip.com"]', "content": "x"},
    ],
)
async def test_send_refuses_nul_in_to(env: TestEnv, params: dict[str, str]) -> None:
    before = assert_success(await env.client("hamlet").get("/messages", _newest()))
    assert_error(
        await env.client("hamlet").post("/messages", params), "to must not contain null bytes"
    )
    after = assert_success(await env.client("hamlet").get("/messages", _newest()))
    assert after["messages"] == before["messages"]


async def test_scheduled_message_refuses_nul_in_to(env: TestEnv) -> None:
    params = {
        "type": "direct",
        "to": f'["x{_NUL}"]',
        "content": "later",
        "scheduled_delivery_timestamp": str(int(env.services.clock.now()) + 3600),
    }
    assert_error(
        await env.client("hamlet").post("/scheduled_messages", params),
        "to must not contain null bytes",
    )
    listed = assert_success(await env.client("hamlet").get("/scheduled_messages"))
    assert listed["scheduled_messages"] == []


async def test_submessage_refuses_nul_in_content(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark", "/poll Lunch?")
    assert_error(
        await env.client("hamlet").post(
            "/submessage",
            {
                "message_id": message_id,
                "msg_type": "widget",
                "content": f'{{"type": "question", "question": "a{_NUL}b"}}',
            },
        ),
        "Message must not contain null bytes",
    )


async def test_realm_time_limit_refuses_nul(env: TestEnv) -> None:
    assert_error(
        await env.client("iago").patch(
            "/realm", {"message_content_edit_limit_seconds": f'"un{_NUL}limited"'}
        ),
        "message_content_edit_limit_seconds must not contain null bytes",
    )


def _newest() -> dict[str, str]:
    return {"anchor": "newest", "num_before": "5", "num_after": "0"}
