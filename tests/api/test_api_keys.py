"""API keys: ``POST /users/me/api_key/regenerate`` and the ``hubbub``
commands that rotate or revoke keys. A replaced key must stop working at once, in the
running server, whoever replaced it."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import httpx
import orjson
import sqlalchemy as sa

from hubbub.db.tables import user_profile
from tests.e2e.conftest import run_hubbub, serving
from tests.helpers import TestEnv, assert_error, assert_success

API_KEY = re.compile(r"^[A-Za-z0-9]{32}$")


async def _stored_key(env: TestEnv, user_id: int) -> str:
    async with env.services.db.read() as conn:
        query = sa.select(user_profile.c.api_key).where(user_profile.c.id == user_id)
        return str((await conn.execute(query)).scalar_one())


async def test_regenerate_replaces_the_key_at_once(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    old = env.client("hamlet")
    body = assert_success(await old.post("/users/me/api_key/regenerate"))
    new_key = body["api_key"]
    assert API_KEY.match(new_key) and new_key != hamlet.api_key
    assert set(body) == {"result", "msg", "api_key"}
    assert await _stored_key(env, hamlet.id) == new_key
    # The old key is refused on the very next request; the new one works.
    assert_error(await old.get("/users/me"), "Invalid API key", status=401, code="UNAUTHORIZED")
    new = env.client("hamlet")
    new.user = replace(hamlet, api_key=new_key)
    assert assert_success(await new.get("/users/me"))["user_id"] == hamlet.id
    # Nobody else's key changed.
    othello = env.users["othello"]
    assert await _stored_key(env, othello.id) == othello.api_key


async def test_regenerate_needs_authentication(env: TestEnv) -> None:
    anonymous = env.client("hamlet")
    anonymous.user = None
    assert_error(
        await anonymous.post("/users/me/api_key/regenerate"),
        "Not logged in: API authentication or user session required",
        status=401,
        code="UNAUTHORIZED",
    )
    assert await _stored_key(env, env.users["hamlet"].id) == env.users["hamlet"].api_key


def test_commands_rotate_and_revoke_keys_of_a_running_server(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serving(data_dir) as server:
        owner = server.owner()
        url = f"{server.url}/api/v1/users/me"
        made = httpx.post(
            f"{server.url}/api/v1/users",
            data={"email": "m@example.com", "password": "a long password", "full_name": "Member"},
            auth=(owner.email, owner.api_key),
            timeout=10,
        )
        assert made.status_code == 200, made.text
        member_key = httpx.post(
            f"{server.url}/api/v1/fetch_api_key",
            data={"username": "m@example.com", "password": "a long password"},
            timeout=10,
        ).json()["api_key"]
        assert httpx.get(url, auth=("m@example.com", member_key), timeout=10).status_code == 200

        rotated = run_hubbub(
            "rotate-api-key", "--realm", "", "--email", "m@example.com", "--json",
            "--data-dir", str(data_dir), cwd=tmp_path,
        )  # fmt: skip
        assert rotated.returncode == 0, rotated.stderr
        new_key = orjson.loads(rotated.stdout)["api_key"]
        assert API_KEY.match(new_key) and new_key != member_key
        assert new_key not in rotated.stderr
        # The running server refuses the old key at once and accepts the new one.
        assert httpx.get(url, auth=("m@example.com", member_key), timeout=10).status_code == 401
        assert httpx.get(url, auth=("m@example.com", new_key), timeout=10).status_code == 200

        revoked = run_hubbub(
            "revoke-api-keys", "--realm", "", "--all-users", "--json",
            "--data-dir", str(data_dir), cwd=tmp_path,
        )  # fmt: skip
        assert revoked.returncode == 0, revoked.stderr
        assert orjson.loads(revoked.stdout) == {"revoked": 2}
        for email, key in (("m@example.com", new_key), (owner.email, owner.api_key)):
            assert httpx.get(url, auth=(email, key), timeout=10).status_code == 401
        # A person gets a working key back with their password.
        again = httpx.post(
            f"{server.url}/api/v1/fetch_api_key",
            data={"username": "m@example.com", "password": "a long password"},
            timeout=10,
        ).json()["api_key"]
        assert again not in (member_key, new_key)
        assert httpx.get(url, auth=("m@example.com", again), timeout=10).status_code == 200

        usage = run_hubbub(
            "revoke-api-keys", "--realm", "", "--data-dir", str(data_dir), cwd=tmp_path
        )
        assert usage.returncode == 1
        assert (
            usage.stderr.strip()
            == "hubbub: error: give either --email (one or more) or --all-users"
        )
        # No key, old or new, was written to the server's log.
        log = server.stderr() + server.stdout().split("API key:")[-1].split("\n", 1)[-1]
        for secret in (member_key, new_key, again, "a long password"):
            assert secret not in log
