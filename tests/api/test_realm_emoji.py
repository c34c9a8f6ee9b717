"""``GET /realm/emoji``, ``POST`` and ``DELETE /realm/emoji/{emoji_name}``, the images
at ``/user_avatars/...``, the emoji data file of ``server_emoji_data_url``, and reactions
with custom emoji."""

from __future__ import annotations

import io
from typing import Any

import httpx
import orjson
import sqlalchemy as sa
from PIL import Image
from PIL.GifImagePlugin import GifImageFile

from hubbub.db.tables import reaction, realm_emoji
from hubbub.db.tables import realm as realm_table
from tests.emoji_helpers import (
    add_emoji,
    emoji_named,
    gif_bytes,
    huge_png_header,
    png_bytes,
    post_emoji,
)
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import send_stream_message
from tests.uploads_helpers import fetch

NAME_CHARACTERS = (
    "Emoji names must contain only lowercase English letters, digits, spaces, dashes, "
    "and underscores."
)


async def _stored_files(env: TestEnv) -> list[str]:
    root = env.services.settings.data_dir / "uploads"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


async def _emoji_rows(env: TestEnv) -> list[tuple[str, bool]]:
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(realm_emoji.c.name, realm_emoji.c.deactivated).order_by(realm_emoji.c.id)
        )
        return [(name, bool(deactivated)) for name, deactivated in rows]


async def test_upload_list_and_serve(env: TestEnv) -> None:
    assert assert_success(await env.client("hamlet").get("/realm/emoji"))["emoji"] == {}
    assert_success(await post_emoji(env, "hamlet", "green_tick", png_bytes(200, 100)))
    listed = assert_success(await env.client("polonius").get("/realm/emoji"))["emoji"]
    [(key, emoji)] = listed.items()
    file_name = emoji["source_url"].rsplit("/", 1)[-1]
    assert emoji == {
        "id": key,
        "name": "green_tick",
        "source_url": f"/user_avatars/{env.realm.id}/emoji/images/{file_name}",
        "still_url": None,
        "deactivated": False,
        "author_id": env.users["hamlet"].id,
    }
    assert file_name.endswith(".png") and len(file_name) >= 12
    # Served without credentials, as Zulip's web server serves /user_avatars.
    response = await fetch(env, emoji["source_url"])
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert response.headers["x-content-type-options"] == "nosniff"
    image = Image.open(io.BytesIO(response.content))
    assert (image.format, image.size) == ("PNG", (64, 64))
    head = await fetch(env, emoji["source_url"], method="HEAD")
    assert head.status_code == 200 and head.headers["content-length"] == str(len(response.content))
    for missing in (
        f"/user_avatars/{env.realm.id}/emoji/images/0123abcd.png",
        f"/user_avatars/{env.realm.id + 1}/emoji/images/{file_name}",
        f"/user_avatars/{env.realm.id}/emoji/images/{file_name}.original",
        f"/user_avatars/{env.realm.id}/emoji/images/still/{file_name}",
    ):
        response = await fetch(env, missing)
        assert response.status_code == 404, missing
        assert response.json() == {"result": "error", "msg": "File not found."}


async def test_animated_emoji_has_a_still(env: TestEnv) -> None:
    assert_success(await post_emoji(env, "hamlet", "party", gif_bytes(), "party.gif", "image/gif"))
    emoji = await emoji_named(env, "party")
    stem = emoji["source_url"].rsplit("/", 1)[-1].removesuffix(".gif")
    assert emoji["still_url"] == f"/user_avatars/{env.realm.id}/emoji/images/still/{stem}.png"
    animated = await fetch(env, emoji["source_url"])
    assert animated.headers["content-type"] == "image/gif"
    image = Image.open(io.BytesIO(animated.content))
    assert isinstance(image, GifImageFile)
    assert (image.format, image.size, image.n_frames) == ("GIF", (64, 64), 3)
    still = await fetch(env, emoji["still_url"])
    assert still.headers["content-type"] == "image/png"
    image = Image.open(io.BytesIO(still.content))
    assert (image.format, image.size, getattr(image, "n_frames", 1)) == ("PNG", (64, 64), 1)


async def test_the_official_clients_upload_without_a_type(env: TestEnv) -> None:
    # The zulip package sends the file without a Content-Type: the name decides.
    assert_success(await post_emoji(env, "hamlet", "kitty_pic", png_bytes(), "kitty.png", None))
    assert (await emoji_named(env, "kitty_pic"))["source_url"].endswith(".png")
    assert_error(
        await post_emoji(env, "hamlet", "doggo_pic", png_bytes(), "doggo.bin", None),
        "Invalid image format",
        code="BAD_IMAGE",
    )


async def test_name_checks(env: TestEnv) -> None:
    for name, message in [
        ("my_em*oji", NAME_CHARACTERS),
        ("my_EMoji", NAME_CHARACTERS),
        ("my/emoji/with/forward/slash/", NAME_CHARACTERS),
        ("my_emoji_", "Emoji names must end with either a letter or digit."),
        ("my-emoji-", "Emoji names must end with either a letter or digit."),
        ("%20", "Emoji name is missing"),
        ("a" * 61, "Emoji name is too long (limit: 60 characters)"),
    ]:
        assert_error(await post_emoji(env, "iago", name), message)
    # Spaces around the name go, spaces inside become underscores.
    assert_success(await post_emoji(env, "iago", "%20big%20smile%20"))
    assert (await emoji_named(env, "big_smile"))["name"] == "big_smile"
    assert_success(await post_emoji(env, "iago", "a" * 60))
    assert [name for name, _ in await _emoji_rows(env)] == ["big_smile", "a" * 60]


async def _store_realm_settings(env: TestEnv, settings: dict[str, Any]) -> None:
    """The realm's stored settings, as a realm that kept Zulip 8.0's policies has them
    (its ``can_add_custom_emoji_group`` is then the group the policy meant)."""
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(realm_table)
            .where(realm_table.c.id == env.realm.id)
            .values(settings=orjson.dumps(settings).decode())
        )


async def test_who_may_add(env: TestEnv) -> None:
    assert_error(await post_emoji(env, "polonius", "ghost"), "Not allowed for guest users")
    # The guest check comes before the name's.
    assert_error(await post_emoji(env, "polonius", "Bad"), "Not allowed for guest users")
    await _store_realm_settings(env, {"add_custom_emoji_policy": 2})  # administrators
    for user in ("hamlet", "shiva"):
        assert_error(await post_emoji(env, user, f"by_{user}"), "Insufficient permission")
    # The name is checked before the permission.
    assert_error(await post_emoji(env, "hamlet", "Bad"), NAME_CHARACTERS)
    assert_success(await post_emoji(env, "iago", "by_iago"))
    await _store_realm_settings(env, {"add_custom_emoji_policy": 4})  # moderators
    assert_error(await post_emoji(env, "hamlet", "by_hamlet"), "Insufficient permission")
    assert_success(await post_emoji(env, "shiva", "by_shiva"))
    assert [name for name, _ in await _emoji_rows(env)] == ["by_iago", "by_shiva"]


async def test_upload_errors_change_nothing(env: TestEnv) -> None:
    await add_emoji(env, "hamlet", "green_tick")
    before = await _stored_files(env)
    assert_error(
        await post_emoji(env, "othello", "green_tick"),
        "A custom emoji with this name already exists.",
    )
    assert_error(
        await post_emoji(env, "hamlet", "no_file", files={}), "You must upload exactly one file."
    )
    two = {"a": ("a.png", png_bytes(), "image/png"), "b": ("b.png", png_bytes(), "image/png")}
    assert_error(
        await post_emoji(env, "hamlet", "two", files=two), "You must upload exactly one file."
    )
    # A Unicode emoji's name (or an alias) is for administrators.
    for name in ("smile", "thumbs_up"):
        assert_error(
            await post_emoji(env, "hamlet", name), "Only administrators can override default emoji."
        )
    big = png_bytes() + b"\0" * (5 * 1024 * 1024)
    assert_error(
        await post_emoji(env, "hamlet", "big", big),
        "Uploaded file is larger than the allowed limit of 5 MiB",
    )
    tiff = io.BytesIO()
    Image.new("RGB", (10, 10)).save(tiff, "TIFF")
    assert_error(
        await post_emoji(env, "hamlet", "tiff", tiff.getvalue(), "x.tif", "image/tiff"),
        "Invalid image format",
        code="BAD_IMAGE",
    )
    assert_error(
        await post_emoji(env, "hamlet", "text", b"hello", "x.txt", "text/plain"),
        "Invalid image format",
        code="BAD_IMAGE",
    )
    assert_error(
        await post_emoji(env, "hamlet", "broken", b"\x89PNG not really"),
        "Could not decode image; did you upload an image file?",
        code="BAD_IMAGE",
    )
    # A huge picture is refused before it is decoded (Zulip's pixel bound).
    for width, height in ((10000, 9001), (20000, 20000)):
        assert_error(
            await post_emoji(env, "hamlet", "huge", huge_png_header(width, height)),
            "Image size exceeds limit.",
            code="BAD_IMAGE",
        )
    assert await _emoji_rows(env) == [("green_tick", False)]
    assert await _stored_files(env) == before


async def test_administrators_override_default_emoji(env: TestEnv) -> None:
    assert_success(await post_emoji(env, "iago", "smile"))
    # The official client's name for Zulip's own emoji is not a Unicode emoji's.
    assert_success(await post_emoji(env, "hamlet", "zulip"))
    assert {e["name"] for e in (await _listed(env)).values()} == {"smile", "zulip"}


async def _listed(env: TestEnv) -> dict[str, Any]:
    return assert_success(await env.client("hamlet").get("/realm/emoji"))["emoji"]  # type: ignore[no-any-return]


async def test_deactivate(env: TestEnv) -> None:
    emoji = await add_emoji(env, "othello", "green_tick")
    response = await env.client("iago").delete("/realm/emoji/invalid_emoji")
    assert_error(response, "Emoji 'invalid_emoji' does not exist", status=404)
    assert_error(
        await env.client("hamlet").delete("/realm/emoji/green_tick"),
        "Must be an organization administrator or emoji author",
    )
    assert_success(await env.client("othello").delete("/realm/emoji/green_tick"))
    # Still listed, as deactivated: old messages and reactions show it.
    assert (await _listed(env))[emoji["id"]] == {**emoji, "deactivated": True}
    assert (await fetch(env, emoji["source_url"])).status_code == 200
    assert_error(
        await env.client("othello").delete("/realm/emoji/green_tick"),
        "Emoji 'green_tick' does not exist",
        status=404,
    )
    # The name is free again; an administrator may deactivate anyone's emoji.
    second = await add_emoji(env, "hamlet", "green_tick")
    assert second["id"] != emoji["id"]
    assert_success(await env.client("iago").delete("/realm/emoji/green_tick"))
    assert await _emoji_rows(env) == [("green_tick", True), ("green_tick", True)]
    assert len(await _listed(env)) == 2


async def test_realms_are_separate(env: TestEnv) -> None:
    other = await env.create_realm("other", "Other")
    stranger = await env.create_user("stranger@other.example.com", "Stranger", realm=other)
    emoji = await add_emoji(env, "hamlet", "green_tick")
    client = env.client(stranger, host="other.localhost")
    assert assert_success(await client.get("/realm/emoji"))["emoji"] == {}
    assert_error(
        await client.delete("/realm/emoji/green_tick"),
        "Emoji 'green_tick' does not exist",
        status=404,
    )
    assert_success(
        await client.request(
            "POST", "/realm/emoji/green_tick", files={"f": ("x.png", png_bytes(), "image/png")}
        )
    )
    theirs = assert_success(await client.get("/realm/emoji"))["emoji"]
    [(key, mine)] = theirs.items()
    assert key != emoji["id"] and mine["source_url"].startswith(f"/user_avatars/{other.id}/")


async def test_emoji_data_file(env: TestEnv) -> None:
    state = assert_success(
        await env.client("hamlet").post("/register", {"fetch_event_types": '["realm"]'})
    )
    url = state["server_emoji_data_url"]
    assert url.startswith("http://localhost/static/generated/emoji/emoji_api.")
    path = url.removeprefix("http://localhost")
    response = await fetch(env, path)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
    data = orjson.loads(response.content)
    assert list(data) == ["code_to_names"]
    assert data["code_to_names"]["1f642"] == ["smile"]
    assert data["code_to_names"]["1f44d"] == ["+1", "thumbs_up", "like"]
    assert data["code_to_names"]["1f419"][0] == "octopus"
    assert all(isinstance(v, list) and v for v in data["code_to_names"].values())
    transport = httpx.ASGITransport(app=env.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        again = await http.get(path, headers={"If-None-Match": response.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    stale = await fetch(env, "/static/generated/emoji/emoji_api.0000000000000000.json")
    assert stale.status_code == 404
    # Other state types leave it out (it belongs to the realm state).
    state = assert_success(
        await env.client("hamlet").post("/register", {"fetch_event_types": '["realm_emoji"]'})
    )
    assert "server_emoji_data_url" not in state and state["realm_emoji"] == {}


# --- reactions with custom emoji ---------------------------------------------------------


async def _message(env: TestEnv) -> int:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    return await send_stream_message(env, "hamlet", "Denmark")


async def _reactions(env: TestEnv, message_id: int) -> list[tuple[str, str, str, int]]:
    body = assert_success(await env.client("hamlet").get(f"/messages/{message_id}"))
    return [
        (r["emoji_name"], r["emoji_code"], r["reaction_type"], r["user_id"])
        for r in body["message"]["reactions"]
    ]


async def test_react_by_name_and_by_code(env: TestEnv) -> None:
    message_id = await _message(env)
    party = await add_emoji(env, "hamlet", "party")
    url = f"/messages/{message_id}/reactions"
    hamlet, othello = env.users["hamlet"].id, env.users["othello"].id
    by_code = {"emoji_name": "party", "emoji_code": party["id"], "reaction_type": "realm_emoji"}
    # Checked while nobody has reacted with it (later requests are votes, taken as such).
    for params, message in [
        ({**by_code, "emoji_name": "octopus"}, "Invalid custom emoji name."),
        ({**by_code, "emoji_code": "99999"}, "Invalid custom emoji."),
        ({**by_code, "emoji_code": "0" + party["id"]}, "Invalid custom emoji."),
        ({**by_code, "emoji_code": "party"}, "Invalid custom emoji."),
        ({**by_code, "reaction_type": "unicode_emoji"}, "Invalid emoji code."),
    ]:
        assert_error(await env.client("iago").post(url, params), message)
    assert_success(await env.client("hamlet").post(url, {"emoji_name": "party"}))
    assert_success(await env.client("othello").post(url, by_code))
    assert_error(
        await env.client("othello").post(url, by_code),
        "Reaction already exists.",
        code="REACTION_ALREADY_EXISTS",
    )
    assert await _reactions(env, message_id) == [
        ("party", party["id"], "realm_emoji", hamlet),
        ("party", party["id"], "realm_emoji", othello),
    ]
    # Removing by name (an active emoji's name gives its code) and by code.
    by_name = {"emoji_name": "party", "reaction_type": "realm_emoji"}
    assert_success(await env.client("hamlet").delete(url, by_name))
    only_code = {"emoji_code": party["id"], "reaction_type": "realm_emoji"}
    assert_success(await env.client("othello").delete(url, only_code))
    assert await _reactions(env, message_id) == []


async def test_custom_emoji_wins_over_unicode_names(env: TestEnv) -> None:
    message_id = await _message(env)
    smile = await add_emoji(env, "iago", "smile")
    url = f"/messages/{message_id}/reactions"
    assert_success(await env.client("hamlet").post(url, {"emoji_name": "smile"}))
    # The Unicode emoji is still there by its code.
    unicode_smile = {"emoji_name": "smile", "emoji_code": "1f642", "reaction_type": "unicode_emoji"}
    assert_success(await env.client("othello").post(url, unicode_smile))
    assert await _reactions(env, message_id) == [
        ("smile", smile["id"], "realm_emoji", env.users["hamlet"].id),
        ("smile", "1f642", "unicode_emoji", env.users["othello"].id),
    ]


async def test_deactivated_emoji_in_reactions(env: TestEnv) -> None:
    message_id = await _message(env)
    party = await add_emoji(env, "hamlet", "party")
    url = f"/messages/{message_id}/reactions"
    assert_success(await env.client("hamlet").post(url, {"emoji_name": "party"}))
    assert_success(await env.client("hamlet").delete("/realm/emoji/party"))
    by_code = {"emoji_name": "party", "emoji_code": party["id"], "reaction_type": "realm_emoji"}
    # The reaction stays; a vote for it is still taken, by code.
    assert_success(await env.client("othello").post(url, by_code))
    # The name no longer names an emoji.
    assert_error(
        await env.client("iago").post(url, {"emoji_name": "party"}), "Emoji 'party' does not exist"
    )
    assert_success(
        await env.client("othello").delete(
            url, {"emoji_code": party["id"], "reaction_type": "realm_emoji"}
        )
    )
    assert_success(
        await env.client("hamlet").delete(
            url, {"emoji_code": party["id"], "reaction_type": "realm_emoji"}
        )
    )
    # With no reaction left to vote for, a new one is refused.
    assert_error(
        await env.client("othello").post(url, by_code), "This custom emoji has been deactivated."
    )
    async with env.services.db.read() as conn:
        assert (await conn.execute(sa.select(sa.func.count()).select_from(reaction))).scalar() == 0
