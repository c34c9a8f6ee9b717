"""``GET /export/realm/consents`` (feature level 295): administrators see, for each active
human user, whether they let administrators export their private data
(``allow_private_data_export``, feature level 293). Bodies are validated against the
schema by the test client."""

from __future__ import annotations

from tests.helpers import TestEnv, assert_error, assert_success


async def test_admins_see_consents(env: TestEnv) -> None:
    assert_success(
        await env.client("hamlet").patch("/settings", {"allow_private_data_export": True})
    )
    body = assert_success(await env.client("iago").get("/export/realm/consents"))
    consents = {c["user_id"]: c["consented"] for c in body["export_consents"]}
    assert consents[env.users["hamlet"].id] is True
    assert consents[env.users["othello"].id] is False
    assert [c["user_id"] for c in body["export_consents"]] == sorted(consents)
    # Bots and deactivated users are not listed.
    bot = await env.create_user("bot@zulip.com", "A bot", bot_owner=env.users["hamlet"])
    assert_success(await env.client("iago").delete(f"/users/{env.users['othello'].id}"))
    body = assert_success(await env.client("desdemona").get("/export/realm/consents"))
    listed = {c["user_id"] for c in body["export_consents"]}
    assert bot.id not in listed and env.users["othello"].id not in listed
    assert env.users["hamlet"].id in listed


async def test_members_may_not(env: TestEnv) -> None:
    assert_error(
        await env.client("hamlet").get("/export/realm/consents"),
        "Must be an organization administrator",
        code="UNAUTHORIZED_PRINCIPAL",
    )
