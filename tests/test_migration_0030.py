"""Migration 0030: channel descriptions and text profile field values stored as escaped
paragraphs are rendered again as Markdown, in their own realm; other values stay."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command

from hubbub.actions.streams import StreamOptions, do_create_stream
from hubbub.db.migrate import alembic_config
from hubbub.db.tables import custom_profile_field_value, stream
from tests.helpers import TestEnv, assert_success


async def _set_field(env: TestEnv, user: str, field_type: int, name: str, value: str) -> int:
    field = assert_success(
        await env.client("iago").post(
            "/realm/profile_fields", {"name": name, "field_type": field_type}
        )
    )["id"]
    data = [{"id": field, "value": value}]
    assert_success(await env.client(user).patch("/users/me/profile_data", {"data": data}))
    return int(field)


async def test_stored_renderings_become_markdown(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    other = await env.create_realm("eng", "Engineering")
    hamlet_elsewhere = await env.create_user("hamlet@eng.example", "Hamlet", realm=other)
    denmark = await env.subscribe("hamlet", "Denmark", description="**Bold** @**Hamlet**")
    await env.subscribe("hamlet", "Quiet")
    assert_success(
        await env.client("iago").post(
            "/realm/filters",
            {"pattern": "#(?P<id>[0-9]+)", "url_template": "https://t.example/{id}"},
        )
    )
    bio = await _set_field(env, "hamlet", 2, "Biography", "See #**Denmark**, issue #4")
    pronouns = await _set_field(env, "hamlet", 8, "Pronouns", "**he**")
    async with env.services.write() as tx:
        elsewhere = await do_create_stream(
            tx, other, "Denmark", StreamOptions(), description="`code` @**Hamlet**", now=0
        )
    # What the placeholder stored before this migration: escaped paragraphs.
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(stream)
            .where(stream.c.id == elsewhere.id)
            .values(rendered_description="<p>`code` @**Hamlet**</p>")
        )
        await conn.execute(
            sa.update(stream)
            .where(stream.c.id == denmark.id)
            .values(rendered_description="<p>**Bold** @**Hamlet**</p>")
        )
        await conn.execute(
            sa.update(custom_profile_field_value)
            .where(custom_profile_field_value.c.field_id == bio)
            .values(rendered_value="<p>See #**Denmark**, issue #4</p>")
        )
        await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "0029"))
    async with env.services.db.write() as conn:
        await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "0030"))

    async with env.services.db.read() as conn:
        descriptions = dict(
            (await conn.execute(sa.select(stream.c.id, stream.c.rendered_description))).all()
        )
        values = dict(
            (
                await conn.execute(
                    sa.select(
                        custom_profile_field_value.c.field_id,
                        custom_profile_field_value.c.rendered_value,
                    )
                )
            ).all()
        )
    assert descriptions[denmark.id] == (
        f'<p><strong>Bold</strong> <span class="user-mention" data-user-id="{hamlet.id}">'
        "@Hamlet</span></p>"
    )
    # Each realm's text names that realm's users.
    assert descriptions[elsewhere.id] == (
        f'<p><code>code</code> <span class="user-mention" data-user-id="{hamlet_elsewhere.id}">'
        "@Hamlet</span></p>"
    )
    quiet = [i for i in descriptions if i not in (denmark.id, elsewhere.id)]
    assert [descriptions[i] for i in quiet] == [""]
    assert values[bio] == (
        f'<p>See <a class="stream" data-stream-id="{denmark.id}" '
        f'href="/#narrow/channel/{denmark.id}-Denmark">#Denmark</a>, issue '
        '<a href="https://t.example/4">#4</a></p>'
    )
    # Pronouns have no rendering.
    assert values[pronouns] is None
    # What the migration stored is what the renderer makes of the text now.
    for text, stored in (
        ("**Bold** @**Hamlet**", descriptions[denmark.id]),
        ("See #**Denmark**, issue #4", values[bio]),
    ):
        rendered = assert_success(
            await env.client("hamlet").post("/messages/render", {"content": text})
        )["rendered"]
        assert rendered == stored
