"""Narrows: parsing, Zulip's errors, and the SQL conditions against messages inserted
directly (no sending code involved), on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import aiosqlite.core
import pytest
import sqlalchemy as sa

from hubbub.db.dialects import LONG_READ, user_message_settled
from hubbub.db.tables import (
    direct_message_group,
    direct_message_group_member,
    message,
    recipient,
    stream,
    subscription,
    user_topic,
)
from hubbub.errors import BadNarrowError, JsonableError
from hubbub.events.queue_narrow import queue_narrow_matches
from hubbub.queries.messages import IS_PRIVATE, MENTIONED, READ, STARRED
from hubbub.queries.narrow import (
    ConversationKinds,
    NarrowTerm,
    check_narrow,
    parse_narrow,
)
from hubbub.queries.narrow_sql import build_narrow_query
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import send_direct_message, send_stream_message

_BOTH = "No message can be both a channel message and direct message"

# --- parsing -------------------------------------------------------------------------


def test_parse_both_forms_aliases_and_negation() -> None:
    terms = parse_narrow(
        [
            ["stream", "Verona"],
            ["subject", "lunch"],
            ["-sender", "hamlet@example.com"],
            {"operator": "pm-with", "operand": [3, 4]},
            {"operator": "is", "operand": "starred", "negated": True},
            {"operator": "id", "operand": 12},
            {"operator": "dm-including", "operand": 5},
        ]
    )
    assert terms == [
        NarrowTerm("stream", "Verona"),
        NarrowTerm("topic", "lunch"),
        NarrowTerm("sender", "hamlet@example.com", negated=True),
        NarrowTerm("dm", (3, 4)),
        NarrowTerm("is", "starred", negated=True),
        NarrowTerm("id", 12),
        NarrowTerm("dm-including", 5),
    ]
    assert parse_narrow(None) == []


@pytest.mark.parametrize(
    ("narrow", "message"),
    [
        ([["stream"]], "Invalid narrow"),
        (["stream"], "Invalid narrow"),
        ([{"operand": "x"}], 'narrow[0]["operator"] is not a string'),
        ([{"operator": "topic"}], 'narrow[0]["operand"] is missing'),
        ([{"operator": "topic", "operand": 3}], 'narrow[0]["operand"] is not a string'),
        (
            [{"operator": "dm", "operand": ["a"]}],
            'narrow[0]["operand"] is not an integer list',
        ),
        (
            [{"operator": "sender", "operand": [1]}],
            'narrow[0]["operand"] is not a string or an integer',
        ),
        ([{"operator": "search", "operand": " "}], 'narrow[0]["operand"] cannot be blank.'),
        (
            [{"operator": "is", "operand": "x", "negated": "yes"}],
            'narrow[0]["negated"] is not a boolean',
        ),
    ],
)
def test_malformed_terms(narrow: list[Any], message: str) -> None:
    with pytest.raises(JsonableError) as info:
        parse_narrow(narrow)
    assert info.value.msg == message


@pytest.mark.parametrize(
    ("narrow", "desc"),
    [
        ([["bogus", "x"]], "unknown operator bogus"),
        ([["is", "bogus"]], "unknown 'is' operand bogus"),
        ([["has", "bogus"]], "unknown 'has' operand bogus"),
        ([["in", "bogus"]], "unknown 'in' operand bogus"),
        ([["streams", "bogus"]], "unknown channels operand bogus"),
        ([["channels", "bogus"]], "unknown channels operand bogus"),
        ([["-pm_with2", "x"]], "unknown operator pm_with2"),
    ],
)
def test_unknown_operators_and_operands(narrow: list[Any], desc: str) -> None:
    with pytest.raises(BadNarrowError) as info:
        parse_narrow(narrow)
    assert info.value.msg == f"Invalid narrow operator: {desc}"
    assert info.value.data() == {"desc": desc}


def test_check_narrow_stores_the_legacy_form() -> None:
    stored = check_narrow(
        [{"operator": "is", "operand": "dm", "negated": True}, ["stream", "Verona"]]
    )
    assert stored == [["-is", "dm"], ["stream", "Verona"]]
    assert parse_narrow(stored) == [
        NarrowTerm("is", "dm", negated=True),
        NarrowTerm("stream", "Verona"),
    ]
    with pytest.raises(JsonableError) as info:
        check_narrow([["search", "x"]])
    assert info.value.msg == "Operator search not supported."


def test_channel_and_legacy_spellings() -> None:
    """``channel``/``channels`` (feature level 250) and the underscore spellings Zulip 10.2
    still dispatches are the same operators; the underscore ones take only strings."""
    terms = parse_narrow(
        [
            {"operator": "channel", "operand": 5},
            ["channels", "public"],
            ["pm_with", "iago@example.com"],
            ["-group_pm_with", "iago@example.com"],
            {"operator": "with", "operand": "12"},
        ]
    )
    assert terms == [
        NarrowTerm("stream", 5),
        NarrowTerm("streams", "public"),
        NarrowTerm("dm", "iago@example.com"),
        NarrowTerm("group-pm-with", "iago@example.com", negated=True),
        NarrowTerm("with", "12"),
    ]
    assert [t.name for t in terms] == ["channel", "channels", "pm_with", "group_pm_with", "with"]
    for operator in ("pm_with", "group_pm_with"):
        with pytest.raises(JsonableError) as info:
            parse_narrow([{"operator": operator, "operand": [3]}])
        assert info.value.msg == 'narrow[0]["operand"] is not a string'
    with pytest.raises(JsonableError) as info:
        parse_narrow([{"operator": "with", "operand": [3]}])
    assert info.value.msg == 'narrow[0]["operand"] is not a string or an integer'


def test_queue_narrow_spellings_and_the_empty_topic() -> None:
    assert check_narrow([["channel", "Verona"], ["topic", "general chat"]]) == [
        ["stream", "Verona"],
        ["topic", ""],
    ]
    with pytest.raises(JsonableError) as info:
        check_narrow([["with", "3"]])
    assert info.value.msg == "Operator with not supported."
    with pytest.raises(JsonableError) as info:
        check_narrow([["pm-with", "iago@example.com"]])
    assert info.value.msg == "Operator pm-with not supported."


@pytest.mark.parametrize(
    ("narrow", "both"),
    [
        ([["stream", "a"], ["dm", "b"]], True),
        ([["dm", "b"], ["topic", "a"]], True),
        ([["streams", "public"], ["is", "dm"]], True),
        ([["-is", "dm"], ["dm-including", "b"]], True),
        ([["is", "private"], ["-is", "private"]], True),
        ([["group-pm-with", "b"], ["channel", "a"]], True),
        ([["-stream", "a"], ["dm", "b"]], False),
        ([["stream", "a"], ["-dm", "b"]], False),
        ([["stream", "a"], ["topic", "b"], ["sender", "c"], ["is", "starred"]], False),
        ([["dm", "b"], ["dm-including", "c"], ["is", "dm"]], False),
    ],
)
def test_stream_and_direct_message_terms_conflict(narrow: list[Any], both: bool) -> None:
    kinds = ConversationKinds()
    terms = parse_narrow(narrow)
    if not both:
        for term in terms:
            kinds.note(term)
        return
    with pytest.raises(BadNarrowError) as info:
        for term in terms:
            kinds.note(term)
    assert info.value.msg == f"Invalid narrow operator: {_BOTH}"


STREAM_MESSAGE = {
    "type": "stream",
    "display_recipient": "Verona",
    "stream_id": 5,
    "subject": "✔ Lunch",
    "sender_email": "hamlet@example.com",
    "sender_id": 10,
}
DIRECT_MESSAGE = {"type": "private", "sender_email": "iago@example.com", "sender_id": 11}


@pytest.mark.parametrize(
    ("narrow", "message", "flags", "expected"),
    [
        ([], DIRECT_MESSAGE, [], True),
        ([["stream", "verona"]], STREAM_MESSAGE, [], True),
        ([["stream", "5"]], STREAM_MESSAGE, [], True),
        ([["stream", "Denmark"]], STREAM_MESSAGE, [], False),
        ([["stream", "Verona"]], DIRECT_MESSAGE, [], False),
        ([["stream", "Verona"], ["topic", "✔ lunch"]], STREAM_MESSAGE, [], True),
        ([["topic", "other"]], STREAM_MESSAGE, [], False),
        ([["sender", "HAMLET@example.com"]], STREAM_MESSAGE, [], True),
        ([["sender", "10"]], STREAM_MESSAGE, [], True),
        ([["-sender", "10"]], STREAM_MESSAGE, [], False),
        ([["is", "dm"]], DIRECT_MESSAGE, [], True),
        ([["is", "private"]], STREAM_MESSAGE, [], False),
        ([["is", "starred"]], STREAM_MESSAGE, ["starred"], True),
        ([["is", "unread"]], STREAM_MESSAGE, ["read"], False),
        ([["-is", "unread"]], STREAM_MESSAGE, ["read"], True),
        ([["is", "mentioned"]], STREAM_MESSAGE, ["stream_wildcard_mentioned"], True),
        ([["is", "alerted"]], STREAM_MESSAGE, [], False),
        ([["is", "resolved"]], STREAM_MESSAGE, [], True),
        ([["is", "followed"]], STREAM_MESSAGE, [], True),
    ],
)
def test_queue_narrow_matches(
    narrow: list[list[str]], message: dict[str, Any], flags: list[str], expected: bool
) -> None:
    # The queue stores the narrow as ``check_narrow`` returns it (``POST /register``).
    assert queue_narrow_matches(check_narrow(narrow), message, flags) is expected


# --- SQL -----------------------------------------------------------------------------


async def _recipient(conn: Any, kind: int, type_id: int) -> int:
    rid = (
        await conn.execute(
            sa.select(recipient.c.id).where(
                recipient.c.type == kind, recipient.c.type_id == type_id
            )
        )
    ).scalar()
    if rid is None:
        result = await conn.execute(recipient.insert().values(type=kind, type_id=type_id))
        rid = result.inserted_primary_key[0]
    return int(rid)


class World:
    """Messages inserted straight into the tables; ids by name."""

    def __init__(self, env: TestEnv) -> None:
        self.env = env
        self.ids: dict[str, int] = {}
        self.now = 1_700_000_000.0

    def uid(self, name: str) -> int:
        return self.env.users[name].id

    async def add(
        self,
        name: str,
        sender: str,
        rid: int,
        rows: dict[str, int],
        *,
        topic: str = "",
        content: str = "hi",
        **columns: Any,
    ) -> None:
        self.now += 1
        async with self.env.services.db.write() as conn:
            result = await conn.execute(
                message.insert().values(
                    realm_id=self.env.realm.id,
                    sender_id=self.uid(sender),
                    recipient_id=rid,
                    topic=topic,
                    content=content,
                    rendered_content=f"<p>{content}</p>",
                    date_sent=self.now,
                    sending_client="test",
                    **columns,
                )
            )
            assert result.inserted_primary_key is not None
            message_id = int(result.inserted_primary_key[0])
            for user, flags in rows.items():
                await conn.execute(
                    sa.insert(user_message_settled(conn)).values(
                        user_profile_id=self.uid(user), message_id=message_id, flags=flags
                    )
                )
        self.ids[name] = message_id

    async def narrow_ids(self, user: str, narrow: list[Any]) -> list[str]:
        by_id = {v: k for k, v in self.ids.items()}
        async with self.env.services.db.read() as conn:
            query = await build_narrow_query(conn, self.env.users[user], parse_narrow(narrow))
            rows = await conn.execute(query.select(message.c.id).order_by(message.c.id))
            return [by_id[r.id] for r in rows]


@pytest.fixture
async def world(env: TestEnv) -> World:
    w = World(env)
    verona = await env.subscribe("othello", "Verona")
    await env.subscribe("hamlet", "Verona")
    secret = await env.subscribe("othello", "secret", invite_only=True)
    nohist = await env.subscribe("othello", "nohist", invite_only=True)
    await env.subscribe("hamlet", "nohist")
    await env.subscribe("iago", "Verona")
    async with env.services.db.write() as conn:
        await conn.execute(
            stream.update()
            .where(stream.c.id == nohist.id)
            .values(history_public_to_subscribers=False)
        )
        await conn.execute(
            stream.update()
            .where(stream.c.id == secret.id)
            .values(history_public_to_subscribers=True)
        )
        rv = await _recipient(conn, 2, verona.id)
        rs = await _recipient(conn, 2, secret.id)
        rn = await _recipient(conn, 2, nohist.id)
        r_hamlet = await _recipient(conn, 1, w.uid("hamlet"))
        group = await conn.execute(
            direct_message_group.insert().values(
                realm_id=env.realm.id, group_hash="h" * 40, group_size=3
            )
        )
        assert group.inserted_primary_key is not None
        group_id = group.inserted_primary_key[0]
        for name in ("hamlet", "othello", "iago"):
            await conn.execute(
                direct_message_group_member.insert().values(
                    group_id=group_id, user_profile_id=w.uid(name)
                )
            )
        rg = await _recipient(conn, 3, group_id)
        await conn.execute(
            user_topic.insert().values(
                user_profile_id=w.uid("hamlet"),
                stream_id=verona.id,
                topic_name="Muted Topic",
                last_updated=0,
                visibility_policy=1,
            )
        )
    dm = IS_PRIVATE
    await w.add(
        "m1", "othello", rv, {"othello": READ, "hamlet": 0}, topic="Greetings", content="running"
    )
    await w.add(
        "m2",
        "othello",
        rv,
        {"othello": READ, "hamlet": READ | STARRED},
        topic="✔ done",
        content="see https://example.com",
        has_link=True,
    )
    await w.add("m3", "iago", rv, {"iago": READ}, topic="old")
    await w.add("m4", "othello", r_hamlet, {"othello": READ | dm, "hamlet": dm | MENTIONED})
    await w.add("m5", "hamlet", rg, {n: READ | dm for n in ("hamlet", "othello", "iago")})
    await w.add("m6", "othello", rs, {"othello": READ}, topic="plans")
    await w.add("m7", "othello", rn, {"othello": READ}, topic="hidden")
    await w.add("m8", "iago", rv, {"iago": READ, "hamlet": 0}, topic="muted topic")
    # hamlet joins the private stream with shared history after m6 was sent.
    await env.subscribe("hamlet", "secret")
    return w


@pytest.mark.parametrize(
    ("narrow", "expected"),
    [
        ([], ["m1", "m2", "m4", "m5", "m8"]),
        ([["stream", "Verona"]], ["m1", "m2", "m3", "m8"]),
        ([["channel", "Verona"]], ["m1", "m2", "m3", "m8"]),
        ([["stream", "verona"], ["topic", "GREETINGS"]], ["m1"]),
        ([["stream", "secret"]], ["m6"]),
        ([["stream", "nohist"]], []),
        ([["streams", "public"]], ["m1", "m2", "m3", "m8"]),
        ([["channels", "public"]], ["m1", "m2", "m3", "m8"]),
        ([["-channels", "public"]], ["m4", "m5"]),
        ([["streams", "web-public"]], []),
        ([["-stream", "Verona"]], ["m4", "m5"]),
        ([["sender", "othello@example.com"]], ["m1", "m2", "m4"]),
        ([["dm", "othello@example.com"]], ["m4"]),
        ([{"operator": "dm", "operand": "othello@example.com,iago@example.com"}], ["m5"]),
        ([["pm-with", "iago@example.com"]], []),
        ([["pm_with", "othello@example.com"]], ["m4"]),
        ([["group_pm_with", "iago@example.com"]], ["m5"]),
        ([["dm-including", "othello@example.com"]], ["m4", "m5"]),
        ([["dm-including", "hamlet@example.com"]], ["m4", "m5"]),
        ([["group-pm-with", "iago@example.com"]], ["m5"]),
        ([["is", "dm"]], ["m4", "m5"]),
        ([["-is", "dm"]], ["m1", "m2", "m8"]),
        ([["is", "private"]], ["m4", "m5"]),
        ([["is", "starred"]], ["m2"]),
        ([["stream", "Verona"], ["is", "starred"]], ["m2"]),
        ([["is", "unread"]], ["m1", "m4", "m8"]),
        ([["stream", "Verona"], ["-is", "unread"]], ["m2"]),
        ([["is", "mentioned"]], ["m4"]),
        ([["is", "alerted"]], []),
        ([["stream", "Verona"], ["is", "resolved"]], ["m2"]),
        ([["is", "followed"]], []),
        ([["in", "home"]], ["m1", "m2", "m4", "m5"]),
        ([["in", "all"]], ["m1", "m2", "m4", "m5", "m8"]),
        ([["is", "muted"]], ["m8"]),
        ([["has", "link"]], ["m2"]),
        ([["has", "image"]], []),
        ([["has", "reaction"]], []),
        ([["near", "3"]], ["m1", "m2", "m4", "m5", "m8"]),
        ([["search", "run"]], ["m1"]),
        ([["stream", "Verona"], ["search", "old"]], ["m3"]),
    ],
)
async def test_narrow_conditions(world: World, narrow: list[Any], expected: list[str]) -> None:
    assert await world.narrow_ids("hamlet", narrow) == expected


async def test_id_operand_and_ids(world: World) -> None:
    m2 = world.ids["m2"]
    assert await world.narrow_ids("hamlet", [{"operator": "id", "operand": m2}]) == ["m2"]
    assert await world.narrow_ids("hamlet", [["id", str(m2)]]) == ["m2"]
    othello = world.uid("othello")
    assert await world.narrow_ids("hamlet", [{"operator": "dm", "operand": [othello]}]) == ["m4"]
    assert await world.narrow_ids(
        "hamlet", [{"operator": "sender", "operand": othello}, ["is", "dm"]]
    ) == ["m4"]


async def test_the_empty_topic_is_a_streams_only(world: World) -> None:
    """Direct messages store no topic (""), yet ``topic:""`` finds only stream messages
    in the empty topic (feature level 334), and so does its display name."""
    verona = await world.env.subscribe("othello", "Verona")
    async with world.env.services.db.write() as conn:
        rv = await _recipient(conn, 2, verona.id)
    await world.add("m9", "othello", rv, {"othello": READ, "hamlet": 0}, topic="")
    assert await world.narrow_ids("hamlet", [["topic", ""]]) == ["m9"]
    assert await world.narrow_ids("hamlet", [["topic", "general chat"]]) == ["m9"]
    assert await world.narrow_ids("hamlet", [["stream", "Verona"], ["topic", ""]]) == ["m9"]
    assert await world.narrow_ids("hamlet", [["-topic", ""]]) == ["m1", "m2", "m4", "m5", "m8"]
    # Only the first topic term is read so (as Zulip).
    assert await world.narrow_ids("hamlet", [["topic", ""], ["topic", "general chat"]]) == []


async def test_muted_streams_count_in_a_narrow_to_them(world: World) -> None:
    """``in:home`` and ``is:muted`` (feature level 366) judge a muted stream whatever
    stream the narrow names, as Zulip's ``by_in``/``by_is`` do."""
    verona = await world.env.subscribe("hamlet", "Verona")
    async with world.env.services.db.write() as conn:
        await conn.execute(
            subscription.update()
            .where(
                subscription.c.user_profile_id == world.uid("hamlet"),
                subscription.c.stream_id == verona.id,
            )
            .values(is_muted=True)
        )
    everything = ["m1", "m2", "m3", "m8"]
    assert await world.narrow_ids("hamlet", [["stream", "Verona"]]) == everything
    assert await world.narrow_ids("hamlet", [["stream", "Verona"], ["is", "muted"]]) == everything
    assert await world.narrow_ids("hamlet", [["stream", "Verona"], ["in", "home"]]) == []
    assert await world.narrow_ids("hamlet", [["is", "muted"]]) == ["m1", "m2", "m8"]
    assert await world.narrow_ids("hamlet", [["-is", "muted"]]) == ["m4", "m5"]


async def test_guest_sees_no_public_history(world: World) -> None:
    assert await world.narrow_ids("polonius", [["stream", "Verona"]]) == []


async def test_unsubscribed_user_loses_private_history(world: World) -> None:
    env = world.env
    async with env.services.db.write() as conn:
        await conn.execute(
            subscription.update()
            .where(subscription.c.user_profile_id == world.uid("hamlet"))
            .values(active=False)
        )
    assert await world.narrow_ids("hamlet", [["stream", "secret"]]) == []
    assert await world.narrow_ids("hamlet", [["stream", "Verona"]]) == ["m1", "m2", "m3", "m8"]


@pytest.mark.parametrize(
    ("narrow", "desc"),
    [
        ([["stream", "nowhere"]], "unknown channel nowhere"),
        ([["channel", "nowhere"]], "unknown channel nowhere"),
        ([["sender", "nobody@example.com"]], "unknown user nobody@example.com"),
        ([["dm", "nobody@example.com"]], "unknown user in nobody@example.com"),
        ([{"operator": "dm", "operand": [99999]}], "unknown user in [99999]"),
        ([["id", "x1"]], "Invalid message ID"),
        ([["id", "2147483648"]], "Invalid message ID"),
        ([{"operator": "id", "operand": -3}], "Invalid message ID"),
        ([["stream", "Verona"], ["dm", "nobody@example.com"]], _BOTH),
        (
            [["dm", "nobody@example.com"], ["stream", "Verona"]],
            "unknown user in nobody@example.com",
        ),
    ],
)
async def test_unknown_names(world: World, narrow: list[Any], desc: str) -> None:
    with pytest.raises(BadNarrowError) as info:
        await world.narrow_ids("hamlet", narrow)
    assert info.value.msg == f"Invalid narrow operator: {desc}"


async def test_narrowed_queue_gets_matching_messages(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Verona")
    await env.subscribe("hamlet", "Denmark")
    client = env.client("hamlet")
    queue = assert_success(
        await client.post(
            "/register", {"event_types": ["message"], "narrow": [["stream", "Verona"]]}
        )
    )["queue_id"]
    assert_error(
        await client.post("/register", {"narrow": [["search", "x"]]}),
        "Operator search not supported.",
    )
    assert_error(
        await client.post("/register", {"narrow": [["bogus", "x"]]}),
        "Invalid narrow operator: unknown operator bogus",
        code="BAD_NARROW",
    )
    wanted = await send_stream_message(env, "hamlet", "Verona", "in")
    await send_stream_message(env, "hamlet", "Denmark", "out")
    await send_direct_message(env, "othello", ["hamlet"], "out")
    body = assert_success(
        await client.get("/events", {"queue_id": queue, "last_event_id": -1, "dont_block": True})
    )
    assert [e["message"]["id"] for e in body["events"] if e["type"] == "message"] == [wanted]


async def test_a_narrows_reads_are_long_reads(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every statement a narrow builds is marked ``LONG_READ`` (how many rows it walks has
    no bound): on SQLite a page of ``GET /messages`` runs in the reader's thread, not
    inline on the event loop with the request's other reads."""
    await env.subscribe("hamlet", "Verona")
    sent = await send_stream_message(env, "hamlet", "Verona", "hello there")
    async with env.services.db.read() as conn:
        terms = parse_narrow([["search", "hello"]])
        query = await build_narrow_query(conn, env.users["hamlet"], terms)
    assert query.select(message.c.id).get_execution_options().get(LONG_READ) is True
    in_thread: list[str] = []
    original: Callable[..., Awaitable[Any]] = aiosqlite.core.Connection._execute

    async def spy(conn: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
        in_thread.append(getattr(fn, "__name__", "?"))
        return await original(conn, fn, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.core.Connection, "_execute", spy)
    params = {"anchor": "newest", "num_before": 10, "num_after": 0}
    body = assert_success(
        await env.client("hamlet").get("/messages", {**params, "narrow": '[["stream", "Verona"]]'})
    )
    assert [m["id"] for m in body["messages"]] == [sent]
    if env.services.db.dialect_name == "sqlite":
        # The page's read (with its rows), and nothing else of the request's reads.
        assert in_thread == ["run"]
