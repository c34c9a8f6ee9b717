"""The world of the access-control tests: one organization with a user of each kind, one
message (carrying one uploaded file) in each kind of conversation, and the hand-written
table of who may read what.

Actors: the owner, an administrator, a moderator, the sender, another member, a guest, a
bot; a deactivated member; a user of a second organization on another subdomain; and a
spectator (no credentials).

Objects, each a message from hamlet with a file attached:

- ``public``: a public stream (subscribers: hamlet, king);
- ``protected``: a private stream whose history is not shared (hamlet, iago and king
  subscribed before the message; othello after it);
- ``shared``: a private stream sharing its history with subscribers (hamlet before;
  othello and polonius after);
- ``web_public``: a web-public stream (hamlet), in an organization open to spectators;
- ``dm``: a direct message from hamlet to othello;
- ``group_dm``: a direct message from hamlet to othello and polonius.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from hubbub.models import User
from tests.helpers import ApiClient, TestEnv, assert_success
from tests.uploads_helpers import fetch, upload

# Those with an account in the organization who are still active.
MEMBERS = ("desdemona", "iago", "shiva", "hamlet", "othello", "polonius", "bot")
OBJECTS = ("public", "protected", "shared", "web_public", "dm", "group_dm")
STREAM_OF = {"public": "Denmark", "protected": "Secret", "shared": "Shared", "web_public": "Web"}
# Every message carries this word, for the search checks.
WORD = "aardvark"

# Who may read each object's message (Zulip 8.0's rules, written out by hand, not
# computed): a row for the message, or readable history — public streams for everyone
# but guests, web-public streams for everyone, shared history for present subscribers.
# Administrators get no private stream or direct message they are not part of.
READERS: dict[str, frozenset[str]] = {
    "public": frozenset({"desdemona", "iago", "shiva", "hamlet", "othello", "bot"}),
    "protected": frozenset({"iago", "hamlet"}),
    "shared": frozenset({"hamlet", "othello", "polonius"}),
    "web_public": frozenset(MEMBERS),
    "dm": frozenset({"hamlet", "othello"}),
    "group_dm": frozenset({"hamlet", "othello", "polonius"}),
}
# Who may read a message sent later, once the late subscribers are in: othello, now
# subscribed to the protected stream, receives what is sent there from then on.
READERS_LATER = {**READERS, "protected": READERS["protected"] | {"othello"}}
# Who received each message (has a row for it): subscribers or recipients when it was sent.
RECEIVED: dict[str, frozenset[str]] = {
    "public": frozenset({"hamlet"}),
    "protected": frozenset({"iago", "hamlet"}),
    "shared": frozenset({"hamlet"}),
    "web_public": frozenset({"hamlet"}),
    "dm": frozenset({"hamlet", "othello"}),
    "group_dm": frozenset({"hamlet", "othello", "polonius"}),
}
# Who receives a message sent later: the deactivated member no longer does, othello now
# does in the protected stream and the shared one, polonius in the shared one.
RECEIVED_LATER = {
    **RECEIVED,
    "protected": frozenset({"iago", "hamlet", "othello"}),
    "shared": frozenset({"hamlet", "othello", "polonius"}),
}
EVENT_TYPES = [
    "message",
    "update_message",
    "delete_message",
    "reaction",
    "update_message_flags",
    "submessage",
]


@dataclass
class World:
    env: TestEnv
    ids: dict[str, int] = field(default_factory=dict)  # object -> message id
    paths: dict[str, str] = field(default_factory=dict)  # object -> upload path id
    queues: dict[str, str] = field(default_factory=dict)  # actor -> queue id
    zoe: User = None  # type: ignore[assignment]

    def client(self, actor: str) -> ApiClient:
        if actor == "spectator":
            return self.env.client()
        if actor == "zoe":
            return self.env.client(self.zoe, host="zephyr.localhost")
        return self.env.client(actor)

    def readable(self, actor: str) -> set[int]:
        return {self.ids[o] for o in OBJECTS if actor in READERS[o]}

    def received(self, actor: str) -> set[int]:
        return {self.ids[o] for o in OBJECTS if actor in RECEIVED[o]}

    async def download(self, actor: str, path_id: str) -> httpx.Response:
        """``GET /user_uploads/<path id>`` (outside /api/v1) as ``actor``."""
        user = self.zoe if actor == "zoe" else self.env.users.get(actor)
        host = "zephyr.localhost" if actor == "zoe" else "localhost"
        return await fetch(self.env, f"/user_uploads/{path_id}", user, host=host)

    async def send(self, obj: str, text: str = "") -> int:
        """A new message from hamlet in ``obj``'s conversation; its id."""
        users = self.env.users
        if obj in STREAM_OF:
            params: dict[str, Any] = {"type": "stream", "to": STREAM_OF[obj], "topic": "t"}
        else:
            to = ["othello"] if obj == "dm" else ["othello", "polonius"]
            params = {"type": "direct", "to": [users[n].id for n in to]}
        params["content"] = text or f"{WORD} {obj}"
        body = assert_success(await self.env.client("hamlet").post("/messages", params))
        return int(body["id"])


async def build_world(env: TestEnv) -> World:
    world = World(env)
    users = env.users
    users["bot"] = await env.create_user("bot@example.com", "Bot", bot_owner=users["hamlet"])
    users["king"] = await env.create_user("king@example.com", "King")
    zephyr = await env.create_realm("zephyr", "Zephyr")
    world.zoe = await env.create_user("zoe@example.com", "Zoe", realm=zephyr)
    owner = env.client("desdemona")
    assert_success(await owner.patch("/realm", {"enable_spectator_access": True}))

    for name in ("hamlet", "king"):
        await env.subscribe(name, "Denmark")
    for name in ("hamlet", "iago", "king"):
        await env.subscribe(name, "Secret", invite_only=True)
    assert_success(
        await env.client("hamlet").post(
            "/users/me/subscriptions",
            {
                "subscriptions": [{"name": "Shared"}],
                "invite_only": True,
                "history_public_to_subscribers": True,
            },
        )
    )
    await env.subscribe("hamlet", "Web", is_web_public=True)

    # Every queue exists before anything is sent; an administrator also watches every
    # public stream.
    for actor in (*MEMBERS, "zoe"):
        state = assert_success(
            await world.client(actor).post("/register", {"event_types": EVENT_TYPES})
        )
        world.queues[actor] = state["queue_id"]
    state = assert_success(
        await env.client("iago").post(
            "/register", {"event_types": EVENT_TYPES, "all_public_streams": True}
        )
    )
    world.queues["iago-firehose"] = state["queue_id"]

    for obj in OBJECTS:
        name = f"{obj}.txt"
        world.paths[obj] = await upload(env, "hamlet", f"bytes of {name}".encode(), name)
        world.ids[obj] = await world.send(
            obj, f"{WORD} {obj} [file](/user_uploads/{world.paths[obj]})"
        )

    # Subscribed after the messages were sent.
    for name, stream_name in (("othello", "Secret"), ("othello", "Shared"), ("polonius", "Shared")):
        await env.subscribe(name, stream_name)
    assert_success(await owner.delete(f"/users/{users['king'].id}"))
    return world


def event_message_ids(event: dict[str, Any]) -> set[int]:
    """The ids of the messages an event tells about."""
    if event["type"] == "message":
        return {int(event["message"]["id"])}
    if event["type"] == "update_message_flags":
        return {int(i) for i in event["messages"]}
    ids = {int(i) for i in event.get("message_ids", [])}
    if "message_id" in event:
        ids.add(int(event["message_id"]))
    return ids
