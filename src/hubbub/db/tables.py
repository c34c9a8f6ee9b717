"""Every table, in one place (SQLAlchemy Core).

The naming convention makes constraint and index names identical on SQLite and PostgreSQL,
so migrations written once apply to both. Times are stored as UNIX seconds (float) so both
dialects agree on them without time-zone conversions.
"""

from __future__ import annotations

from typing import Any

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
    # Logins look an email up in every realm (migration 0013).
    sa.Index("ix_user_profile_email", sa.func.lower(sa.column("email"))),
    sa.Index("ix_user_profile_delivery_email", sa.func.lower(sa.column("delivery_email"))),
)

# How many times each realm's people (user_profile, user_group and group membership rows)
# have changed, counted by triggers (migrations 0017 and 0018), so that a process can
# tell, with one read in the same transaction, whether the realm's users and groups it
# keeps are still current (``queries/people.PeopleCache``). No row: no change since the
# migration (version 0). No foreign key: a realm's deletion deletes its users, whose
# triggers write here.
realm_people_version = sa.Table(
    "realm_people_version",
    metadata,
    sa.Column("realm_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("version", sa.BigInteger, nullable=False, server_default="0"),
)

# How many times each stream's subscribers (its subscription rows' user, stream and
# ``active``) have changed, counted by triggers (migration 0020), so that a send can tell
# from the statement that reads its stream whether the subscribers a process keeps are
# still current (``queries/subscriber_cache.py``). No row: no change since the migration
# (version 0). No foreign key: the count outlives its stream, so that it only grows.
stream_subscribers_version = sa.Table(
    "stream_subscribers_version",
    metadata,
    sa.Column("stream_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("version", sa.BigInteger, nullable=False, server_default="0"),
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
    # Feature level 244: the web client asks users to fill in a required field (the
    # server does not enforce it, as in Zulip).
    sa.Column("required", sa.Boolean, nullable=False, server_default=sa.false()),
    # Feature level 296: whether users other than administrators may change their value.
    sa.Column("editable_by_user", sa.Boolean, nullable=False, server_default=sa.true()),
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
    # Unused since migration 0028 (always NULL; can_mention_group lives in ``settings``):
    # SQLite cannot drop a column under a foreign key without rebuilding the table.
    sa.Column(
        "can_mention_group_id",
        sa.ForeignKey("user_group.id", ondelete="RESTRICT"),
        nullable=True,
    ),
    # Who created the group (feature level 292); NULL for system groups and for groups
    # made before migration 0028. No foreign key: users are deactivated, never deleted.
    sa.Column("creator_id", sa.Integer, nullable=True),
    sa.Column("date_created", sa.Double, nullable=True),
    # Deactivated groups (feature level 290) keep their rows, name and members.
    sa.Column("deactivated", sa.Boolean, nullable=False, server_default=sa.false()),
    # The group's group-valued permission settings, JSON: setting name -> a group id or
    # an anonymous group {"direct_members": [...], "direct_subgroups": [...]}.
    sa.Column("settings", sa.Text, nullable=False, server_default="{}"),
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
    # Zulip 10.x (migration 0027). NULL for a stream of unknown creator (feature level 254).
    # A user id without a foreign key: users are deactivated, never deleted, and SQLite can
    # add a referencing column to an existing table only by rebuilding it.
    sa.Column("creator_id", sa.Integer, nullable=True),
    # Feature level 323: false once the stream has had no message for a long while.
    sa.Column("is_recently_active", sa.Boolean, nullable=False, server_default=sa.true()),
    # JSON object of the stream's group-valued permission settings (every one of
    # STREAM_PERMISSION_GROUP_SETTINGS, as group ids or anonymous groups). It replaced
    # can_remove_subscribers_group_id, which stays (unread) because SQLite cannot drop a
    # referenced table's column without rebuilding the table; stream_post_policy now holds
    # the deprecated value derived from can_send_message_group.
    sa.Column("permission_settings", sa.Text, nullable=False, server_default="{}"),
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

# Per-user settings (``PATCH /settings``): a JSON object of the values that differ from
# Zulip's defaults (user_settings.py). A new user's row copies the realm's defaults.
user_setting = sa.Table(
    "user_setting",
    metadata,
    sa.Column(
        "user_profile_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("settings", sa.Text, nullable=False, server_default="{}"),
)

# The realm's defaults for new users' settings (``PATCH /realm/user_settings_defaults``),
# stored the same way.
realm_user_default = sa.Table(
    "realm_user_default",
    metadata,
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("settings", sa.Text, nullable=False, server_default="{}"),
)

draft = sa.Table(
    "draft",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "user_profile_id",
        sa.ForeignKey("user_profile.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    # "stream", "private" or "" (a draft with no recipient yet).
    sa.Column("type", sa.String(10), nullable=False),
    # JSON list: [stream_id] or the recipients' user ids.
    sa.Column("to", sa.Text, nullable=False, server_default="[]"),
    sa.Column("topic", sa.String(60), nullable=False, server_default=""),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("last_edit_time", sa.Double, nullable=False),
)

# A user's saved snippets (feature level 297): reusable message texts, only for their owner.
saved_snippet = sa.Table(
    "saved_snippet",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "user_profile_id",
        sa.ForeignKey("user_profile.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    # Seconds since the epoch.
    sa.Column("date_created", sa.Double, nullable=False),
)

realm_linkifier = sa.Table(
    "realm_linkifier",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False, index=True
    ),
    sa.Column("pattern", sa.Text, nullable=False),
    sa.Column("url_template", sa.Text, nullable=False),
    # Linkifiers apply in this order (``PATCH /realm/linkifiers``, feature level 202).
    sa.Column("order", sa.Integer, nullable=False),
    sa.UniqueConstraint("realm_id", "pattern"),
)

muted_user = sa.Table(
    "muted_user",
    metadata,
    sa.Column(
        "user_profile_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column(
        "muted_user_id",
        sa.ForeignKey("user_profile.id", ondelete="CASCADE"),
        primary_key=True,
        index=True,
    ),
    sa.Column("date_muted", sa.Double, nullable=False),
)

alert_word = sa.Table(
    "alert_word",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "user_profile_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
    sa.Column("word", sa.String(100), nullable=False),
    sa.Index(
        "uq_alert_word_user_word",
        "user_profile_id",
        sa.func.lower(sa.column("word")),
        unique=True,
    ),
    sa.Index("ix_alert_word_realm_id", "realm_id"),
)

user_presence = sa.Table(
    "user_presence",
    metadata,
    sa.Column(
        "user_profile_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column(
        "realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False, index=True
    ),
    # UNIX seconds; NULL until the user first reports that state.
    sa.Column("last_connected_time", sa.Double, nullable=True),
    sa.Column("last_active_time", sa.Double, nullable=True),
    # The realm's presence_sequence value taken by the write that last changed the row
    # (feature level 263): clients ask for the rows changed after the id they last saw.
    # 0 for a row written without one (by hand), which such clients already count as seen.
    sa.Column("last_update_id", sa.BigInteger, nullable=False, server_default="0"),
)

# Each realm's last presence update id (migration 0026). A write takes the next value
# with an upsert that holds the row locked until its transaction commits, so that a
# realm's ids are handed out in the order their writes commit: a client that has seen id
# N has seen every write with a smaller id. No row: no presence write since the
# migration. No foreign key: the count only grows, like realm_people_version's.
presence_sequence = sa.Table(
    "presence_sequence",
    metadata,
    sa.Column("realm_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("last_update_id", sa.BigInteger, nullable=False, server_default="0"),
)

user_status = sa.Table(
    "user_status",
    metadata,
    sa.Column(
        "user_profile_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
    sa.Column("status_text", sa.String(60), nullable=False, server_default=""),
    sa.Column("emoji_name", sa.String(100), nullable=False, server_default=""),
    sa.Column("emoji_code", sa.String(100), nullable=False, server_default=""),
    sa.Column("reaction_type", sa.String(30), nullable=False, server_default="unicode_emoji"),
    sa.Column("timestamp", sa.Double, nullable=False),
)

# Who a message is addressed to, as Zulip models it (clients see ``recipient_id``):
# type 1 a user (direct message to one person, or to oneself), 2 a stream, 3 a group of
# users (``direct_message_group``). Rows are made on first use.
recipient = sa.Table(
    "recipient",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("type", sa.SmallInteger, nullable=False),
    sa.Column("type_id", sa.Integer, nullable=False),
    sa.UniqueConstraint("type", "type_id"),
)

# A direct-message conversation among three or more users, identified by its member set.
direct_message_group = sa.Table(
    "direct_message_group",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
    # SHA-1 of the sorted member ids, so the same people always meet in the same group.
    sa.Column("group_hash", sa.String(40), nullable=False, unique=True),
    sa.Column("group_size", sa.Integer, nullable=False),
)

direct_message_group_member = sa.Table(
    "direct_message_group_member",
    metadata,
    sa.Column(
        "group_id",
        sa.ForeignKey("direct_message_group.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column(
        "user_profile_id",
        sa.ForeignKey("user_profile.id", ondelete="CASCADE"),
        primary_key=True,
        index=True,
    ),
)

message = sa.Table(
    "message",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
    sa.Column("sender_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), nullable=False),
    sa.Column("recipient_id", sa.ForeignKey("recipient.id"), nullable=False),
    # Zulip's "subject"; "" for direct messages.
    sa.Column("topic", sa.String(60), nullable=False, server_default=""),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("rendered_content", sa.Text, nullable=True),
    sa.Column("rendered_content_version", sa.Integer, nullable=True),
    sa.Column("date_sent", sa.Double, nullable=False),
    # The client name (User-Agent before the first "/").
    sa.Column("sending_client", sa.String(30), nullable=False),
    sa.Column("last_edit_time", sa.Double, nullable=True),
    # JSON list of edit records, newest first (the lifecycle issue).
    sa.Column("edit_history", sa.Text, nullable=True),
    sa.Column("has_attachment", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("has_image", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("has_link", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("is_me_message", sa.Boolean, nullable=False, server_default=sa.false()),
    # Stream messages of one topic, newest last: the stream+topic narrow.
    sa.Index(
        "ix_message_recipient_topic_id",
        "recipient_id",
        sa.func.lower(sa.column("topic")),
        "id",
    ),
    sa.Index("ix_message_recipient_id_id", "recipient_id", "id"),
    sa.Index("ix_message_sender_id_id", "sender_id", "id"),
    sa.Index("ix_message_realm_id_id", "realm_id", "id"),
    # Message ids are never reused, even after the newest message is deleted: clients
    # cache messages by id (SQLite otherwise reuses the largest rowid).
    sqlite_autoincrement=True,
)

# One row per recipient of a message, with Zulip's flag bits (read=1, starred=2,
# mentioned=8, stream_wildcard_mentioned=16, topic_wildcard_mentioned=32,
# group_mentioned=64, has_alert_word=512, historical=1024, is_private=2048).
user_message = sa.Table(
    "user_message",
    metadata,
    sa.Column("user_profile_id", sa.Integer, primary_key=True),
    sa.Column("message_id", sa.Integer, primary_key=True),
    sa.Column("flags", sa.BigInteger, nullable=False, server_default="0"),
    # SQLite only: on PostgreSQL each row's check is a trigger that locks the referenced
    # row, most of a big send's insert (migration 0011). hubbub keeps the references
    # itself: it deletes a message's rows before the message, and never deletes users.
    sa.ForeignKeyConstraint(["user_profile_id"], ["user_profile.id"], ondelete="CASCADE").ddl_if(
        dialect="sqlite"
    ),
    sa.ForeignKeyConstraint(["message_id"], ["message.id"], ondelete="CASCADE").ddl_if(
        dialect="sqlite"
    ),
    sa.Index("ix_user_message_message_id", "message_id"),
    # PostgreSQL only: unread messages per user (unread counts, first_unread,
    # mark-all-read), with their flags, so /register reads them without visiting the heap
    # (migration 0015). On SQLite the table itself is that index (no rowid, migration
    # 0016): a user's rows with their flags are one range of the primary key, and every
    # recipient's entry in a second user-major B-tree doubled a big send's page writes.
    sa.Index(
        "ix_user_message_unread",
        "user_profile_id",
        "message_id",
        "flags",
        postgresql_where=sa.text("(flags & 1) = 0"),
    ).ddl_if(dialect="postgresql"),
    # Starred messages per user.
    sa.Index(
        "ix_user_message_starred",
        "user_profile_id",
        "message_id",
        sqlite_where=sa.text("(flags & 2) != 0"),
        postgresql_where=sa.text("(flags & 2) != 0"),
    ),
    # Direct-message rows per user (recent_private_conversations).
    sa.Index(
        "ix_user_message_private",
        "user_profile_id",
        "message_id",
        sqlite_where=sa.text("(flags & 2048) != 0"),
        postgresql_where=sa.text("(flags & 2048) != 0"),
    ),
    sqlite_with_rowid=False,
)

# On SQLite (migration 0019) and PostgreSQL (migration 0021) ``user_message`` is a view of
# two tables, the rows of ``user_message_rows`` (keyed user-major as above) and those of
# ``user_message_staged`` (keyed message-major). A send's rows go into the staged table: a
# send to 1,000 subscribers appends to its few last pages instead of writing one leaf of
# each recipient's range of every user-major index (on SQLite a page per recipient,
# written with the single writer held; on PostgreSQL an index entry per recipient in
# each index, most of a big send's time). A
# background job moves them into ``user_message_rows`` every second, in slices of users,
# so that each recipient's leaf is written once for all of the second's messages
# (``sqlite_staged.settle_staged``, ``postgresql.settle_staged``). Reads name
# ``user_message`` and see both; writes name the tables (``dialects.user_message_tables``):
# a view takes no UPDATE or DELETE. ``user_message`` above declares the columns that
# reads name, and the schema the rows table was renamed from.
sqlite_metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)
postgresql_metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


def _renamed_rows(target: sa.MetaData, dialect: str) -> sa.Table:
    """user_message as the migrations renamed it on ``dialect``: its columns, key, and the
    foreign keys and indexes that ``dialect`` holds (their names kept: a rename keeps
    them). A copy drops ``ddl_if``, so what it keeps to the other dialect goes here
    (SQLite's foreign keys, PostgreSQL's unread index)."""

    def elsewhere(item: Any) -> bool:
        only = getattr(item, "_ddl_if", None)
        return only is not None and only.dialect not in (None, dialect)

    gone_indexes = {i.name for i in user_message.indexes if elsewhere(i)}
    gone_keys = {
        tuple(c.column_keys)
        for c in user_message.constraints
        if isinstance(c, sa.ForeignKeyConstraint) and elsewhere(c)
    }
    rows = user_message.to_metadata(target, name="user_message_rows")
    rows.indexes -= {i for i in rows.indexes if i.name in gone_indexes}
    for key in [c for c in rows.constraints if isinstance(c, sa.ForeignKeyConstraint)]:
        if tuple(key.column_keys) in gone_keys:
            rows.constraints.discard(key)
            for column in key.columns:
                column.foreign_keys.difference_update(key.elements)
            rows.foreign_keys.difference_update(key.elements)
    return rows


user_message_rows = _renamed_rows(sqlite_metadata, "sqlite")
_renamed_rows(postgresql_metadata, "postgresql")

# A second or so of sends' rows. No foreign keys: on SQLite each row is checked when it
# moves into user_message_rows (checking them at the send would hold the writer longer),
# and a message's rows are deleted before the message in both tables. The user index (flags
# included) answers a user's rows; it is small, so a big send's entries fall into a few
# dozen of its leaves.
user_message_staged = sa.Table(
    "user_message_staged",
    sqlite_metadata,
    sa.Column("message_id", sa.Integer, primary_key=True),
    sa.Column("user_profile_id", sa.Integer, primary_key=True),
    sa.Column("flags", sa.BigInteger, nullable=False, server_default="0"),
    sa.Index("ix_user_message_staged_user", "user_profile_id", "message_id", "flags"),
    sqlite_with_rowid=False,
)
user_message_staged.to_metadata(postgresql_metadata)

# One user's emoji reaction to a message. The key is the emoji's code (and type), not its
# name: Zulip treats two names of one emoji as the same reaction.
reaction = sa.Table(
    "reaction",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("message_id", sa.ForeignKey("message.id", ondelete="CASCADE"), nullable=False),
    sa.Column(
        "user_profile_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("emoji_name", sa.String(64), nullable=False),
    sa.Column("emoji_code", sa.String(64), nullable=False),
    # "unicode_emoji", "realm_emoji" or "zulip_extra_emoji".
    sa.Column("reaction_type", sa.String(30), nullable=False),
    sa.UniqueConstraint("user_profile_id", "message_id", "emoji_code", "reaction_type"),
    sa.Index("ix_reaction_message_id", "message_id"),
)

# Widget data attached to a message (polls, to-do lists), newest last.
submessage = sa.Table(
    "submessage",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("message_id", sa.ForeignKey("message.id", ondelete="CASCADE"), nullable=False),
    sa.Column("sender_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), nullable=False),
    sa.Column("msg_type", sa.String(100), nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Index("ix_submessage_message_id", "message_id"),
)

# A message to be sent later as its sender (Zulip's ScheduledMessage, feature level 179).
scheduled_message = sa.Table(
    "scheduled_message",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
    sa.Column("sender_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), nullable=False),
    # "stream" or "private".
    sa.Column("message_type", sa.String(10), nullable=False),
    sa.Column("stream_id", sa.ForeignKey("stream.id", ondelete="CASCADE"), nullable=True),
    # Direct messages: JSON list of the recipients' user ids.
    sa.Column("to_user_ids", sa.Text, nullable=True),
    sa.Column("topic", sa.String(60), nullable=False, server_default=""),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("rendered_content", sa.Text, nullable=False),
    sa.Column("scheduled_timestamp", sa.Double, nullable=False),
    sa.Column("read_by_sender", sa.Boolean, nullable=True),
    sa.Column("sending_client", sa.String(30), nullable=False),
    sa.Column("delivered", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column(
        "delivered_message_id", sa.ForeignKey("message.id", ondelete="SET NULL"), nullable=True
    ),
    sa.Column("failed", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("failure_message", sa.Text, nullable=True),
    sa.Index("ix_scheduled_message_sender_id", "sender_id"),
    # Pending messages by due time: what the scheduler claims next.
    sa.Index(
        "ix_scheduled_message_due",
        "scheduled_timestamp",
        sqlite_where=sa.text("NOT delivered AND NOT failed"),
        postgresql_where=sa.text("NOT delivered AND NOT failed"),
    ),
)

# An uploaded file; ``path_id`` is "<realm id>/<random>/<file name>" under the upload root.
attachment = sa.Table(
    "attachment",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
    sa.Column("owner_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), nullable=False),
    sa.Column("path_id", sa.String(255), nullable=False, unique=True),
    sa.Column("file_name", sa.String(255), nullable=False),
    sa.Column("content_type", sa.String(255), nullable=True),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("create_time", sa.Double, nullable=False),
    sa.Index("ix_attachment_owner_id", "owner_id"),
)

# Which messages reference which uploads (relinked on edit).
attachment_message = sa.Table(
    "attachment_message",
    metadata,
    sa.Column(
        "attachment_id", sa.ForeignKey("attachment.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("message_id", sa.ForeignKey("message.id", ondelete="CASCADE"), primary_key=True),
    sa.Index("ix_attachment_message_message_id", "message_id"),
)

# Which scheduled messages reference which uploads.
scheduled_attachment = sa.Table(
    "scheduled_attachment",
    metadata,
    sa.Column(
        "attachment_id", sa.ForeignKey("attachment.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column(
        "scheduled_id", sa.ForeignKey("scheduled_message.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Index("ix_scheduled_attachment_scheduled_id", "scheduled_id"),
)

# A mobile device registered for push notifications (kind 1 APNs, 2 FCM/GCM, Zulip's).
push_device = sa.Table(
    "push_device",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "user_profile_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("kind", sa.SmallInteger, nullable=False),
    sa.Column("token", sa.String(4096), nullable=False),
    sa.Column("ios_app_id", sa.String(255), nullable=True),
    sa.Column("last_updated", sa.Double, nullable=False),
    sa.UniqueConstraint("user_profile_id", "kind", "token"),
)

# Push notifications waiting to be delivered by the background scheduler.
push_notification_queue = sa.Table(
    "push_notification_queue",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "user_profile_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("message_id", sa.ForeignKey("message.id", ondelete="CASCADE"), nullable=False),
    # Why the user is notified: "direct_message", "mentioned", "stream_wildcard_mentioned", ...
    sa.Column("trigger", sa.String(40), nullable=False),
    sa.Column("due_time", sa.Double, nullable=False),
    sa.Index("ix_push_notification_queue_due_time", "due_time"),
    sa.Index("ix_push_notification_queue_message_id", "message_id"),
)

# Sends that named their client's event queue and local id, so a retried request returns
# the first message instead of posting it again (actions/send_retries.py). Pruned daily.
send_key = sa.Table(
    "send_key",
    metadata,
    sa.Column("sender_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("queue_id", sa.String(64), primary_key=True),
    sa.Column("local_id", sa.String(64), primary_key=True),
    sa.Column("message_id", sa.ForeignKey("message.id", ondelete="CASCADE"), nullable=False),
    sa.Column("date_sent", sa.Double, nullable=False),
    sa.Index("ix_send_key_message_id", "message_id"),
    sa.Index("ix_send_key_date_sent", "date_sent"),
)


# A custom emoji of the realm (``/realm/emoji``). A deactivated emoji keeps its row, so
# that reactions and old messages that use it still render; only one active emoji of a
# realm may have a name.
realm_emoji = sa.Table(
    "realm_emoji",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
    sa.Column("name", sa.String(60), nullable=False),
    # The stored image's file name under the realm's emoji folder; NULL until stored.
    sa.Column("file_name", sa.String(255), nullable=True),
    sa.Column("author_id", sa.ForeignKey("user_profile.id", ondelete="SET NULL"), nullable=True),
    sa.Column("deactivated", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("is_animated", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Index("ix_realm_emoji_realm_id_name", "realm_id", "name"),
    sa.Index(
        "uq_realm_emoji_realm_id_name_active",
        "realm_id",
        "name",
        unique=True,
        sqlite_where=sa.text("NOT deactivated"),
        postgresql_where=sa.text("NOT deactivated"),
    ),
)

# A code playground: a link to run a code block of a language (``/realm/playgrounds``).
realm_playground = sa.Table(
    "realm_playground",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
    sa.Column("name", sa.String(60), nullable=False),
    sa.Column("pygments_language", sa.String(40), nullable=False),
    sa.Column("url_template", sa.Text, nullable=False),
    sa.UniqueConstraint("realm_id", "pygments_language", "name"),
)

# A bot's own key-value store (``/bot_storage``), for zulip-bots' stateful bots.
bot_storage = sa.Table(
    "bot_storage",
    metadata,
    sa.Column(
        "bot_profile_id", sa.ForeignKey("user_profile.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("key", sa.String(1000), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

# What is known of an uploaded image, for its thumbnails: its size, its frame count
# (animated when above one), and the thumbnail formats made so far (a JSON list).
image_attachment = sa.Table(
    "image_attachment",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
    sa.Column("path_id", sa.String(255), nullable=False, unique=True),
    sa.Column("original_width_px", sa.Integer, nullable=False),
    sa.Column("original_height_px", sa.Integer, nullable=False),
    sa.Column("frames", sa.Integer, nullable=False, server_default="1"),
    sa.Column("content_type", sa.String(255), nullable=True),
    sa.Column("thumbnail_metadata", sa.Text, nullable=False, server_default="[]"),
)

# Events a command (``hubbub create-user`` beside a running server) committed, for the
# server to publish: a command cannot reach the server's event queues (without Redis they
# live in the server's memory), so its transaction leaves its events here and the
# server's background loop publishes and deletes them (``events/outbox.py``). A row
# without an event names users whose credentials changed (``Tx.forget_credentials``).
event_outbox = sa.Table(
    "event_outbox",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("realm_id", sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=True),
    # The event (JSON), its recipients (a JSON list of user ids) and, for a public
    # stream's event, the recipients the realm's all_public_streams queues skip.
    sa.Column("event", sa.Text, nullable=True),
    sa.Column("user_ids", sa.Text, nullable=False),
    sa.Column("public_stream_except", sa.Text, nullable=True),
    sa.Column("created", sa.Double, nullable=False),
)

# The in-memory bus's queues on SQLite, kept across a crash (``events/durable_queues.py``):
# each registration, and where replaying the journal below rebuilds its events from.
event_queue_saved = sa.Table(
    "event_queue_saved",
    metadata,
    sa.Column("queue_id", sa.String(64), primary_key=True),
    sa.Column("spec", sa.Text, nullable=False),
    # The queue's events after ``base_id`` are the journal's events after ``base_seq``.
    sa.Column("base_id", sa.BigInteger, nullable=False),
    sa.Column("base_seq", sa.BigInteger, nullable=False),
)

# Every event published to those queues, in publishing order, written in the transaction
# of the change it describes; trimmed once every queue has acknowledged it.
event_journal = sa.Table(
    "event_journal",
    metadata,
    # SQLite's INTEGER PRIMARY KEY is the row id itself (no second index).
    sa.Column(
        "seq",
        sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
        primary_key=True,
        autoincrement=False,
    ),
    sa.Column("realm_id", sa.Integer, nullable=True),
    # Set: an event already shaped for this one queue (saved queues of an older server).
    sa.Column("queue_id", sa.String(64), nullable=True),
    sa.Column("event", sa.Text, nullable=False),
    sa.Column("user_ids", sa.Text, nullable=False),
    sa.Column("public_stream_except", sa.Text, nullable=True),
)


def stored_tables(dialect: str) -> list[sa.Table]:
    """The tables that hold rows on ``dialect``'s database, in dependency order: tables.py's,
    ``user_message``'s two in place of its view (for what names every table: clearing,
    statistics, the schema's comparison with the migrations')."""
    own = {"sqlite": sqlite_metadata, "postgresql": postgresql_metadata}[dialect]
    tables = [table for table in metadata.sorted_tables if table is not user_message]
    return tables + list(own.tables.values())
