"""``GET /users/{user_id_or_email}/presence`` and ``GET /realm/presence`` tell the same
story of a user at the same moment: the same timestamps, the same active/idle reading,
the same client keys; the single user's aggregate alone turns "offline" past 140 s (Zulip
10.2's get_presence_backend), and only the realm's answer has a ``server_timestamp``."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.db.tables import user_presence
from hubbub.queries import presence as presence_queries
from tests.helpers import TestEnv, assert_error, assert_success
from tests.presence_helpers import START, ping, presence_env  # noqa: F401 (fixture env)


async def _check_agreement(env: TestEnv, users: list[str]) -> dict[str, Any]:
    """Both answers for each of ``users``, asserted to agree; the realm's presences."""
    realm = assert_success(await env.client("iago").get("/realm/presence"))
    now = env.services.clock.now()
    assert realm["server_timestamp"] == now
    for name in users:
        user = env.users[name]
        entry = realm["presences"][user.email]
        assert set(entry) == {"website", "aggregated"}
        assert set(entry["website"]) == {"client", "status", "timestamp", "pushable"}
        assert set(entry["aggregated"]) == {"client", "status", "timestamp"}
        assert entry["website"]["client"] == entry["aggregated"]["client"] == "website"
        for key in (str(user.id), user.email):
            one = assert_success(await env.client("iago").get(f"/users/{key}/presence"))
            assert set(one) == {"result", "msg", "presence"}
            assert set(one["presence"]) == {"website", "aggregated"}
            for client in ("website", "aggregated"):
                assert set(one["presence"][client]) == {"status", "timestamp"}
                assert one["presence"][client]["timestamp"] == entry[client]["timestamp"]
            assert one["presence"]["website"]["status"] == entry["website"]["status"]
            assert entry["aggregated"]["status"] == entry["website"]["status"]
            age = int(now) - entry["aggregated"]["timestamp"]
            expected = "offline" if age > 140 else entry["aggregated"]["status"]
            assert one["presence"]["aggregated"]["status"] == expected, (name, age)
    return realm["presences"]  # type: ignore[no-any-return]


async def test_users_of_different_ages_agree(env: TestEnv) -> None:
    await ping(env, "iago", "active")
    await ping(env, "shiva", "active")
    env.advance(100)
    await ping(env, "othello", "idle")  # connected, never active
    env.advance(60)
    await ping(env, "hamlet", "active")
    await ping(env, "shiva", "idle")  # still connected, active 160 s ago
    env.advance(30)
    presences = await _check_agreement(env, ["iago", "shiva", "othello", "hamlet"])
    # The readings themselves, at 190 s: iago active long ago, shiva idle since his
    # last connection, othello idle, hamlet active.
    statuses = {
        email.split("@")[0]: (p["website"]["status"], p["website"]["timestamp"] - START)
        for email, p in presences.items()
    }
    assert statuses == {
        "iago": ("active", 0),
        "shiva": ("idle", 160),
        "othello": ("idle", 100),
        "hamlet": ("active", 160),
    }
    # Nobody who never pinged is in either.
    assert env.users["polonius"].email not in presences
    resp = await env.client("iago").get(f"/users/{env.users['polonius'].id}/presence")
    assert_error(resp, f"No presence data for {env.users['polonius'].id}")
    env.advance(3600)
    await _check_agreement(env, ["iago", "shiva", "othello", "hamlet"])


async def test_they_agree_while_another_workers_write_is_not_yet_seen(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The realm's answer keeps its rows up to ``PRESENCE_ANSWER_SECONDS``: the single
    user's answer is made from the same rows, so both show another worker's write at the
    same moment."""
    monkeypatch.setattr(presence_queries, "PRESENCE_ANSWER_SECONDS", 3600.0)
    await ping(env, "hamlet", "active")
    await ping(env, "othello", "active")
    await _check_agreement(env, ["hamlet", "othello"])
    # Another worker records hamlet idle since a minute ago, and othello's first ping.
    hamlet = env.users["hamlet"].id
    await env.write_elsewhere(
        sa.update(user_presence)
        .where(user_presence.c.user_profile_id == hamlet)
        .values(last_active_time=START - 300, last_connected_time=START - 60)
    )
    presences = await _check_agreement(env, ["hamlet", "othello"])
    assert presences["hamlet@example.com"]["website"]["status"] == "active"
    # A first ping the kept rows cannot hold: the single answer reads it, and the realm's
    # next answer reads its rows again.
    shiva = env.users["shiva"]
    await env.write_elsewhere(
        sa.insert(user_presence).values(
            user_profile_id=shiva.id,
            realm_id=env.realm.id,
            last_active_time=START - 10,
            last_connected_time=START - 10,
        )
    )
    one = assert_success(await env.client("iago").get(f"/users/{shiva.id}/presence"))
    assert one["presence"]["website"] == {"status": "active", "timestamp": START - 10}
    presences = await _check_agreement(env, ["hamlet", "othello", "shiva"])
    assert presences["hamlet@example.com"]["website"]["status"] == "idle"
    # Past the kept time both read the rows again.
    monkeypatch.setattr(presence_queries, "PRESENCE_ANSWER_SECONDS", -1.0)
    presences = await _check_agreement(env, ["hamlet", "othello", "shiva"])
    assert presences["hamlet@example.com"]["website"] == {
        "client": "website",
        "status": "idle",
        "timestamp": START - 60,
        "pushable": False,
    }
