"""Resumable uploads with a real tus client (``tuspy``) against a real ``hubbub serve``:
an upload in chunks, interrupted and resumed from the server's offset by a new client,
ends as an attachment its owner can download (feature level 295)."""

from __future__ import annotations

import io
import json
import os

import requests
import zulip
from tusclient import client as tus_client
from tusclient.exceptions import TusCommunicationError

from tests.e2e.client import assert_ok


def _site(user: zulip.Client) -> str:
    return str(user.base_url).removesuffix("/api/").removesuffix("/api")


def _tus(user: zulip.Client) -> tus_client.TusClient:
    auth = requests.auth._basic_auth_str(user.email, user.api_key)
    return tus_client.TusClient(_site(user) + "/api/v1/tus", headers={"Authorization": auth})


def test_resumed_upload_becomes_attachment(owner_client: zulip.Client) -> None:
    data = os.urandom(300_000)
    uploader = _tus(owner_client).uploader(
        file_stream=io.BytesIO(data),
        chunk_size=64 * 1024,
        metadata={"filename": "big data.bin", "filetype": "application/octet-stream"},
    )
    # Two chunks, then the client goes away.
    uploader.upload(stop_at=128 * 1024)
    assert uploader.offset == 128 * 1024
    url = uploader.url
    assert url is not None and "/api/v1/tus/" in url

    # A new client resumes at the offset the server reports (HEAD).
    resumed = _tus(owner_client).uploader(
        file_stream=io.BytesIO(data), chunk_size=100 * 1024, url=url
    )
    assert resumed.offset == 128 * 1024
    resumed.upload()
    assert resumed.offset == len(data)
    assert resumed.request is not None
    result = json.loads(resumed.request.response_content)
    assert result["filename"] == "big data.bin"
    assert result["url"].endswith("/big-data.bin")

    download = requests.get(
        _site(owner_client) + result["url"],
        auth=(owner_client.email, owner_client.api_key),
        timeout=10,
    )
    assert download.status_code == 200 and download.content == data
    [item] = assert_ok(owner_client.get_attachments())["attachments"]
    assert item["name"] == "big data.bin" and item["size"] == len(data)


def test_client_without_credentials_is_refused(owner_client: zulip.Client) -> None:
    anonymous = tus_client.TusClient(_site(owner_client) + "/api/v1/tus")
    uploader = anonymous.uploader(file_stream=io.BytesIO(b"x"), chunk_size=1024)
    try:
        uploader.upload()
    except TusCommunicationError as error:
        assert error.status_code == 401
    else:
        raise AssertionError("an upload without credentials went through")
