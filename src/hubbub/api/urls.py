"""The organization's public URL, as clients should use it.

Zulip builds it from its configuration alone (``EXTERNAL_HOST``), never from the request:
a Host header is the client's to choose, and a URL taken from it would let anyone make
the server advertise (in ``/server_settings``, ``/register``, push notifications) a site
of theirs. hubbub does the same with ``HUBBUB_EXTERNAL_HOST``; without one, it names
itself by the address it serves, taking the Host header's spelling only when that names
this machine ("localhost" and its realm subdomains, a loopback address, or the address
it listens on), so that a client reaching it as ``localhost:9991`` is told that.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING

from hubbub.api.auth import DEFAULT_ROOT_DOMAIN
from hubbub.api.headers import header
from hubbub.settings import Settings, site_url

if TYPE_CHECKING:
    from hubbub.api.endpoint import ApiRequest

_PORT = re.compile(r"^[0-9]{1,5}$")
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
_WILDCARD_ADDRESSES = {"", "0.0.0.0", "::"}


def realm_url(req: ApiRequest) -> str:
    """``scheme://host`` of the request's realm."""
    subdomain = req.realm.string_id if req.realm is not None else ""
    host = header(req.http.scope, b"host") or ""
    return configured_realm_url(req.services.settings, subdomain, host, req.http.url.scheme)


def configured_realm_url(settings: Settings, subdomain: str, host: str, scheme: str) -> str:
    """The URL of the realm on ``subdomain`` for a request that named ``host``: the
    configured external host, else this machine as the request named it, else the
    address the server listens on."""
    if settings.external_host:
        return f"{scheme}://{subdomain + '.' if subdomain else ''}{settings.external_host}"
    local = _local_host(host, subdomain, settings)
    if local is not None:
        return f"{scheme}://{local}"
    return site_url(subdomain, settings.host, settings.port)


def _local_host(host: str, subdomain: str, settings: Settings) -> str | None:
    """``host`` (a Host header) normalised, if it names this machine and the realm on
    ``subdomain``; None for any other name."""
    name, port = _split_host(host.strip().lower())
    if name is None or (port and not _PORT.match(port)):
        return None
    suffix = f":{port}" if port else ""
    if subdomain:
        # Realm subdomains hang off "localhost" when no external host is configured.
        expected = f"{subdomain}.{DEFAULT_ROOT_DOMAIN}"
        if name != expected or not all(_LABEL.match(label) for label in subdomain.split(".")):
            return None
        return expected + suffix
    if name == DEFAULT_ROOT_DOMAIN or name == settings.host.lower():
        if name in _WILDCARD_ADDRESSES:
            return None
        return _bracketed(name) + suffix
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return None
    return _bracketed(name) + suffix if address.is_loopback else None


def _split_host(host: str) -> tuple[str | None, str]:
    """A Host header's name and port ("" without one); None as the name when malformed."""
    if host.startswith("["):
        name, bracket, rest = host[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None, ""
        return name, rest[1:]
    if host.count(":") > 1:
        return None, ""
    name, _, port = host.partition(":")
    return (name or None), port


def _bracketed(name: str) -> str:
    return f"[{name}]" if ":" in name else name
