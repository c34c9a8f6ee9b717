"""stream.creator_id, is_recently_active and permission_settings: Zulip 10.x channels

Zulip 10 keeps a channel's permissions as group-valued settings (feature levels 320-357).
Every stream gets all five in ``permission_settings`` (JSON), equivalent to what it had:
who may post follows its ``stream_post_policy`` (anyone, administrators, full members,
moderators), who may remove subscribers keeps its group, and the settings that are new
(administering the channel, adding subscribers, subscribing oneself) are "nobody", as
Zulip's own migrations gave channels whose creator is unknown. The creator of an existing
stream is unknown (NULL); every existing stream counts as recently active until a message
or a quiet period says otherwise.

Only columns are added: rebuilding ``stream`` on SQLite would cascade to the tables that
reference it, so the two columns the JSON replaces stay, unread, and ``creator_id`` has no
foreign key.

Revision ID: 0027
Revises: 0026
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

_POST_POLICY_GROUPS = {
    1: "role:everyone",
    2: "role:administrators",
    3: "role:fullmembers",
    4: "role:moderators",
}


def upgrade() -> None:
    op.add_column("stream", sa.Column("creator_id", sa.Integer(), nullable=True))
    op.add_column(
        "stream",
        sa.Column("is_recently_active", sa.Boolean(), server_default=sa.true(), nullable=False),
    )
    op.add_column(
        "stream",
        sa.Column("permission_settings", sa.Text(), server_default="{}", nullable=False),
    )
    conn = op.get_bind()
    groups = conn.execute(
        sa.text("SELECT id, realm_id, name FROM user_group WHERE is_system_group")
    ).all()
    system = {(realm_id, name): group_id for group_id, realm_id, name in groups}
    streams = conn.execute(
        sa.text(
            "SELECT id, realm_id, stream_post_policy, can_remove_subscribers_group_id FROM stream"
        )
    ).all()
    for stream_id, realm_id, policy, remove_group in streams:
        nobody = system[(realm_id, "role:nobody")]
        values = {
            "can_add_subscribers_group": nobody,
            "can_administer_channel_group": nobody,
            "can_remove_subscribers_group": remove_group,
            "can_send_message_group": system[
                (realm_id, _POST_POLICY_GROUPS.get(policy, "role:everyone"))
            ],
            "can_subscribe_group": nobody,
        }
        conn.execute(
            sa.text("UPDATE stream SET permission_settings = :settings WHERE id = :id"),
            {"settings": json.dumps(values, sort_keys=True), "id": stream_id},
        )


def downgrade() -> None:
    # Plain column drops (SQLite 3.35+ too), which rebuild nothing.
    for column in ("permission_settings", "is_recently_active", "creator_id"):
        op.execute(f"ALTER TABLE stream DROP COLUMN {column}")
