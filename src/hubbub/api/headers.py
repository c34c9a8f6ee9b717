"""A request header straight from the ASGI scope."""

from __future__ import annotations

from starlette.types import Scope


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lowercase: ASGI servers give names lowercased),
    by one scan of the request's few headers instead of building Starlette's ``Headers``
    (a lowercase and an encode for each look-up; every API request reads three or four)."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")  # type: ignore[no-any-return]
    return None
