"""Uploading and downloading files in tests (shared by the upload, attachment, scheduled
message and access-control tests)."""

from __future__ import annotations

import httpx

from hubbub.models import User
from tests.helpers import TestEnv, assert_success, basic_auth


async def upload(
    env: TestEnv,
    user: str,
    content: bytes = b"zulip!",
    name: str = "zulip.txt",
    content_type: str = "text/plain",
    field: str = "/home/me/zulip.txt",
) -> str:
    """Upload as the official client does (the field is named after the file's path);
    the new file's path id."""
    response = await env.client(user).request(
        "POST", "/user_uploads", files={field: (name, content, content_type)}
    )
    uri = assert_success(response)["uri"]
    assert uri.startswith("/user_uploads/")
    return str(uri[len("/user_uploads/") :])


async def fetch(
    env: TestEnv,
    path: str,
    user: str | User | None = None,
    *,
    api_key: str | None = None,
    method: str = "GET",
    host: str = "localhost",
) -> httpx.Response:
    """A download from the site's root (not /api/v1), with Basic auth as ``user``."""
    headers = {"Host": host}
    if user is not None:
        u = env.users[user] if isinstance(user, str) else user
        headers["Authorization"] = basic_auth(u.delivery_email, u.api_key)
    params = {"api_key": api_key} if api_key else None
    transport = httpx.ASGITransport(app=env.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        return await http.request(method, path, headers=headers, params=params)
