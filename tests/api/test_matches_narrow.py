"""``GET /messages/matches_narrow``."""

from __future__ import annotations

from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import send_direct_message, send_stream_message


async def test_only_matching_received_messages(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Verona")
    await env.subscribe("othello", "Verona")
    lunch = await send_stream_message(env, "othello", "Verona", "Lunch <soon>", topic="food")
    other = await send_stream_message(env, "othello", "Verona", "work", topic="a<b")
    dm = await send_direct_message(env, "othello", ["hamlet"], "lunch?")
    client = env.client("hamlet")
    body = assert_success(
        await client.get(
            "/messages/matches_narrow",
            {"msg_ids": [lunch, other, dm], "narrow": [["stream", "Verona"]]},
        )
    )
    assert body["messages"] == {
        str(lunch): {"match_content": "<p>Lunch &lt;soon&gt;</p>", "match_subject": "food"},
        str(other): {"match_content": "<p>work</p>", "match_subject": "a&lt;b"},
    }
    body = assert_success(
        await client.get(
            "/messages/matches_narrow",
            {"msg_ids": [lunch, other, dm], "narrow": [{"operator": "search", "operand": "lunch"}]},
        )
    )
    assert body["messages"] == {
        str(lunch): {
            "match_content": '<p><span class="highlight">Lunch</span> &lt;soon&gt;</p>',
            "match_subject": "food",
        },
        str(dm): {
            "match_content": '<p><span class="highlight">lunch</span>?</p>',
            "match_subject": "",
        },
    }
    # Stream history the user never received is not matched (as Zulip).
    body = assert_success(
        await env.client("iago").get(
            "/messages/matches_narrow", {"msg_ids": [lunch], "narrow": [["stream", "Verona"]]}
        )
    )
    assert body["messages"] == {}


async def test_errors(env: TestEnv) -> None:
    client = env.client("hamlet")
    assert_error(
        await client.get("/messages/matches_narrow", {"msg_ids": [1]}),
        "Missing 'narrow' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await client.get(
            "/messages/matches_narrow", {"msg_ids": [1], "narrow": [["is", "nothing"]]}
        ),
        "Invalid narrow operator: unknown 'is' operand nothing",
        code="BAD_NARROW",
    )
