"""Every table, in one place (SQLAlchemy Core).

The naming convention makes constraint and index names identical on SQLite and PostgreSQL,
so migrations written once apply to both. Times are stored as UNIX seconds (float) so both
dialects agree on them without time-zone conversions.
"""

from __future__ import annotations

import sqlalchemy as sa

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)

realm = sa.Table(
    "realm",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    # The subdomain; "" is the realm served at the root domain.
    sa.Column("string_id", sa.String(40), nullable=False, unique=True),
    sa.Column("name", sa.String(40), nullable=False),
    sa.Column("description", sa.Text, nullable=False, server_default=""),
    sa.Column("date_created", sa.Double, nullable=False),
    sa.Column("deactivated", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("password_auth_enabled", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("enable_spectator_access", sa.Boolean, nullable=False, server_default=sa.false()),
    # Realm-wide default for new users' email_address_visibility (1 = everyone).
    sa.Column(
        "default_email_address_visibility", sa.SmallInteger, nullable=False, server_default="1"
    ),
    # JSON object of the settings in realm_settings.py that differ from their defaults.
    sa.Column("settings", sa.Text, nullable=False, server_default="{}"),
)

user_profile = sa.Table(
    "user_profile",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
    # The address other users and the API see; equals delivery_email unless the user's
    # email_address_visibility hides it (then a dummy "user<ID>@hubbub.invalid" address).
    sa.Column("email", sa.String(254), nullable=False),
    # The real address the user logs in with.
    sa.Column("delivery_email", sa.String(254), nullable=False),
    sa.Column("full_name", sa.String(100), nullable=False),
    # Argon2 hash; NULL means the account cannot log in with a password.
    sa.Column("password_hash", sa.String(255), nullable=True),
    sa.Column("api_key", sa.String(32), nullable=False, unique=True),
    sa.Column("role", sa.SmallInteger, nullable=False),
    sa.Column("is_active", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("is_billing_admin", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("is_bot", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("bot_type", sa.SmallInteger, nullable=True),
    sa.Column("bot_owner_id", sa.ForeignKey("user_profile.id", ondelete="SET NULL"), nullable=True),
    sa.Column("date_joined", sa.Double, nullable=False),
    sa.Column("timezone", sa.String(40), nullable=False, server_default=""),
    # "G": Gravatar (computed from the email), "U": uploaded.
    sa.Column("avatar_source", sa.String(1), nullable=False, server_default="G"),
    sa.Column("avatar_version", sa.Integer, nullable=False, server_default="1"),
    sa.Column("email_address_visibility", sa.SmallInteger, nullable=False, server_default="1"),
    sa.Index(
        "uq_user_profile_realm_delivery_email",
        "realm_id",
        sa.func.lower(sa.column("delivery_email")),
        unique=True,
    ),
    sa.Index(
        "uq_user_profile_realm_email", "realm_id", sa.func.lower(sa.column("email")), unique=True
    ),
)

custom_profile_field = sa.Table(
    "custom_profile_field",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False, index=True
    ),
    sa.Column("name", sa.String(40), nullable=False),
    sa.Column("hint", sa.String(80), nullable=False, server_default=""),
    sa.Column("field_type", sa.SmallInteger, nullable=False),
    # JSON text: choices of a select field, subtype of an external account field.
    sa.Column("field_data", sa.Text, nullable=False, server_default=""),
    sa.Column("order", sa.Integer, nullable=False),
    sa.Column("display_in_profile_summary", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.UniqueConstraint("realm_id", "name"),
)

custom_profile_field_value = sa.Table(
    "custom_profile_field_value",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "user_profile_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column(
        "field_id",
        sa.ForeignKey("custom_profile_field.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("value", sa.Text, nullable=False),
    # HTML for the text-like field types (short and long text); NULL for the others.
    sa.Column("rendered_value", sa.Text, nullable=True),
    sa.UniqueConstraint("user_profile_id", "field_id"),
)

user_group = sa.Table(
    "user_group",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
    sa.Column("name", sa.String(100), nullable=False),
    sa.Column("description", sa.Text, nullable=False, server_default=""),
    # System groups ("role:members", ...) follow user roles and cannot be edited by users.
    sa.Column("is_system_group", sa.Boolean, nullable=False, server_default=sa.false()),
    # Who may mention this group; NULL only while the realm's system groups are being made.
    sa.Column(
        "can_mention_group_id",
        sa.ForeignKey("user_group.id", ondelete="RESTRICT"),
        nullable=True,
    ),
    sa.UniqueConstraint("realm_id", "name"),
)

# Direct members only; members of subgroups are members too (see group_group_membership).
user_group_membership = sa.Table(
    "user_group_membership",
    metadata,
    sa.Column(
        "user_group_id", sa.ForeignKey("user_group.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column(
        "user_profile_id",
        sa.ForeignKey("user_profile.id", ondelete="CASCADE"),
        primary_key=True,
        index=True,
    ),
)

group_group_membership = sa.Table(
    "group_group_membership",
    metadata,
    sa.Column(
        "supergroup_id", sa.ForeignKey("user_group.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("subgroup_id", sa.ForeignKey("user_group.id", ondelete="CASCADE"), primary_key=True),
)

stream = sa.Table(
    "stream",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
    sa.Column("name", sa.String(60), nullable=False),
    sa.Column("description", sa.String(1024), nullable=False, server_default=""),
    sa.Column("rendered_description", sa.Text, nullable=False, server_default=""),
    sa.Column("date_created", sa.Double, nullable=False),
    # Archived streams keep their rows (messages will point at them) but free their name.
    sa.Column("deactivated", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("invite_only", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("is_web_public", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column(
        "history_public_to_subscribers", sa.Boolean, nullable=False, server_default=sa.true()
    ),
    sa.Column("stream_post_policy", sa.SmallInteger, nullable=False, server_default="1"),
    # NULL: the realm's setting; -1: forever.
    sa.Column("message_retention_days", sa.Integer, nullable=True),
    sa.Column(
        "can_remove_subscribers_group_id",
        sa.ForeignKey("user_group.id", ondelete="RESTRICT"),
        nullable=False,
    ),
    sa.Column("first_message_id", sa.Integer, nullable=True),
    sa.Index(
        "uq_stream_realm_name_active",
        "realm_id",
        sa.func.lower(sa.column("name")),
        unique=True,
        sqlite_where=sa.column("deactivated") == sa.false(),
        postgresql_where=sa.column("deactivated") == sa.false(),
    ),
)

subscription = sa.Table(
    "subscription",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "user_profile_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column(
        "stream_id", sa.ForeignKey("stream.id", ondelete="CASCADE"), nullable=False, index=True
    ),
    # False once unsubscribed: the row keeps the user's settings for a later re-subscribe
    # and puts the stream in the user's "unsubscribed" list.
    sa.Column("active", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("color", sa.String(10), nullable=False),
    sa.Column("is_muted", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("pin_to_top", sa.Boolean, nullable=False, server_default=sa.false()),
    # NULL: follow the user's global notification setting.
    sa.Column("desktop_notifications", sa.Boolean, nullable=True),
    sa.Column("audible_notifications", sa.Boolean, nullable=True),
    sa.Column("push_notifications", sa.Boolean, nullable=True),
    sa.Column("email_notifications", sa.Boolean, nullable=True),
    sa.Column("wildcard_mentions_notify", sa.Boolean, nullable=True),
    sa.UniqueConstraint("user_profile_id", "stream_id"),
)

default_stream = sa.Table(
    "default_stream",
    metadata,
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("stream_id", sa.ForeignKey("stream.id", ondelete="CASCADE"), primary_key=True),
)

user_topic = sa.Table(
    "user_topic",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "user_profile_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column(
        "stream_id", sa.ForeignKey("stream.id", ondelete="CASCADE"), nullable=False, index=True
    ),
    sa.Column("topic_name", sa.String(60), nullable=False),
    sa.Column("last_updated", sa.Double, nullable=False),
    # 1 muted, 2 unmuted, 3 followed; "none" (0) deletes the row.
    sa.Column("visibility_policy", sa.SmallInteger, nullable=False),
    sa.Index(
        "uq_user_topic_user_stream_topic",
        "user_profile_id",
        "stream_id",
        sa.func.lower(sa.column("topic_name")),
        unique=True,
    ),
)
