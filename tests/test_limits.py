"""Limits, one test each; a limit that holds in another module is named here.

- Rate limits per user and per IP, in memory and through Redis: tests/test_ratelimit.py;
  across two server processes: tests/e2e/test_workers.py.
- Upload size: tests/api/test_uploads.py::test_upload_errors (and the body limit below).
"""

from __future__ import annotations

import asyncio

import httpx

from hubbub.api.body_limit import MAX_BODY_BYTES, MIB
from hubbub.queries.message_fetch import MAX_MESSAGES_PER_FETCH
from hubbub.queries.narrow import MAX_NARROW_TERMS
from hubbub.settings import Settings
from tests.helpers import API, TestEnv, assert_error, assert_success, basic_auth, running_env
from tests.messages_helpers import send_stream_message


async def _post_raw(env: TestEnv, path: str, content: bytes, **headers: str) -> httpx.Response:
    hamlet = env.users["hamlet"]
    transport = httpx.ASGITransport(app=env.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        return await http.post(
            API + path,
            content=content,
            headers={
                "Authorization": basic_auth(hamlet.delivery_email, hamlet.api_key),
                "Content-Type": "application/x-www-form-urlencoded",
                **headers,
            },
        )


def _too_large(response: httpx.Response, limit_mib: int) -> None:
    assert_error(
        response,
        f"Request body too large (limit: {limit_mib} MiB)",
        status=413,
        code="BAD_REQUEST",
    )


async def test_request_body_size(env: TestEnv) -> None:
    await env.subscribe("hamlet", "limits")
    before = await send_stream_message(env, "hamlet", "limits")
    body = b"type=stream&to=limits&topic=t&content=" + b"x" * MAX_BODY_BYTES
    # Declared too large: refused before the application reads it.
    _too_large(await _post_raw(env, "/messages", body), MAX_BODY_BYTES // MIB)

    # Sent without a length (chunked): refused once it passes the limit. (Fields of up to
    # 512 KiB each: Starlette's form parser refuses a single field over 1 MiB by itself.)
    field = b"&f=" + b"z" * (512 * 1024)
    count = MAX_BODY_BYTES // len(field) + 2

    async def chunks() -> object:
        yield b"type=stream&to=limits&topic=t&content=hi"
        for _ in range(count):
            yield field

    hamlet = env.users["hamlet"]
    transport = httpx.ASGITransport(app=env.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        response = await http.post(
            API + "/messages",
            content=chunks(),  # type: ignore[arg-type]
            headers={
                "Authorization": basic_auth(hamlet.delivery_email, hamlet.api_key),
                "Content-Type": "application/x-www-form-urlencoded",
            },
        )
    _too_large(response, MAX_BODY_BYTES // MIB)
    # Nothing was sent; a normal request still works.
    after = await send_stream_message(env, "hamlet", "limits")
    assert after == before + 1


async def test_upload_body_limit_follows_the_upload_setting(settings: Settings) -> None:
    async with running_env(settings.with_(max_file_upload_mib=1)) as env:
        body = b"--b\r\n" + b"x" * (3 * MIB)
        response = await _post_raw(
            env, "/user_uploads", body, **{"Content-Type": "multipart/form-data; boundary=b"}
        )
        _too_large(response, 2)  # 1 MiB of file plus 1 MiB for the multipart framing


async def test_message_and_topic_lengths(env: TestEnv) -> None:
    await env.subscribe("hamlet", "limits")
    message_id = await send_stream_message(
        env, "hamlet", "limits", content="y" * 20000, topic="t" * 100
    )
    got = assert_success(
        await env.client("hamlet").get(f"/messages/{message_id}", {"apply_markdown": False})
    )["message"]
    assert len(got["content"]) == 10000 and got["content"].endswith("[message truncated]")
    assert got["subject"] == "t" * 57 + "..."


async def test_number_of_narrow_terms(env: TestEnv) -> None:
    term = {"operator": "search", "operand": "word"}
    params = {"anchor": "newest", "num_before": 10, "num_after": 0}
    client = env.client("hamlet")
    assert_success(await client.get("/messages", {**params, "narrow": [term] * MAX_NARROW_TERMS}))
    assert_error(
        await client.get("/messages", {**params, "narrow": [term] * (MAX_NARROW_TERMS + 1)}),
        f"Too many narrow terms (maximum {MAX_NARROW_TERMS}).",
    )
    assert_error(
        await client.get(
            "/messages/matches_narrow",
            {"msg_ids": [1], "narrow": [term] * (MAX_NARROW_TERMS + 1)},
        ),
        f"Too many narrow terms (maximum {MAX_NARROW_TERMS}).",
    )


async def test_num_before_plus_num_after(env: TestEnv) -> None:
    client = env.client("hamlet")
    half = MAX_MESSAGES_PER_FETCH // 2
    assert_success(
        await client.get("/messages", {"anchor": "newest", "num_before": half, "num_after": half})
    )
    assert_error(
        await client.get(
            "/messages", {"anchor": "newest", "num_before": half, "num_after": half + 1}
        ),
        f"Too many messages requested (maximum {MAX_MESSAGES_PER_FETCH}).",
    )


async def test_linkifier_patterns_cannot_backtrack_catastrophically(env: TestEnv) -> None:
    """RE2 matches in linear time: a pattern that takes a backtracking engine exponential
    time on a near-miss renders at once. The wait_for only turns a hang into a failure."""
    assert_success(
        await env.client("iago").post(
            "/realm/filters",
            {"pattern": r"(?P<id>(a+)+)b", "url_template": "https://example.com/{id}"},
        )
    )
    await env.subscribe("hamlet", "limits")
    message_id = await asyncio.wait_for(
        send_stream_message(env, "hamlet", "limits", content="a" * 5000 + "!"), timeout=60
    )
    got = assert_success(await env.client("hamlet").get(f"/messages/{message_id}"))["message"]
    assert "example.com" not in got["content"]
    # Backreferences (which need backtracking) are refused outright.
    response = await env.client("iago").post(
        "/realm/filters", {"pattern": r"(?P<id>a)\1", "url_template": "https://example.com/{id}"}
    )
    assert response.status_code == 400
    assert response.json()["msg"].startswith("Bad regular expression: ")
    filters = assert_success(await env.client("iago").get("/realm/linkifiers"))["linkifiers"]
    assert [f["pattern"] for f in filters] == [r"(?P<id>(a+)+)b"]
