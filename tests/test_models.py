"""Model classes built from rows by position rely on the tables' column order."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import realm, user_profile
from hubbub.models import User


def test_user_profile_columns_are_the_user_fields_in_order() -> None:
    # User.from_row takes a row's first columns, by position, as the user's fields.
    assert tuple(column.name for column in user_profile.columns) == User.__slots__


def test_a_user_from_a_joined_row_takes_only_its_own_columns() -> None:
    engine = sa.create_engine("sqlite://")
    with engine.begin() as conn:
        realm.create(conn)
        user_profile.create(conn)
        conn.execute(
            realm.insert(),
            {"id": 7, "string_id": "zulip", "name": "Zulip", "date_created": 1.0},
        )
        values: dict[str, Any] = {
            "id": 3,
            "realm_id": 7,
            "email": "a@example.com",
            "delivery_email": "b@example.com",
            "full_name": "A B",
            "password_hash": None,
            "api_key": "k" * 32,
            "role": 400,
            "is_active": True,
            "is_billing_admin": False,
            "is_bot": True,
            "bot_type": 1,
            "bot_owner_id": None,
            "date_joined": 1.5e9,
            "timezone": "Europe/Paris",
            "avatar_source": "G",
            "avatar_version": 2,
            "email_address_visibility": 1,
        }
        conn.execute(user_profile.insert(), values)
        row = conn.execute(
            sa.select(user_profile, realm.c.name).join(realm, realm.c.id == user_profile.c.realm_id)
        ).one()
        assert User.from_row(row) == User(**values)
        plain = conn.execute(sa.select(user_profile)).one()
        assert User.from_row(plain) == User(**values)
