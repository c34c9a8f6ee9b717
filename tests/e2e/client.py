"""Helpers for driving hubbub with the official ``zulip`` client."""

from __future__ import annotations

from typing import Any

import zulip


def make_client(**kwargs: Any) -> zulip.Client:
    # Without retries a 5xx fails the test at once instead of after ten 1 s retries.
    return zulip.Client(retry_on_errors=False, **kwargs)


def close(client: zulip.Client) -> None:
    if client.session is not None:
        client.session.close()


def assert_ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result.get("result") == "success", result
    assert result.get("msg") == "", result
    return result


def assert_error(result: dict[str, Any], code: str, msg: str) -> None:
    assert (result.get("result"), result.get("code"), result.get("msg")) == (
        "error",
        code,
        msg,
    ), result
