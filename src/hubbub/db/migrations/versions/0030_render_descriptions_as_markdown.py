"""Stored channel descriptions and profile field values rendered again, as Markdown

Channel descriptions (``stream.rendered_description``) and text profile field values
(``custom_profile_field_value.rendered_value``) were rendered as escaped paragraphs; they
now render as Markdown in the realm (``hubbub.rendering``), as Zulip 10.2 renders them.
The stored HTML is what clients receive, in ``/register``, channel objects and user
objects, so each stored rendering is brought up to date here, once, rather than on every
read.

The rendering uses the renderer of the code that runs this migration, with each realm's
users, groups, channels, linkifiers and custom emoji read as of this revision. The realm's
URL is not known to a migration: a link that spells out the realm's own address stays
absolute, where a rendering on a request makes it relative; both lead to the same place.
Nor is a description's writer stored, whose access a new description's channel links
follow: a stored description links any active channel of its realm it names, as a
profile value does.

A downgrade keeps the Markdown renderings: they are sanitized HTML, which the older code
serves as it served its own, and it renders each text again when the text next changes.

Revision ID: 0030
Revises: 0029
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlalchemy as sa
from alembic import op

if TYPE_CHECKING:
    from hubbub.markdown import RenderContext

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

_STREAM = sa.table(
    "stream",
    sa.column("id", sa.Integer),
    sa.column("realm_id", sa.Integer),
    sa.column("name", sa.String),
    sa.column("description", sa.String),
    sa.column("rendered_description", sa.Text),
    sa.column("deactivated", sa.Boolean),
)
_VALUE = sa.table(
    "custom_profile_field_value",
    sa.column("id", sa.Integer),
    sa.column("user_profile_id", sa.Integer),
    sa.column("value", sa.Text),
    sa.column("rendered_value", sa.Text),
)
_USER = sa.table(
    "user_profile",
    sa.column("id", sa.Integer),
    sa.column("realm_id", sa.Integer),
    sa.column("full_name", sa.String),
    sa.column("email", sa.String),
    sa.column("is_active", sa.Boolean),
)
_GROUP = sa.table(
    "user_group",
    sa.column("id", sa.Integer),
    sa.column("realm_id", sa.Integer),
    sa.column("name", sa.String),
    sa.column("is_system_group", sa.Boolean),
    sa.column("deactivated", sa.Boolean),
)
_LINKIFIER = sa.table(
    "realm_linkifier",
    sa.column("id", sa.Integer),
    sa.column("realm_id", sa.Integer),
    sa.column("pattern", sa.Text),
    sa.column("url_template", sa.Text),
    sa.column("order", sa.Integer),
)
_EMOJI = sa.table(
    "realm_emoji",
    sa.column("id", sa.Integer),
    sa.column("realm_id", sa.Integer),
    sa.column("name", sa.String),
    sa.column("file_name", sa.String),
    sa.column("deactivated", sa.Boolean),
)


def _context(conn: sa.Connection, realm_id: int) -> RenderContext:
    """What ``queries.render_context.load_text_render_context`` loads, read here with the
    migration's own (synchronous) connection and table shapes; the whole realm, since
    one context serves every text of the realm."""
    from hubbub.markdown import (
        LinkableStream,
        Linkifier,
        MentionableGroup,
        MentionableUser,
        RealmEmoji,
        RenderContext,
    )
    from hubbub.queries.realm_emoji import emoji_url

    users = conn.execute(
        sa.select(_USER.c.id, _USER.c.full_name, _USER.c.email, _USER.c.is_active)
        .where(_USER.c.realm_id == realm_id)
        .order_by(_USER.c.id)
    )
    groups = conn.execute(
        sa.select(_GROUP.c.id, _GROUP.c.name).where(
            _GROUP.c.realm_id == realm_id, ~_GROUP.c.is_system_group, ~_GROUP.c.deactivated
        )
    )
    streams = conn.execute(
        sa.select(_STREAM.c.id, _STREAM.c.name).where(
            _STREAM.c.realm_id == realm_id, ~_STREAM.c.deactivated
        )
    )
    linkifiers = conn.execute(
        sa.select(_LINKIFIER.c.id, _LINKIFIER.c.pattern, _LINKIFIER.c.url_template)
        .where(_LINKIFIER.c.realm_id == realm_id)
        .order_by(_LINKIFIER.c.order, _LINKIFIER.c.id)
    )
    emoji = conn.execute(
        sa.select(_EMOJI.c.id, _EMOJI.c.name, _EMOJI.c.file_name)
        .where(
            _EMOJI.c.realm_id == realm_id,
            _EMOJI.c.file_name.is_not(None),
            ~_EMOJI.c.deactivated,
        )
        .order_by(_EMOJI.c.id)
    )
    return RenderContext(
        users=[
            MentionableUser(id=r.id, full_name=r.full_name, email=r.email, is_active=r.is_active)
            for r in users
        ],
        user_groups=[MentionableGroup(id=r.id, name=r.name) for r in groups],
        streams=[LinkableStream(id=r.id, name=r.name) for r in streams],
        linkifiers=[
            Linkifier(id=r.id, pattern=r.pattern, url_template=r.url_template) for r in linkifiers
        ],
        realm_emoji=[
            RealmEmoji(id=str(r.id), name=r.name, source_url=emoji_url(realm_id, r.file_name))
            for r in emoji
        ],
        inline_image_preview=False,
    )


def upgrade() -> None:
    from hubbub.rendering import render_text

    conn = op.get_bind()
    contexts: dict[int, RenderContext] = {}

    def render(realm_id: int, text: str) -> str:
        if realm_id not in contexts:
            contexts[realm_id] = _context(conn, realm_id)
        return render_text(text, contexts[realm_id]) if text else ""

    streams = conn.execute(
        sa.select(_STREAM.c.id, _STREAM.c.realm_id, _STREAM.c.description)
        .where(_STREAM.c.description != "")
        .order_by(_STREAM.c.id)
    ).all()
    for row in streams:
        conn.execute(
            sa.update(_STREAM)
            .where(_STREAM.c.id == row.id)
            .values(rendered_description=render(row.realm_id, row.description))
        )
    # Only the text field types have a rendering (the others store NULL).
    values = conn.execute(
        sa.select(_VALUE.c.id, _USER.c.realm_id, _VALUE.c.value)
        .join(_USER, _USER.c.id == _VALUE.c.user_profile_id)
        .where(_VALUE.c.rendered_value.is_not(None))
        .order_by(_VALUE.c.id)
    ).all()
    for row in values:
        conn.execute(
            sa.update(_VALUE)
            .where(_VALUE.c.id == row.id)
            .values(rendered_value=render(row.realm_id, row.value))
        )


def downgrade() -> None:
    pass
