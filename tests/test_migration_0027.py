"""Migration 0027: existing streams get Zulip 10's group-valued permissions equivalent to
what they had, no creator, and count as recently active; a downgrade gives the columns
back."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa
from alembic import command

from hubbub.db.engine import Database
from hubbub.db.migrate import alembic_config

_SYSTEM_GROUPS = (
    "role:internet",
    "role:owners",
    "role:administrators",
    "role:moderators",
    "role:fullmembers",
    "role:members",
    "role:everyone",
    "role:nobody",
)


async def test_streams_keep_their_permissions(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        async with db.write() as conn:
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "0026"))
            await conn.execute(
                sa.text(
                    "INSERT INTO realm (id, string_id, name, date_created) VALUES"
                    " (1, '', 'Old', 0), (2, 'b', 'Other', 0)"
                )
            )
            groups: dict[tuple[int, str], int] = {}
            next_id = 1
            for realm_id in (1, 2):
                for name in _SYSTEM_GROUPS:
                    await conn.execute(
                        sa.text(
                            "INSERT INTO user_group (id, realm_id, name, is_system_group)"
                            " VALUES (:id, :realm, :name, true)"
                        ),
                        {"id": next_id, "realm": realm_id, "name": name},
                    )
                    groups[(realm_id, name)] = next_id
                    next_id += 1
            # (id, realm, stream_post_policy, who may remove subscribers)
            streams = [
                (10, 1, 1, "role:administrators"),
                (11, 1, 2, "role:members"),
                (12, 2, 3, "role:moderators"),
                (13, 2, 4, "role:everyone"),
            ]
            for stream_id, realm_id, policy, remover in streams:
                await conn.execute(
                    sa.text(
                        "INSERT INTO stream (id, realm_id, name, date_created,"
                        " stream_post_policy, can_remove_subscribers_group_id)"
                        " VALUES (:id, :realm, :name, 0, :policy, :group)"
                    ),
                    {
                        "id": stream_id,
                        "realm": realm_id,
                        "name": f"s{stream_id}",
                        "policy": policy,
                        "group": groups[(realm_id, remover)],
                    },
                )
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "0027"))
        async with db.read() as conn:
            rows = (
                await conn.execute(
                    sa.text(
                        "SELECT id, realm_id, creator_id, is_recently_active,"
                        " permission_settings, stream_post_policy FROM stream ORDER BY id"
                    )
                )
            ).all()
        expected_senders = {
            10: "role:everyone",
            11: "role:administrators",
            12: "role:fullmembers",
            13: "role:moderators",
        }
        for (stream_id, realm_id, creator_id, recent, settings, policy), old in zip(
            rows, streams, strict=True
        ):
            assert creator_id is None and bool(recent) is True
            assert policy == old[2]  # the deprecated value, still sent, is unchanged
            nobody = groups[(realm_id, "role:nobody")]
            assert json.loads(settings) == {
                "can_add_subscribers_group": nobody,
                "can_administer_channel_group": nobody,
                "can_remove_subscribers_group": groups[(realm_id, old[3])],
                "can_send_message_group": groups[(realm_id, expected_senders[stream_id])],
                "can_subscribe_group": nobody,
            }
        async with db.write() as conn:
            await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "0026"))
            columns = [row[1] for row in await conn.execute(sa.text("PRAGMA table_info(stream)"))]
            count = (await conn.execute(sa.text("SELECT COUNT(*) FROM stream"))).scalar()
    finally:
        await db.dispose()
    assert "permission_settings" not in columns and "creator_id" not in columns
    assert count == 4
