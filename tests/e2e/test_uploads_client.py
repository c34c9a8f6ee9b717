"""Uploads and attachments through the official ``zulip`` client, against a real
``hubbub serve``: upload, link in a message, download with the API key, list, delete."""

from __future__ import annotations

from pathlib import Path

import requests
import zulip

from tests.e2e.client import assert_error, assert_ok


def test_upload_share_download_delete(
    owner_client: zulip.Client, member_client: zulip.Client, tmp_path: Path
) -> None:
    source = tmp_path / "report notes.txt"
    source.write_bytes(b"quarterly numbers")
    with source.open("rb") as handle:
        uri = assert_ok(owner_client.upload_file(handle))["uri"]
    assert uri.startswith("/user_uploads/") and uri.endswith("/report-notes.txt")
    site = owner_client.base_url.removesuffix("/api/").removesuffix("/api")
    url = site + uri

    # Before any message links it, only the owner may download it.
    assert (
        requests.get(url, params={"api_key": member_client.api_key}, timeout=10).status_code == 403
    )
    assert_ok(
        owner_client.add_subscriptions(
            streams=[{"name": "files"}], principals=["cordelia@example.com"]
        )
    )
    sent = assert_ok(
        owner_client.send_message(
            {"type": "stream", "to": "files", "topic": "q3", "content": f"[notes]({uri})"}
        )
    )
    download = requests.get(url, params={"api_key": member_client.api_key}, timeout=10)
    assert download.status_code == 200 and download.content == b"quarterly numbers"
    assert download.headers["content-disposition"].startswith("attachment;")
    by_basic = requests.get(url, auth=(owner_client.email, owner_client.api_key), timeout=10)
    assert by_basic.content == b"quarterly numbers"
    unauthenticated = requests.get(url, timeout=10)
    assert unauthenticated.status_code == 401
    assert unauthenticated.json()["code"] == "UNAUTHORIZED"

    listing = assert_ok(owner_client.get_attachments())
    [item] = listing["attachments"]
    assert item["name"] == "report notes.txt" and item["size"] == len(b"quarterly numbers")
    assert [m["id"] for m in item["messages"]] == [sent["id"]]
    assert listing["upload_space_used"] == item["size"]
    assert assert_ok(member_client.get_attachments())["attachments"] == []

    # The zulip package has no remove_attachment helper; its generic call does the job.
    assert_error(
        member_client.call_endpoint(url=f"attachments/{item['id']}", method="DELETE"),
        "BAD_REQUEST",
        "Invalid attachment",
    )
    assert_ok(owner_client.call_endpoint(url=f"attachments/{item['id']}", method="DELETE"))
    assert assert_ok(owner_client.get_attachments())["attachments"] == []
    gone = requests.get(url, params={"api_key": owner_client.api_key}, timeout=10)
    assert gone.status_code == 404
