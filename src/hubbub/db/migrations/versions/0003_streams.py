"""streams, subscriptions, user groups, user topics

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "user_group",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("is_system_group", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("can_mention_group_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["can_mention_group_id"],
            ["user_group.id"],
            name=op.f("fk_user_group_can_mention_group_id_user_group"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["realm_id"],
            ["realm.id"],
            name=op.f("fk_user_group_realm_id_realm"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_group")),
        sa.UniqueConstraint("realm_id", "name", name=op.f("uq_user_group_realm_id_name")),
    )
    op.create_table(
        "group_group_membership",
        sa.Column("supergroup_id", sa.Integer(), nullable=False),
        sa.Column("subgroup_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["subgroup_id"],
            ["user_group.id"],
            name=op.f("fk_group_group_membership_subgroup_id_user_group"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["supergroup_id"],
            ["user_group.id"],
            name=op.f("fk_group_group_membership_supergroup_id_user_group"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "supergroup_id", "subgroup_id", name=op.f("pk_group_group_membership")
        ),
    )
    op.create_table(
        "stream",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=60), nullable=False),
        sa.Column("description", sa.String(length=1024), server_default="", nullable=False),
        sa.Column("rendered_description", sa.Text(), server_default="", nullable=False),
        sa.Column("date_created", sa.Double(), nullable=False),
        sa.Column("deactivated", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("invite_only", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("is_web_public", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column(
            "history_public_to_subscribers", sa.Boolean(), server_default=sa.true(), nullable=False
        ),
        sa.Column("stream_post_policy", sa.SmallInteger(), server_default="1", nullable=False),
        sa.Column("message_retention_days", sa.Integer(), nullable=True),
        sa.Column("can_remove_subscribers_group_id", sa.Integer(), nullable=False),
        sa.Column("first_message_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["can_remove_subscribers_group_id"],
            ["user_group.id"],
            name=op.f("fk_stream_can_remove_subscribers_group_id_user_group"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_stream_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_stream")),
    )
    op.create_table(
        "user_group_membership",
        sa.Column("user_group_id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_group_id"],
            ["user_group.id"],
            name=op.f("fk_user_group_membership_user_group_id_user_group"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_user_group_membership_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "user_group_id", "user_profile_id", name=op.f("pk_user_group_membership")
        ),
    )
    with op.batch_alter_table("user_group_membership", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_user_group_membership_user_profile_id"),
            ["user_profile_id"],
            unique=False,
        )

    op.create_table(
        "default_stream",
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("stream_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"],
            ["realm.id"],
            name=op.f("fk_default_stream_realm_id_realm"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["stream_id"],
            ["stream.id"],
            name=op.f("fk_default_stream_stream_id_stream"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("realm_id", "stream_id", name=op.f("pk_default_stream")),
    )
    op.create_table(
        "subscription",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("stream_id", sa.Integer(), nullable=False),
        sa.Column("active", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column("color", sa.String(length=10), nullable=False),
        sa.Column("is_muted", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("pin_to_top", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("desktop_notifications", sa.Boolean(), nullable=True),
        sa.Column("audible_notifications", sa.Boolean(), nullable=True),
        sa.Column("push_notifications", sa.Boolean(), nullable=True),
        sa.Column("email_notifications", sa.Boolean(), nullable=True),
        sa.Column("wildcard_mentions_notify", sa.Boolean(), nullable=True),
        sa.ForeignKeyConstraint(
            ["stream_id"],
            ["stream.id"],
            name=op.f("fk_subscription_stream_id_stream"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_subscription_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscription")),
        sa.UniqueConstraint(
            "user_profile_id", "stream_id", name=op.f("uq_subscription_user_profile_id_stream_id")
        ),
    )
    with op.batch_alter_table("subscription", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_subscription_stream_id"), ["stream_id"], unique=False)

    op.create_table(
        "user_topic",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("stream_id", sa.Integer(), nullable=False),
        sa.Column("topic_name", sa.String(length=60), nullable=False),
        sa.Column("last_updated", sa.Double(), nullable=False),
        sa.Column("visibility_policy", sa.SmallInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["stream_id"],
            ["stream.id"],
            name=op.f("fk_user_topic_stream_id_stream"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_user_topic_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_topic")),
    )
    with op.batch_alter_table("user_topic", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_user_topic_stream_id"), ["stream_id"], unique=False)
    op.create_index(
        "uq_user_topic_user_stream_topic",
        "user_topic",
        ["user_profile_id", "stream_id", sa.text("lower(topic_name)")],
        unique=True,
    )
    # Names are unique among active streams only: archiving frees the name.
    op.create_index(
        "uq_stream_realm_name_active",
        "stream",
        ["realm_id", sa.text("lower(name)")],
        unique=True,
        sqlite_where=sa.text("deactivated = 0"),
        postgresql_where=sa.text("deactivated = false"),
    )

    _create_system_groups_for_existing_realms()


# Frozen copy of the system groups as of this revision (see actions/user_groups.py).
_GROUPS = (
    ("role:internet", "Everyone on the internet", "role:everyone"),
    ("role:everyone", "Everyone including guests", "role:members"),
    ("role:members", "Everyone except guests", "role:fullmembers"),
    (
        "role:fullmembers",
        "Members of this organization, not including new accounts and guests",
        "role:moderators",
    ),
    (
        "role:moderators",
        "Moderators of this organization, including administrators",
        "role:administrators",
    ),
    (
        "role:administrators",
        "Administrators of this organization, including owners",
        "role:owners",
    ),
    ("role:owners", "Owners of this organization", None),
    ("role:nobody", "Nobody", None),
)
_ROLE_GROUPS = {
    100: ("role:owners",),
    200: ("role:administrators",),
    300: ("role:moderators",),
    400: ("role:members", "role:fullmembers"),
    600: ("role:everyone",),
}


def _create_system_groups_for_existing_realms() -> None:
    bind = op.get_bind()
    groups = sa.table(
        "user_group",
        sa.column("id", sa.Integer),
        sa.column("realm_id", sa.Integer),
        sa.column("name", sa.String),
        sa.column("description", sa.Text),
        sa.column("is_system_group", sa.Boolean),
        sa.column("can_mention_group_id", sa.Integer),
    )
    links = sa.table("group_group_membership", sa.column("supergroup_id"), sa.column("subgroup_id"))
    members = sa.table(
        "user_group_membership", sa.column("user_group_id"), sa.column("user_profile_id")
    )
    for (realm_id,) in bind.execute(sa.text("SELECT id FROM realm")).all():
        ids = {}
        for name, description, _ in _GROUPS:
            ids[name] = bind.execute(
                sa.insert(groups)
                .values(realm_id=realm_id, name=name, description=description, is_system_group=True)
                .returning(groups.c.id)
            ).scalar_one()
        bind.execute(
            sa.update(groups)
            .where(groups.c.realm_id == realm_id)
            .values(can_mention_group_id=ids["role:nobody"])
        )
        for name, _, sub in _GROUPS:
            if sub is not None:
                bind.execute(sa.insert(links).values(supergroup_id=ids[name], subgroup_id=ids[sub]))
        users = bind.execute(
            sa.text("SELECT id, role FROM user_profile WHERE realm_id = :r"), {"r": realm_id}
        ).all()
        for user_id, role in users:
            for name in _ROLE_GROUPS[role]:
                bind.execute(
                    sa.insert(members).values(user_group_id=ids[name], user_profile_id=user_id)
                )


def downgrade() -> None:
    op.drop_index("uq_stream_realm_name_active", table_name="stream")
    op.drop_index("uq_user_topic_user_stream_topic", table_name="user_topic")
    with op.batch_alter_table("user_topic", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_user_topic_stream_id"))

    op.drop_table("user_topic")
    with op.batch_alter_table("subscription", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_subscription_stream_id"))

    op.drop_table("subscription")
    op.drop_table("default_stream")
    with op.batch_alter_table("user_group_membership", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_user_group_membership_user_profile_id"))

    op.drop_table("user_group_membership")
    op.drop_table("stream")
    op.drop_table("group_group_membership")
    op.drop_table("user_group")
