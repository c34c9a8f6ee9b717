"""No secret reaches the server's log: API keys, passwords and Authorization
headers, on success, on failed logins, on errors, at DEBUG level, on SQLite."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx

from tests.e2e.conftest import hubbub_env, serving

PASSWORD = "correct horse battery staple"


def test_secrets_stay_out_of_the_log(tmp_path: Path) -> None:
    env = hubbub_env(HUBBUB_LOG_LEVEL="DEBUG")
    with serving(tmp_path / "data", env=env) as server:
        owner = server.owner()
        api = f"{server.url}/api/v1"
        with httpx.Client(timeout=10) as http:
            made = http.post(
                f"{api}/users",
                data={"email": "s@example.com", "password": PASSWORD, "full_name": "Secret"},
                auth=(owner.email, owner.api_key),
            )
            assert made.status_code == 200, made.text
            key = http.post(
                f"{api}/fetch_api_key", data={"username": "s@example.com", "password": PASSWORD}
            ).json()["api_key"]
            wrong_password = PASSWORD[::-1]
            assert (
                http.post(
                    f"{api}/fetch_api_key",
                    data={"username": "s@example.com", "password": wrong_password},
                ).status_code
                == 401
            )
            wrong_key = key[::-1]
            assert http.get(f"{api}/users/me", auth=("s@example.com", wrong_key)).status_code == 401
            assert http.get(f"{api}/users/me", auth=("s@example.com", key)).status_code == 200
            # Errors of every kind with the credentials attached.
            for path in ("/messages/0", "/nope", "/users/me/api_key/regenerate"):
                http.request("GET", f"{api}{path}", auth=("s@example.com", key))
            rotated = http.post(
                f"{api}/users/me/api_key/regenerate", auth=("s@example.com", key)
            ).json()["api_key"]
            http.post(
                f"{api}/messages",
                data={"type": "direct", "to": "[1]", "content": f"my key is not {wrong_key}"},
                auth=("s@example.com", rotated),
            )
    log = server.stderr()
    assert "DEBUG" in log or "INFO" in log  # the log was written at all
    header = base64.b64encode(f"s@example.com:{key}".encode()).decode()
    for secret in (key, rotated, PASSWORD, wrong_password, header, owner.api_key):
        assert secret not in log, f"a secret reached the log: {secret[:4]}…"
    # serve prints the first owner's key on a terminal only; the test's standard output is
    # a file, so the key is only in the zuliprc.
    assert owner.api_key not in server.stdout()
