"""zulip-js, the JavaScript client from npm, against a real ``hubbub serve``.

tests/e2e/zulip_js/exercise.js makes the calls a Node integration makes (its own
multipart POST bodies and query strings, through node-fetch) and prints every response; the
test compares them with what the official Python client reads back from the server.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import zulip

from tests.e2e import third_party
from tests.e2e.client import assert_ok
from tests.e2e.conftest import HubbubServer
from tests.emoji_helpers import png_bytes

zulip_js_project = third_party.zulip_js_project_fixture

SCRIPT_TIMEOUT = 60.0
MEMBER_EMAIL = "cordelia@example.com"
STREAM = "js corner"


def _run_exercise(project: Path, server: HubbubServer) -> dict[str, Any]:
    owner = server.owner()
    node = shutil.which("node")
    assert node, "node is not on PATH"
    result = subprocess.run(
        [node, str(project / "exercise.js")],
        cwd=project,
        env=third_party.node_env(
            ZULIP_REALM=server.url,
            ZULIP_USERNAME=owner.email,
            ZULIP_API_KEY=owner.api_key,
            ZULIP_JS_STREAM=STREAM,
            ZULIP_JS_DM_TO=MEMBER_EMAIL,
        ),
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT,
        check=False,
    )
    context = (
        f"--- exercise.js stdout ---\n{result.stdout[-6000:]}\n--- stderr ---\n"
        f"{result.stderr[-4000:]}\n--- hubbub serve stderr ---\n{server.stderr()[-3000:]}"
    )
    assert result.returncode == 0, context
    summary: dict[str, Any] = json.loads(result.stdout)
    assert summary["errors"] == {}, context
    failed = {
        name: response
        for name, response in summary["responses"].items()
        if response.get("result") != "success"
    }
    assert failed == {}, context
    return summary


def test_zulip_js_against_hubbub(
    owner_client: zulip.Client,
    member_client: zulip.Client,
    zulip_js_project: Path,
    hubbub_server: HubbubServer,
    tmp_path: Path,
) -> None:
    image = tmp_path / "js_badge.png"
    image.write_bytes(png_bytes(32, 32, (0, 0, 200, 255)))
    with image.open("rb") as handle:
        assert_ok(owner_client.upload_custom_emoji("js_badge", handle))
    assert_ok(
        owner_client.add_subscriptions(
            streams=[{"name": STREAM}], principals=[hubbub_server.owner().email, MEMBER_EMAIL]
        )
    )
    earlier_dm = assert_ok(
        member_client.send_message(
            {"type": "private", "to": [hubbub_server.owner().email], "content": "hi from py"}
        )
    )["id"]

    summary = _run_exercise(zulip_js_project, hubbub_server)
    responses = summary["responses"]
    owner_profile = assert_ok(owner_client.get_profile())
    owner_id = owner_profile["user_id"]

    # Reads: the same data the official client gets.
    settings = responses["server_settings"]
    assert (settings["zulip_version"], settings["zulip_feature_level"]) == ("10.2", 372)
    assert settings["realm_uri"] == hubbub_server.url
    profile = responses["profile"]
    assert (profile["user_id"], profile["email"], profile["full_name"]) == (
        owner_id,
        owner_profile["email"],
        owner_profile["full_name"],
    )
    members = assert_ok(owner_client.get_members())["members"]
    assert responses["users"]["members"] == members
    # zulip-js listed the streams before it sent the stream's first message.
    streams = assert_ok(owner_client.get_streams())["streams"]
    assert responses["streams"]["streams"] == [{**s, "first_message_id": None} for s in streams]
    assert STREAM in [stream["name"] for stream in responses["streams"]["streams"]]
    realm_emoji = assert_ok(owner_client.get_realm_emoji())["emoji"]
    assert responses["emojis"]["emoji"] == realm_emoji
    assert [emoji["name"] for emoji in realm_emoji.values()] == ["js_badge"]

    # Writes: both messages and the reaction are on the server as zulip-js sent them.
    stream_id, dm_id = summary["sent"]["stream"], summary["sent"]["dm"]
    stream_message = assert_ok(owner_client.get_raw_message(stream_id))["message"]
    assert stream_message["content"] == "<p>Hello from <strong>zulip-js</strong></p>"
    assert (stream_message["display_recipient"], stream_message["subject"]) == (
        STREAM,
        "from zulip-js",
    )
    assert [
        (r["emoji_name"], r["emoji_code"], r["reaction_type"], r["user_id"])
        for r in stream_message["reactions"]
    ] == [("octopus", "1f419", "unicode_emoji", owner_id)]
    dm = assert_ok(member_client.get_raw_message(dm_id))["message"]
    assert dm["type"] == "private"
    assert dm["content"] == "<p>A direct message from zulip-js</p>"
    assert sorted(user["email"] for user in dm["display_recipient"]) == sorted(
        [owner_profile["email"], MEMBER_EMAIL]
    )

    # The queue zulip-js registered received both messages and the reaction, in order.
    events = summary["events"]
    assert [(e["type"], e.get("message", {}).get("id")) for e in events] == [
        ("message", stream_id),
        ("message", dm_id),
        ("reaction", None),
    ], events
    reaction = events[2]
    assert (reaction["op"], reaction["message_id"], reaction["emoji_name"]) == (
        "add",
        stream_id,
        "octopus",
    )
    # zulip-js registers without apply_markdown, so the events carry the raw Markdown.
    assert events[0]["message"]["content"] == "Hello from **zulip-js**"
    assert responses["deregister"] == {"result": "success", "msg": ""}
    gone = owner_client.get_events(queue_id=responses["register"]["queue_id"], last_event_id=-1)
    assert (gone["result"], gone["code"]) == ("error", "BAD_EVENT_QUEUE_ID"), gone

    # Narrowed fetches: the topic, and the conversation by the legacy pm_with operator.
    topic_ids = [m["id"] for m in responses["stream_narrow"]["messages"]]
    assert topic_ids == [stream_id]
    pm_ids = [m["id"] for m in responses["pm_with_narrow"]["messages"]]
    assert pm_ids == [earlier_dm, dm_id]
    assert responses["pm_with_narrow"]["found_newest"] is True
