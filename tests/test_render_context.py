"""``queries/render_context``: a message's mentions load only the users they can name, and
name the same users as a render with every user loaded."""

from __future__ import annotations

import pytest

from hubbub.markdown.mentions import user_mention_targets
from hubbub.queries.render_context import load_render_context
from tests.helpers import TestEnv, assert_success
from tests.messages_helpers import message_flags, send_stream_message


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("no mention, an email a@b.c", (set(), set())),
        ("hi @**Othello** and @_**King Lear**", (set(), {"othello", "king lear"})),
        ("by id @**Othello|12** and @**|13**", ({12, 13}, set())),
        ("wildcards @**all** @**everyone** @**stream** @**channel** @**topic**", (set(), set())),
        # A mention that starts inside a longer match is still found (the renderer
        # tries each "@").
        ("@**a @**b**", (set(), {"a @", "b"})),
        # Inside code too: a superset of what renders is enough.
        ("`@**Hamlet**`", (set(), {"hamlet"})),
        ("group @*Actors* only", (set(), set())),
        ("not ASCII @**Émile**", None),
    ],
)
def test_user_mention_targets(content: str, expected: tuple[set[int], set[str]] | None) -> None:
    assert user_mention_targets(content) == expected


async def _rendered(env: TestEnv, message_id: int) -> str:
    body = assert_success(await env.client("hamlet").get(f"/messages/{message_id}"))
    return str(body["message"]["content"])


async def test_only_the_users_a_message_names_are_loaded(env: TestEnv) -> None:
    users = env.users
    hamlet, othello = users["hamlet"], users["othello"]
    async with env.services.db.read() as conn:

        async def loaded(content: str) -> list[int]:
            ctx = await load_render_context(conn, env.realm, hamlet, content=content)
            return [user.id for user in ctx.users]

        assert await loaded(f"@**othello** @**Iago|{users['iago'].id}**") == sorted(
            [othello.id, users["iago"].id]
        )
        assert await loaded("mail a@b.c, @**all**") == []
        # A name that is not ASCII: every user of the realm.
        assert len(await loaded("@**Émile**")) == len(users)
        assert len(await loaded("no mention at all")) == 0
        # No content (the renderer's preview of anything): every user.
        ctx = await load_render_context(conn, env.realm, hamlet)
        assert len(ctx.users) == len(users)


async def test_mentions_name_the_same_users_as_before(env: TestEnv) -> None:
    """Name mentions ignore case, the first of two users with one name wins, ids and
    non-ASCII names (read with every user) work, and a name stored with the Kelvin sign
    (lower case "k") matches its ASCII spelling, as Python's ``str.lower`` has it."""
    users = env.users
    twin = await env.create_user("twin@example.com", "Othello")  # a later "Othello"
    emile = await env.create_user("emile@example.com", "Émile Zola")
    kelvin = await env.create_user("kelvin@example.com", "\u212aate")
    for name in ("hamlet", "othello", "iago"):
        await env.subscribe(name, "Denmark")
    for user in (twin, emile, kelvin):
        await env.subscribe(user, "Denmark")

    message_id = await send_stream_message(env, "hamlet", "Denmark", "hi @**othello**")
    flags = await message_flags(env, message_id)
    assert (flags[users["othello"].id], flags[twin.id]) == (8, 0)
    assert f'data-user-id="{users["othello"].id}">@Othello<' in await _rendered(env, message_id)

    message_id = await send_stream_message(
        env, "hamlet", "Denmark", f"@**Othello|{twin.id}** @**émile zola** @**kate**"
    )
    flags = await message_flags(env, message_id)
    assert {uid for uid, bits in flags.items() if bits & 8} == {twin.id, emile.id, kelvin.id}

    # Names of no user, and a mention of another realm's user by id, render as text.
    other = await env.create_realm("other", "Other")
    stranger = await env.create_user("stranger@example.com", "Stranger", realm=other)
    message_id = await send_stream_message(
        env, "hamlet", "Denmark", f"@**Nobody** @**Stranger|{stranger.id}** @**Stranger**"
    )
    assert not any(bits & 8 for bits in (await message_flags(env, message_id)).values())
    assert "user-mention" not in await _rendered(env, message_id)
