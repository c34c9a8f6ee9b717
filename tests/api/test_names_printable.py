"""Organization names and custom profile field labels refuse control characters, as
topics, user names, stream names and group names do (``text_checks``)."""

from __future__ import annotations

from tests.helpers import TestEnv, assert_error, assert_success


async def test_organization_name_refuses_escape_sequences(env: TestEnv) -> None:
    owner = env.client("desdemona")
    assert_error(
        await owner.patch("/realm", {"name": "Acme\x1b]0;pwned\x07"}),
        "Invalid character in organization name, at position 5!",
    )
    assert_success(await owner.patch("/realm", {"name": "Acme"}))


async def test_profile_field_label_and_hint_refuse_control_characters(env: TestEnv) -> None:
    iago = env.client("iago")
    assert_error(
        await iago.post("/realm/profile_fields", {"name": "Team\x00", "field_type": 1}),
        "name must not contain null bytes",
    )
    assert_error(
        await iago.post("/realm/profile_fields", {"name": "Te\x1bam", "field_type": 1}),
        "Invalid character in field name, at position 3!",
    )
    assert_error(
        await iago.post(
            "/realm/profile_fields", {"name": "Team", "hint": "x\x07", "field_type": 1}
        ),
        "Invalid character in field hint, at position 2!",
    )
