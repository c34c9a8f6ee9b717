"""The organization's public URL, as clients should use it.

Zulip builds it from its configuration alone (``EXTERNAL_HOST``), never from the request:
a Host header is the client's to choose, and a URL taken from it would let anyone make
the server advertise (in ``/server_settings``, ``/register``, push notifications) a site
of theirs. hubbub does the same with ``HUBBUB_EXTERNAL_HOST``; without one, it names
itself by the address it serves, taking the Host header's spelling only when that names
this machine ("localhost" and its realm subdomains, a loopback address, or the address
it listens on), so that a client reaching it as ``localhost:9991`` is told that.

It also answers only to the names it serves (``served_host``), as Zulip's allowed hosts
do: a page on another site whose name an attacker points at this server's address (DNS
rebinding) must not get answers, nor a cache keyed by the name it asked for.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket
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


def served_host(host: str, settings: Settings) -> bool:
    """Whether the server answers a request whose Host header is ``host``.

    With an external host configured: that host and its subdomains (the realms on them),
    plus "localhost" and loopback addresses for the machine's own checks. Without one:
    names that no public DNS name can stand for, so that DNS rebinding cannot reach the
    server: addresses, names of one label ("localhost", a machine's name), subdomains of
    "localhost", the machine's host name and the address the server listens on.
    """
    return _served(host, settings.external_host.lower(), settings.host.lower())


@functools.lru_cache(maxsize=1024)
def _served(host: str, external_host: str, listen_host: str) -> bool:
    name, port = _split_host(host.strip().lower())
    if name is None:
        return not external_host and not host.strip()
    if port and not _PORT.match(port):
        return False
    if listen_host not in _WILDCARD_ADDRESSES and name == listen_host:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        address = None
    if address is not None:
        return address.is_loopback or not external_host
    if name == DEFAULT_ROOT_DOMAIN:
        return True
    if external_host:
        root = _split_host(external_host)[0] or external_host
        return name == root or (name.endswith("." + root) and _labels(name[: -len(root) - 1]))
    if name.endswith("." + DEFAULT_ROOT_DOMAIN):
        return _labels(name[: -len(DEFAULT_ROOT_DOMAIN) - 1])
    return bool(_LABEL.match(name)) or name == _machine_name()


def _labels(subdomain: str) -> bool:
    return all(_LABEL.match(label) for label in subdomain.split("."))


@functools.cache
def _machine_name() -> str:
    return socket.gethostname().lower()
