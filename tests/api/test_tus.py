"""Resumable uploads at ``/api/v1/tus`` (feature level 295): the tus 1.0.0 core protocol
and its creation, creation-with-upload, expiration and termination extensions, with
Zulip's rules (credentials, declared length, the upload limit, the finished upload's
``{"url", "filename"}``)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from hubbub.clock import FakeClock
from hubbub.db.tables import attachment
from hubbub.settings import Settings
from hubbub.uploads.tus import UPLOAD_LIFETIME_SECONDS, TusError, parse_metadata
from tests.helpers import TestEnv, basic_auth, running_env
from tests.uploads_helpers import fetch

TUS = {"Tus-Resumable": "1.0.0"}
OCTETS = {"Content-Type": "application/offset+octet-stream"}


@pytest.fixture
async def clock_env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings, clock=FakeClock()) as test_env:
        yield test_env


def _metadata(**values: str) -> str:
    return ",".join(f"{k} {base64.b64encode(v.encode()).decode()}" for k, v in values.items())


async def _tus(
    env: TestEnv,
    method: str,
    path: str = "",
    user: str | None = "hamlet",
    *,
    headers: dict[str, str] | None = None,
    content: bytes | None = None,
) -> httpx.Response:
    sent = {"Host": "localhost", **(headers if headers is not None else TUS)}
    if user is not None:
        found = env.users[user]
        sent["Authorization"] = basic_auth(found.delivery_email, found.api_key)
    transport = httpx.ASGITransport(app=env.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        return await http.request(method, "/api/v1/tus" + path, headers=sent, content=content)


async def _create(env: TestEnv, length: int, user: str = "hamlet", **meta: str) -> str:
    response = await _tus(
        env,
        "POST",
        user=user,
        headers={**TUS, "Upload-Length": str(length), "Upload-Metadata": _metadata(**meta)},
    )
    assert response.status_code == 201, response.text
    location = response.headers["location"]
    assert location.startswith("/api/v1/tus/")
    return location.removeprefix("/api/v1/tus")


async def _patch(
    env: TestEnv, path: str, offset: int, data: bytes, user: str = "hamlet"
) -> httpx.Response:
    return await _tus(
        env,
        "PATCH",
        path,
        user,
        headers={**TUS, **OCTETS, "Upload-Offset": str(offset)},
        content=data,
    )


def test_metadata_parsing() -> None:
    assert parse_metadata(_metadata(filename="a b.txt", filetype="text/plain") + ",flag") == {
        "filename": "a b.txt",
        "filetype": "text/plain",
        "flag": "",
    }
    with pytest.raises(TusError):
        parse_metadata("filename !!!")


async def test_options_need_no_credentials(env: TestEnv) -> None:
    response = await _tus(env, "OPTIONS", user=None, headers={})
    assert response.status_code == 204
    assert response.headers["tus-version"] == "1.0.0"
    assert set(response.headers["tus-extension"].split(",")) == {
        "creation",
        "creation-with-upload",
        "expiration",
        "termination",
    }
    limit = env.services.settings.max_file_upload_mib * 1024 * 1024
    assert response.headers["tus-max-size"] == str(limit)


async def test_upload_in_chunks_becomes_an_attachment(env: TestEnv) -> None:
    path = await _create(env, 11, filename="notes for me.txt", filetype="text/plain")
    head = await _tus(env, "HEAD", path)
    assert head.status_code == 200
    assert (head.headers["upload-offset"], head.headers["upload-length"]) == ("0", "11")
    assert head.headers["cache-control"] == "no-store"
    assert "upload-expires" in head.headers and "upload-metadata" in head.headers
    first = await _patch(env, path, 0, b"hello ")
    assert first.status_code == 204 and first.headers["upload-offset"] == "6"
    # A repeated chunk (its answer lost, say) is refused: the offset moved on.
    assert (await _patch(env, path, 0, b"hello ")).status_code == 409
    last = await _patch(env, path, 6, b"world")
    assert last.status_code == 200
    body = last.json()
    assert body["filename"] == "notes for me.txt"
    assert body["url"].startswith(f"/user_uploads/{env.realm.id}/")
    assert body["url"].endswith("/notes-for-me.txt")
    download = await fetch(env, body["url"], "hamlet")
    assert download.content == b"hello world"
    assert download.headers["content-type"].startswith("text/plain")
    async with env.services.db.read() as conn:
        row = (
            await conn.execute(
                sa.select(attachment).where(
                    attachment.c.path_id == body["url"].removeprefix("/user_uploads/")
                )
            )
        ).one()
    assert (row.owner_id, row.file_name, row.size) == (
        env.users["hamlet"].id,
        "notes for me.txt",
        11,
    )
    # The finished upload still answers HEAD (a client that lost the last answer).
    head = await _tus(env, "HEAD", path)
    assert head.headers["upload-offset"] == "11"
    assert (await _patch(env, path, 11, b"x")).status_code == 400
    listed = await env.client("hamlet").get("/attachments")
    assert [a["name"] for a in listed.json()["attachments"]] == ["notes for me.txt"]


async def test_creation_with_upload(env: TestEnv) -> None:
    response = await _tus(
        env,
        "POST",
        headers={
            **TUS,
            **OCTETS,
            "Upload-Length": "3",
            "Upload-Metadata": _metadata(filename="a.bin"),
        },
        content=b"abc",
    )
    assert response.status_code == 201
    assert response.headers["upload-offset"] == "3"
    assert response.json()["filename"] == "a.bin"
    partial = await _tus(
        env, "POST", headers={**TUS, **OCTETS, "Upload-Length": "5"}, content=b"ab"
    )
    assert partial.status_code == 201 and partial.headers["upload-offset"] == "2"
    path = partial.headers["location"].removeprefix("/api/v1/tus")
    done = await _patch(env, path, 2, b"cde")
    # No name given: Zulip's fallback name.
    assert done.status_code == 200 and done.json()["filename"] == "uploaded-file"


async def test_empty_upload_finishes_at_creation(env: TestEnv) -> None:
    response = await _tus(
        env,
        "POST",
        headers={**TUS, "Upload-Length": "0", "Upload-Metadata": _metadata(filename="e.txt")},
    )
    assert response.status_code == 201
    assert response.json()["filename"] == "e.txt"


async def test_refusals(env: TestEnv) -> None:
    no_auth = await _tus(env, "POST", user=None, headers={**TUS, "Upload-Length": "1"})
    assert no_auth.status_code == 401 and no_auth.json() == {"message": "Unauthenticated upload"}
    bad_key = await _tus(
        env,
        "POST",
        user=None,
        headers={
            **TUS,
            "Upload-Length": "1",
            "Authorization": basic_auth("hamlet@zulip.com", "x" * 32),
        },
    )
    assert bad_key.status_code == 401
    deferred = await _tus(env, "POST", headers={**TUS, "Upload-Defer-Length": "1"})
    assert deferred.status_code == 411
    assert deferred.json() == {"message": "SizeIsDeferred is not supported"}
    limit = env.services.settings.max_file_upload_mib
    large = await _tus(env, "POST", headers={**TUS, "Upload-Length": str(limit * 1024 * 1024 + 1)})
    assert large.status_code == 413
    assert large.json() == {
        "message": f"Uploaded file is larger than the allowed limit of {limit} MiB"
    }
    assert (await _tus(env, "POST", headers={"Upload-Length": "1"})).status_code == 412
    assert (await _tus(env, "POST", headers={**TUS})).status_code == 400
    path = await _create(env, 4)
    wrong_type = await _tus(
        env, "PATCH", path, headers={**TUS, "Upload-Offset": "0"}, content=b"ab"
    )
    assert wrong_type.status_code == 415
    too_much = await _patch(env, path, 0, b"abcdef")
    assert too_much.status_code == 413
    assert (await _tus(env, "HEAD", path)).headers["upload-offset"] == "0"
    # Another user's upload does not exist for them.
    assert (await _tus(env, "HEAD", path, "othello")).status_code == 404
    assert (await _patch(env, path, 0, b"ab", "othello")).status_code == 404
    assert (await _tus(env, "HEAD", "/" + "0" * 48)).status_code == 404
    assert (await _tus(env, "HEAD", "/../etc")).status_code == 404


async def test_termination(env: TestEnv) -> None:
    path = await _create(env, 4)
    assert (await _patch(env, path, 0, b"ab")).status_code == 204
    assert (await _tus(env, "DELETE", path, "othello")).status_code == 404
    assert (await _tus(env, "DELETE", path)).status_code == 204
    assert (await _tus(env, "HEAD", path)).status_code == 404
    assert list((env.services.settings.data_dir / "tus").iterdir()) == []


async def test_unfinished_uploads_expire(clock_env: TestEnv) -> None:
    env = clock_env
    path = await _create(env, 4)
    assert (await _patch(env, path, 0, b"ab")).status_code == 204
    clock: Any = env.services.clock
    clock.advance(UPLOAD_LIFETIME_SECONDS + 1)
    assert (await _tus(env, "HEAD", path)).status_code == 404
    assert (await _patch(env, path, 2, b"cd")).status_code == 404
    root = env.services.settings.data_dir / "tus"
    assert any(root.iterdir())
    # The next creation sweeps expired uploads away.
    await _create(env, 1)
    names = {p.name for p in root.iterdir()}
    assert not any(name.startswith(path.strip("/")) for name in names)
