"""The organization's public URL, as clients should use it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hubbub.api.headers import header

if TYPE_CHECKING:
    from hubbub.api.endpoint import ApiRequest


def realm_url(req: ApiRequest) -> str:
    """``scheme://host`` of the realm: the configured external host, else the request's."""
    settings = req.services.settings
    scheme = req.http.url.scheme
    if settings.external_host and req.realm is not None:
        sub = req.realm.string_id
        return f"{scheme}://{sub + '.' if sub else ''}{settings.external_host}"
    return f"{scheme}://{header(req.http.scope, b'host') or req.http.url.netloc}"
