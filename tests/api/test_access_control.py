"""Who may see and do what, as one table: every actor of ``tests/access_table.py`` against
every object, over each read and write endpoint that touches messages and files. Each
cell's outcome is compared with the hand-written table; the test fails listing every cell
that differs, so a leak (or a wrong denial) names the actor, the object and the endpoint.

Denials are Zulip's: "Invalid message(s)" whether the message exists or not (ids do not
leak), 401 ``USER_DEACTIVATED`` for the deactivated member, 401 ``UNAUTHORIZED`` for a
spectator (Zulip 8.0 serves spectators only through its web app's ``/json`` routes; the
API needs credentials), and a user of another organization is a stranger to every id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from tests.access_table import (
    MEMBERS,
    OBJECTS,
    READERS,
    READERS_LATER,
    RECEIVED,
    STREAM_OF,
    WORD,
    World,
    build_world,
)
from tests.group_settings_helpers import set_group_setting
from tests.helpers import TestEnv, assert_success

ACTORS = (*MEMBERS, "king", "zoe", "spectator")
ADMINS = ("desdemona", "iago")
NOT_LOGGED_IN = "401 UNAUTHORIZED Not logged in: API authentication or user session required"
DEACTIVATED = "401 USER_DEACTIVATED Account is deactivated"
OK = "ok"


def outcome(response: httpx.Response) -> str:
    body = response.json()
    if response.status_code == 200 and body.get("result") == "success":
        return OK
    return f"{response.status_code} {body.get('code')} {body.get('msg')}"


def denied(actor: str, msg: str = "Invalid message(s)") -> str:
    """What ``actor`` is told when refused: credentials come before the object."""
    if actor == "king":
        return DEACTIVATED
    if actor == "spectator":
        return NOT_LOGGED_IN
    return f"400 BAD_REQUEST {msg}"


class Table:
    """Collects every cell whose outcome differs from the expected one."""

    def __init__(self) -> None:
        self.wrong: list[str] = []
        self.cells = 0

    def check(self, where: str, got: str, expected: str) -> None:
        self.cells += 1
        if got != expected:
            self.wrong.append(f"{where}: expected {expected!r}, got {got!r}")

    def assert_clean(self, at_least: int) -> None:
        assert not self.wrong, "\n".join(self.wrong)
        assert self.cells >= at_least


async def for_each_cell(
    world: World,
    table: Table,
    name: str,
    call: Callable[[str, str], Awaitable[httpx.Response]],
    expected: Callable[[str, str], str],
) -> None:
    for actor in ACTORS:
        for obj in OBJECTS:
            got = outcome(await call(actor, obj))
            table.check(f"{actor} {name} {obj}", got, expected(actor, obj))


def reads(actor: str, obj: str) -> str:
    return OK if actor in READERS[obj] else denied(actor)


async def test_messages_by_id_history_and_receipts(env: TestEnv) -> None:
    world = await build_world(env)
    table = Table()

    async def by_id(actor: str, obj: str) -> httpx.Response:
        response = await world.client(actor).get(f"/messages/{world.ids[obj]}")
        if response.status_code == 200:
            # A message read without having received it is marked historical.
            flags = response.json()["message"]["flags"]
            table.check(
                f"{actor} historical flag {obj}",
                str("historical" in flags),
                str(actor not in RECEIVED[obj]),
            )
        return response

    await for_each_cell(world, table, "GET /messages/{id}", by_id, reads)

    async def history(actor: str, obj: str) -> httpx.Response:
        return await world.client(actor).get(f"/messages/{world.ids[obj]}/history")

    await for_each_cell(world, table, "history", history, reads)

    async def receipts(actor: str, obj: str) -> httpx.Response:
        return await world.client(actor).get(f"/messages/{world.ids[obj]}/read_receipts")

    await for_each_cell(world, table, "read_receipts", receipts, reads)
    table.assert_clean(len(ACTORS) * len(OBJECTS) * 3)


async def test_stream_topics(env: TestEnv) -> None:
    world = await build_world(env)
    table = Table()
    stream_ids = {}
    for obj, name in STREAM_OF.items():
        found = assert_success(await env.client("hamlet").get("/get_stream_id", {"stream": name}))
        stream_ids[obj] = found["stream_id"]
    # Subscribed to the protected stream after its message: the stream, but no topic.
    subscribers = {**READERS, "protected": READERS["protected"] | {"othello"}}
    for actor in ACTORS:
        for obj in STREAM_OF:
            response = await world.client(actor).get(f"/users/me/{stream_ids[obj]}/topics")
            got = outcome(response)
            if got == OK:
                got = str([t["name"] for t in response.json()["topics"]])
            if actor in ("king", "spectator"):
                expected = denied(actor)
            elif actor in READERS[obj]:
                expected = str(["t"])
            elif actor in subscribers[obj]:
                expected = str([])
            else:
                expected = denied(actor, "Invalid stream ID")
            table.check(f"{actor} topics {obj}", got, expected)
    table.assert_clean(len(ACTORS) * len(STREAM_OF))


async def _fetch(world: World, actor: str, narrow: list[dict[str, Any]], **by_id: Any) -> Any:
    """The ids ``GET /messages`` returns (newest 100), or the refusal. ``message_ids``
    replaces the anchor parameters."""
    params = by_id or {"anchor": "newest", "num_before": 100, "num_after": 0}
    params["narrow"] = narrow
    response = await world.client(actor).get("/messages", params)
    if response.status_code != 200:
        return outcome(response)
    return sorted(m["id"] for m in response.json()["messages"])


def _seen(actor: str, value: Any) -> str:
    """What a fetch should show ``actor``: ``value``; nothing to a stranger of another
    organization; a refusal to those without a working login."""
    if actor in ("king", "spectator"):
        return denied(actor)
    return str(value) if actor != "zoe" else str([])


async def test_narrows_search_and_matches(env: TestEnv) -> None:
    world = await build_world(env)
    table = Table()

    def ids(objs: Any) -> list[int]:
        return sorted(world.ids[o] for o in objs)

    for actor in ACTORS:
        received = [o for o in OBJECTS if actor in RECEIVED[o]]
        readable = [o for o in OBJECTS if actor in READERS[o]]

        # Without a stream term only received messages count, search included (Zulip
        # adds stream history only when the narrow names a stream it may read).
        table.check(
            f"{actor} all", str(await _fetch(world, actor, [])), _seen(actor, ids(received))
        )
        search = [{"operator": "search", "operand": WORD}]
        table.check(
            f"{actor} search", str(await _fetch(world, actor, search)), _seen(actor, ids(received))
        )
        dm = [{"operator": "is", "operand": "dm"}]
        table.check(
            f"{actor} is:dm",
            str(await _fetch(world, actor, dm)),
            _seen(actor, ids(o for o in received if o in ("dm", "group_dm"))),
        )
        public = [{"operator": "streams", "operand": "public"}]
        public_history = actor != "polonius"  # guests read no history through it
        table.check(
            f"{actor} streams:public",
            str(await _fetch(world, actor, public)),
            _seen(
                actor,
                ids(
                    o
                    for o in ("public", "web_public")
                    if (actor in READERS[o] if public_history else actor in RECEIVED[o])
                ),
            ),
        )
        for obj, stream_name in STREAM_OF.items():
            mine = ids([obj]) if actor in READERS[obj] else []
            for narrow, label in (
                ([{"operator": "stream", "operand": stream_name}], "stream"),
                (
                    [
                        {"operator": "stream", "operand": stream_name},
                        {"operator": "search", "operand": WORD},
                    ],
                    "stream+search",
                ),
            ):
                got = str(await _fetch(world, actor, narrow))
                want = _seen(actor, mine)
                if actor == "zoe":
                    # Stream names resolve in one's own organization only.
                    want = f"400 BAD_NARROW Invalid narrow operator: unknown channel {stream_name}"
                table.check(f"{actor} {label} {obj}", got, want)
        # Asking by id: readable messages come back (history included), others are
        # silently left out.
        every_id = sorted(world.ids.values())
        table.check(
            f"{actor} message_ids",
            str(await _fetch(world, actor, [], message_ids=every_id)),
            _seen(actor, ids(readable)),
        )
        response = await world.client(actor).get(
            "/messages/matches_narrow", {"msg_ids": every_id, "narrow": search}
        )
        got = (
            str(sorted(int(i) for i in response.json()["messages"]))
            if response.status_code == 200
            else outcome(response)
        )
        table.check(f"{actor} matches_narrow", got, _seen(actor, ids(received)))
    table.assert_clean(len(ACTORS) * 14)


async def test_flags_reactions_edits_submessages(env: TestEnv) -> None:
    world = await build_world(env)
    table = Table()

    async def star(actor: str, obj: str) -> httpx.Response:
        params = {"messages": [world.ids[obj]], "op": "add", "flag": "starred"}
        response = await world.client(actor).post("/messages/flags", params)
        if response.status_code == 200:
            params["op"] = "remove"
            assert_success(await world.client(actor).post("/messages/flags", params))
        return response

    await for_each_cell(world, table, "star", star, reads)

    async def react(actor: str, obj: str) -> httpx.Response:
        path = f"/messages/{world.ids[obj]}/reactions"
        response = await world.client(actor).post(path, {"emoji_name": "octopus"})
        if response.status_code == 200:
            assert_success(await world.client(actor).delete(path, {"emoji_name": "octopus"}))
        return response

    await for_each_cell(world, table, "react", react, reads)

    async def edit(actor: str, obj: str) -> httpx.Response:
        content = f"{WORD} {obj} edited by {actor} [file](/user_uploads/{world.paths[obj]})"
        return await world.client(actor).patch(f"/messages/{world.ids[obj]}", {"content": content})

    def may_edit(actor: str, obj: str) -> str:
        if actor not in READERS[obj]:
            return denied(actor)
        return (
            OK
            if actor == "hamlet"
            else denied(actor, "You don't have permission to edit this message")
        )

    await for_each_cell(world, table, "edit content", edit, may_edit)

    async def submessage(actor: str, obj: str) -> httpx.Response:
        params = {"message_id": world.ids[obj], "msg_type": "widget", "content": "{}"}
        return await world.client(actor).post("/submessage", params)

    # The sender attaches the first submessage (the widget); then any reader may add more.
    for obj in OBJECTS:
        assert_success(await submessage("hamlet", obj))
    await for_each_cell(world, table, "submessage", submessage, reads)
    table.assert_clean(len(ACTORS) * len(OBJECTS) * 4)

    # Nothing a refused request tried stuck: no stars, reactions or foreign edits remain.
    for obj in OBJECTS:
        message = assert_success(await env.client("hamlet").get(f"/messages/{world.ids[obj]}"))
        assert message["message"]["reactions"] == []
        assert "starred" not in message["message"]["flags"]
        assert message["raw_content"].startswith(f"{WORD} {obj} edited by hamlet ")


async def test_deleting(env: TestEnv) -> None:
    world = await build_world(env)
    # Only administrators delete, their own messages or others' (the messages' sender
    # being one of the actors).
    await set_group_setting(env, "can_delete_own_message_group", "role:administrators")
    table = Table()
    survivors: dict[int, bool] = {}

    async def delete(actor: str, obj: str) -> httpx.Response:
        message_id = await world.send(obj)
        response = await world.client(actor).delete(f"/messages/{message_id}")
        survivors[message_id] = response.status_code != 200
        return response

    def may_delete(actor: str, obj: str) -> str:
        if actor not in READERS_LATER[obj]:
            return denied(actor)
        # can_delete_any_message_group's default, administrators, delete anything.
        if actor in ADMINS:
            return OK
        return denied(actor, "You don't have permission to delete this message")

    await for_each_cell(world, table, "delete", delete, may_delete)
    table.assert_clean(len(ACTORS) * len(OBJECTS))
    for message_id, kept in survivors.items():
        response = await env.client("hamlet").get(f"/messages/{message_id}")
        assert (outcome(response) == OK) is kept, message_id


async def test_files_and_attachments(env: TestEnv) -> None:
    world = await build_world(env)
    table = Table()
    forbidden = "403 None You are not authorized to view this file."
    not_found = "404 None File not found."

    def may_download(actor: str, obj: str) -> str:
        if actor == "spectator":
            return OK if obj == "web_public" else NOT_LOGGED_IN
        if actor == "king":
            return DEACTIVATED
        if actor == "zoe":
            return not_found
        return OK if actor in READERS[obj] else forbidden

    for actor in ACTORS:
        for obj in OBJECTS:
            response = await world.download(actor, world.paths[obj])
            got = OK if response.status_code == 200 else outcome(response)
            table.check(f"{actor} download {obj}", got, may_download(actor, obj))
            if response.status_code == 200:
                table.check(f"{actor} bytes {obj}", response.text, f"bytes of {obj}.txt")

    async def temporary(actor: str, obj: str) -> httpx.Response:
        return await world.client(actor).get(f"/user_uploads/{world.paths[obj]}")

    def may_link(actor: str, obj: str) -> str:
        if actor in ("king", "spectator"):
            return denied(actor)
        if actor == "zoe":
            return not_found
        return OK if actor in READERS[obj] else forbidden

    await for_each_cell(world, table, "temporary url", temporary, may_link)

    # Only the owner lists or deletes a file, whoever can read the messages linking it.
    for actor in ACTORS:
        response = await world.client(actor).get("/attachments")
        if actor in ("king", "spectator"):
            table.check(f"{actor} attachments", outcome(response), denied(actor))
            continue
        listed = sorted(a["path_id"] for a in assert_success(response)["attachments"])
        expected = sorted(world.paths.values()) if actor == "hamlet" else []
        table.check(f"{actor} attachments", str(listed), str(expected))
    owned = assert_success(await env.client("hamlet").get("/attachments"))["attachments"]
    for actor in ACTORS:
        if actor == "hamlet":
            continue
        for item in owned:
            response = await world.client(actor).delete(f"/attachments/{item['id']}")
            table.check(
                f"{actor} delete attachment {item['path_id']}",
                outcome(response),
                denied(actor, "Invalid attachment"),
            )
    table.assert_clean(len(ACTORS) * len(OBJECTS) * 2)
    assert len(assert_success(await env.client("hamlet").get("/attachments"))["attachments"]) == 6

    # Closing the organization to spectators closes its web-public files too.
    owner = env.client("desdemona")
    assert_success(await owner.patch("/realm", {"enable_spectator_access": False}))
    closed = await world.download("spectator", world.paths["web_public"])
    assert outcome(closed) == NOT_LOGGED_IN
