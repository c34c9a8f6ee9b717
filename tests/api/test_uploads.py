"""``POST /user_uploads``, downloading files at ``/user_uploads/...`` (who may, how they
are served), temporary download links, and the path-id rules."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.clock import FakeClock
from hubbub.db.tables import stream
from hubbub.settings import Settings
from hubbub.uploads import storage_for
from hubbub.uploads.paths import check_path_id, path_ids_in, sanitize_file_name
from tests.helpers import TestEnv, assert_error, assert_success, running_env
from tests.messages_helpers import send_direct_message, send_stream_message
from tests.uploads_helpers import fetch, upload


def file_url(path_id: str) -> str:
    return f"/user_uploads/{path_id}"


@pytest.fixture
async def clock_env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings, clock=FakeClock()) as test_env:
        yield test_env


async def test_upload_and_download(env: TestEnv) -> None:
    path_id = await upload(env, "hamlet", b"hello file", "notes for me.txt")
    realm_id, hex_part, random_part, name = path_id.split("/")
    assert (int(realm_id), len(hex_part), name) == (env.realm.id, 2, "notes-for-me.txt")
    assert len(random_part) >= 24
    stored = env.services.settings.data_dir / "uploads" / path_id
    assert stored.read_bytes() == b"hello file"

    response = await fetch(env, file_url(path_id), "hamlet")
    assert response.status_code == 200
    assert response.content == b"hello file"
    assert response.headers["content-type"].startswith("text/plain")
    assert response.headers["content-disposition"] == 'attachment; filename="notes-for-me.txt"'
    assert response.headers["x-content-type-options"] == "nosniff"
    head = await fetch(env, file_url(path_id), "hamlet", method="HEAD")
    assert head.status_code == 200 and head.headers["content-length"] == "10"


async def test_images_are_inline_and_html_is_a_download(env: TestEnv) -> None:
    png = await upload(env, "hamlet", b"\x89PNG....", "pic.png", "image/png")
    response = await fetch(env, file_url(png), "hamlet")
    assert response.headers["content-type"] == "image/png"
    assert response.headers["content-disposition"] == 'inline; filename="pic.png"'
    page = await upload(env, "hamlet", b"<script>x</script>", "page.html", "text/html")
    response = await fetch(env, file_url(page), "hamlet")
    assert response.headers["content-disposition"].startswith("attachment;")
    unicode_name = await upload(env, "hamlet", b"x", "файл.pdf", "application/pdf")
    response = await fetch(env, file_url(unicode_name), "hamlet")
    assert response.headers["content-disposition"] == (
        "inline; filename*=utf-8''%D1%84%D0%B0%D0%B9%D0%BB.pdf"
    )


async def test_upload_errors(settings: Settings) -> None:
    async with running_env(settings.with_(max_file_upload_mib=1)) as env:
        client = env.client("hamlet")
        assert_error(
            await client.post("/user_uploads", {"note": "no file"}),
            "You must specify a file to upload",
        )
        two = {"a": ("a.txt", b"a", "text/plain"), "b": ("b.txt", b"b", "text/plain")}
        assert_error(
            await client.request("POST", "/user_uploads", files=two),
            "You may only upload one file at a time",
        )
        big = {"f": ("big.bin", b"x" * (1024 * 1024 + 1), "application/octet-stream")}
        assert_error(
            await client.request("POST", "/user_uploads", files=big),
            "Uploaded file is larger than the allowed limit of 1 MiB",
        )
        assert not list((env.services.settings.data_dir / "uploads").rglob("*.bin"))
        # Exactly the limit is allowed.
        exact = {"f": ("ok.bin", b"x" * (1024 * 1024), "application/octet-stream")}
        assert_success(await client.request("POST", "/user_uploads", files=exact))
        # /register reports the configured limit.
        state = assert_success(await client.post("/register", {"fetch_event_types": ["realm"]}))
        assert state["max_file_upload_size_mib"] == 1
        assert_error(
            await env.client().request("POST", "/user_uploads", files=exact),
            "Not logged in: API authentication or user session required",
            status=401,
            code="UNAUTHORIZED",
        )


async def test_who_may_download(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    path_id = await upload(env, "hamlet")
    url = file_url(path_id)
    # Only the owner, until a message links it.
    forbidden = await fetch(env, url, "othello")
    assert forbidden.status_code == 403
    assert forbidden.json()["msg"] == "You are not authorized to view this file."
    await send_stream_message(env, "hamlet", "Denmark", f"[zulip.txt]({url})")
    # A public stream's message: any member (not subscribed), but not a guest.
    assert (await fetch(env, url, "othello")).content == b"zulip!"
    assert (await fetch(env, url, "polonius")).status_code == 403
    # A direct message makes it readable to its recipient.
    private = await upload(env, "hamlet", b"secret")
    assert (await fetch(env, file_url(private), "polonius")).status_code == 403
    await send_direct_message(env, "hamlet", ["polonius"], f"see /user_uploads/{private}")
    assert (await fetch(env, file_url(private), "polonius")).content == b"secret"
    assert (await fetch(env, file_url(private), "othello")).status_code == 403


async def test_private_stream_history(env: TestEnv) -> None:
    secret = await env.subscribe("hamlet", "Secret", invite_only=True)
    path_id = await upload(env, "hamlet")
    await send_stream_message(env, "hamlet", "Secret", f"[f](/user_uploads/{path_id})")
    assert (await fetch(env, file_url(path_id), "othello")).status_code == 403
    # Subscribed later to a stream with protected history (a private stream's default):
    # still not readable; once the history is shared, it is.
    await env.subscribe("othello", "Secret")
    assert (await fetch(env, file_url(path_id), "othello")).status_code == 403
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(stream)
            .where(stream.c.id == secret.id)
            .values(history_public_to_subscribers=True)
        )
    assert (await fetch(env, file_url(path_id), "othello")).status_code == 200


async def test_download_authentication(env: TestEnv) -> None:
    path_id = await upload(env, "hamlet")
    url = file_url(path_id)
    anonymous = await fetch(env, url)
    assert anonymous.status_code == 401
    assert anonymous.json() == {
        "result": "error",
        "msg": "Not logged in: API authentication or user session required",
        "code": "UNAUTHORIZED",
    }
    wrong = await fetch(env, url, api_key="a" * 32)
    assert (wrong.status_code, wrong.json()["msg"]) == (401, "Invalid API key")
    hamlet = env.users["hamlet"]
    by_key = await fetch(env, url, api_key=hamlet.api_key)
    assert by_key.content == b"zulip!"


async def test_missing_files_and_traversal(env: TestEnv) -> None:
    path_id = await upload(env, "hamlet")
    realm_id = env.realm.id
    for url in (
        f"/user_uploads/{realm_id}/aa/nothing/here.txt",
        f"/user_uploads/{realm_id}/%2e%2e/%2e%2e/hubbub.db",
        f"/user_uploads/{realm_id}/..%2f..%2fhubbub.db",
        f"/user_uploads/{realm_id + 1}/{path_id.split('/', 1)[1]}",
    ):
        response = await fetch(env, url, "hamlet")
        assert response.status_code == 404, url
        assert response.json()["msg"] == "File not found."
    # A record whose file vanished is not found either (never a 500).
    await storage_for(env.services.settings).delete(path_id)
    assert (await fetch(env, file_url(path_id), "hamlet")).status_code == 404


def test_path_ids_and_names() -> None:
    assert sanitize_file_name("my file (1).tar.gz") == "my-file-1.tar.gz"
    assert sanitize_file_name("../../etc/passwd") == "passwd"
    assert sanitize_file_name("C:\\Users\\me\\a b.txt") == "a-b.txt"
    assert sanitize_file_name("...") == "uploaded-file"
    assert sanitize_file_name("") == "uploaded-file"
    assert sanitize_file_name("файл.txt") == "файл.txt"
    assert check_path_id("2/ab/xyz/file.txt") == "2/ab/xyz/file.txt"
    for bad in ("/2/ab/f.txt", "2/../f.txt", "2//f.txt", "x/ab/f.txt", "2/a b/f", "2/ab/f?x"):
        with pytest.raises(ValueError):
            check_path_id(bad)
    content = (
        "[a](/user_uploads/2/ab/x1/a.txt) http://localhost/user_uploads/2/cd/x2/b.png, "
        "`/user_uploads/2/../etc` again [a](/user_uploads/2/ab/x1/a.txt) "
        "/user_uploads/2/ef/x3/%D1%84.txt"
    )
    assert path_ids_in(content) == ["2/ab/x1/a.txt", "2/cd/x2/b.png", "2/ef/x3/ф.txt"]


async def test_temporary_url(clock_env: TestEnv) -> None:
    env = clock_env
    path_id = await upload(env, "hamlet")
    realm_id, rest = path_id.split("/", 1)
    body = assert_success(await env.client("hamlet").get(f"/user_uploads/{realm_id}/{rest}"))
    url: str = body["url"]
    assert url.startswith("/user_uploads/temporary/") and url.endswith("/zulip.txt")
    # No credentials needed.
    assert (await fetch(env, url)).content == b"zulip!"
    wrong_name = url.rsplit("/", 1)[0] + "/other.txt"
    assert_error(await fetch(env, wrong_name), "Invalid filename")
    assert_error(await fetch(env, "/user_uploads/temporary/garbage/zulip.txt"), "Invalid token")
    tampered = url.replace("/temporary/", "/temporary/A", 1)
    assert_error(await fetch(env, tampered), "Invalid token")
    env.advance(61)
    assert_error(await fetch(env, url), "Invalid token")
    # Someone who may not see the file gets no link.
    response = await env.client("othello").get(f"/user_uploads/{realm_id}/{rest}")
    assert response.status_code == 403
    missing = await env.client("othello").get(f"/user_uploads/{realm_id}/aa/bb/none.txt")
    assert missing.status_code == 404


async def test_no_access_by_linking_someone_elses_file(env: TestEnv) -> None:
    await env.subscribe("othello", "Denmark")
    path_id = await upload(env, "hamlet")
    # Othello cannot see the file, so his message does not make it public.
    await send_stream_message(env, "othello", "Denmark", f"[x](/user_uploads/{path_id})")
    assert (await fetch(env, file_url(path_id), "othello")).status_code == 403
    mine: dict[str, Any] = assert_success(await env.client("hamlet").get("/attachments"))
    assert mine["attachments"][0]["messages"] == []
