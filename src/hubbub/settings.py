"""Frozen settings, built from command-line flags over ``HUBBUB_*`` environment variables."""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

DEFAULT_DATA_DIR = "./hubbub-data"
DEFAULT_OWNER_EMAIL = "admin@hubbub.local"
# Zulip's default API rate limit: 200 requests per minute per user.
DEFAULT_RATE_LIMIT = 200
DEFAULT_LOGIN_ATTEMPTS_PER_ADDRESS = 30


class SettingsError(ValueError):
    """A setting has a value hubbub cannot use; the message is shown to the user as is."""


@dataclass(frozen=True)
class Settings:
    data_dir: Path = Path(DEFAULT_DATA_DIR)
    database_url: str = ""
    redis_url: str = ""
    # Prefix of every Redis key, so several installations (or test runs) can share a Redis.
    redis_namespace: str = "hubbub"
    host: str = "127.0.0.1"
    port: int = 9991
    workers: int = 1
    owner_email: str = DEFAULT_OWNER_EMAIL
    # Requests per user per minute; 0 disables rate limiting.
    rate_limit: int = DEFAULT_RATE_LIMIT
    rate_limit_window_seconds: float = 60.0
    # The host name that realms' subdomains hang off ("chat.example.com" makes
    # "eng.chat.example.com" the realm "eng"). Empty: derived from the request's Host.
    external_host: str = ""
    # Seconds before a quiet long-poll ends with a heartbeat; None: Zulip's 45-55 s.
    heartbeat_seconds: float | None = None
    # How often idle event queues are looked for and removed.
    queue_gc_interval_seconds: float = 60.0
    # Save in-memory event queues on shutdown and restore them at start.
    persist_queues: bool = True
    # Event queues one user may hold; a new one beyond that removes their least recently
    # used queue. And what one queue may hold (KiB of events not yet acknowledged) before
    # it is removed, its client then registering again.
    max_queues_per_user: int = 20
    max_queue_kib: int = 4096
    # HTTP limits: the request line and headers together, and how long a client may take
    # to send them, and may pause while sending a body, before it gets 431 or 408.
    http_max_header_kib: int = 64
    http_header_timeout_seconds: float = 30.0
    http_body_timeout_seconds: float = 60.0
    # Zulip's WEB_PUBLIC_STREAMS_ENABLED server setting.
    web_public_streams_enabled: bool = True
    # Largest upload accepted by POST /user_uploads (Zulip's MAX_FILE_UPLOAD_SIZE, MiB).
    max_file_upload_mib: int = 100
    # Uploads no message ever referenced are deleted this many days after upload.
    unclaimed_upload_days: int = 21
    # Zulip's push notification bouncer (PUSH_NOTIFICATION_BOUNCER_URL) and this server's
    # registration with it (ZULIP_ORG_ID, ZULIP_ORG_KEY); no URL: push notifications off.
    push_bouncer_url: str = ""
    push_bouncer_org_id: str = ""
    push_bouncer_org_key: str = ""
    # Password login attempts one address may make in ten minutes, whatever the accounts.
    login_attempts_per_address: int = DEFAULT_LOGIN_ATTEMPTS_PER_ADDRESS
    # Addresses (IPs or CIDR networks) of reverse proxies whose X-Forwarded-For and
    # X-Forwarded-Proto headers are believed; empty: no client's are.
    trusted_proxies: tuple[str, ...] = ()

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'hubbub.db').resolve()}"

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be an integer, not {raw!r}") from None


def _env_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number of seconds, not {raw!r}") from None


def _env_networks(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """A comma-separated list of IP addresses and CIDR networks, each checked."""
    entries = tuple(e.strip() for e in env.get(name, "").split(",") if e.strip())
    for entry in entries:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise SettingsError(
                f"{name} must list IP addresses or networks (a,b/24,...), not {entry!r}"
            ) from None
    return entries


# A host name (labels of letters, digits and hyphens) or a bracketed IPv6 address, and an
# optional port: what Zulip's EXTERNAL_HOST holds (never a URL).
_EXTERNAL_HOST = re.compile(
    r"^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*"
    r"|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?$",
    re.IGNORECASE,
)
_URL_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")


def _check_external_host(value: str) -> None:
    if value and not _EXTERNAL_HOST.match(value):
        hint = " (without the scheme or a path)" if "/" in value else ""
        raise SettingsError(
            f"HUBBUB_EXTERNAL_HOST must be a host name with an optional port, such as "
            f"chat.example.com or chat.example.com:8443{hint}, not {value!r}"
        )


def _check_database_url(url: str) -> None:
    """A URL SQLAlchemy can read, naming SQLite or PostgreSQL; the message never shows
    the URL's password."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    shown = _URL_PASSWORD.sub(r"\1***@", url)
    try:
        backend = make_url(url).get_backend_name()
    except (ArgumentError, ValueError):
        raise SettingsError(
            f"--database-url (HUBBUB_DATABASE_URL) is not a database URL: {shown!r}; "
            "use sqlite:///PATH or postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
        ) from None
    if backend not in ("sqlite", "postgresql"):
        raise SettingsError(
            f"unsupported database URL {shown!r}: use sqlite:///PATH or postgresql://USER@HOST/DB"
        )


def _check_redis_url(url: str) -> None:
    # The Redis client is imported only when Redis is configured (idle memory).
    from hubbub.redis_connection import check_redis_url

    try:
        check_redis_url(url)
    except ValueError as exc:
        shown = str(exc).replace(url, _URL_PASSWORD.sub(r"\1***@", url))
        raise SettingsError(f"--redis-url (HUBBUB_REDIS_URL): {shown}") from None


def sqlite_relative_path(settings: Settings) -> Path | None:
    """The database file, when a ``sqlite:`` URL names it relative to the working
    directory. SQLAlchemy reads ``sqlite:///tmp/x`` (three slashes) as the relative path
    ``tmp/x``; the absolute ``/tmp/x`` takes four (``sqlite:////tmp/x``)."""
    if not settings.database_url.startswith("sqlite"):
        return None
    from sqlalchemy.engine import make_url

    database = make_url(settings.database_url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    path = Path(database)
    return None if path.is_absolute() else path


def load_settings(
    overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Settings from the environment, with non-None ``overrides`` (command-line flags) on top."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {
        "data_dir": Path(env.get("HUBBUB_DATA_DIR") or DEFAULT_DATA_DIR),
        "database_url": env.get("HUBBUB_DATABASE_URL", ""),
        "redis_url": env.get("HUBBUB_REDIS_URL", ""),
        "redis_namespace": env.get("HUBBUB_REDIS_NAMESPACE") or "hubbub",
        "host": env.get("HUBBUB_HOST") or "127.0.0.1",
        "port": _env_int(env, "HUBBUB_PORT", 9991),
        "owner_email": env.get("HUBBUB_OWNER_EMAIL") or DEFAULT_OWNER_EMAIL,
        "rate_limit": _env_int(env, "HUBBUB_RATE_LIMIT", DEFAULT_RATE_LIMIT),
        "external_host": env.get("HUBBUB_EXTERNAL_HOST", ""),
        "workers": _env_int(env, "HUBBUB_WORKERS", 1),
        "max_file_upload_mib": _env_int(env, "HUBBUB_MAX_FILE_UPLOAD_MIB", 100),
        "unclaimed_upload_days": _env_int(env, "HUBBUB_UNCLAIMED_UPLOAD_DAYS", 21),
        "max_queues_per_user": _env_int(env, "HUBBUB_MAX_QUEUES_PER_USER", 20),
        "max_queue_kib": _env_int(env, "HUBBUB_MAX_QUEUE_KIB", 4096),
        "http_max_header_kib": _env_int(env, "HUBBUB_HTTP_MAX_HEADER_KIB", 64),
        "http_header_timeout_seconds": _env_seconds(env, "HUBBUB_HTTP_HEADER_TIMEOUT", 30.0),
        "http_body_timeout_seconds": _env_seconds(env, "HUBBUB_HTTP_BODY_TIMEOUT", 60.0),
        "push_bouncer_url": env.get("HUBBUB_PUSH_BOUNCER_URL", ""),
        "push_bouncer_org_id": env.get("HUBBUB_PUSH_BOUNCER_ORG_ID", ""),
        "push_bouncer_org_key": env.get("HUBBUB_PUSH_BOUNCER_ORG_KEY", ""),
        "login_attempts_per_address": _env_int(
            env, "HUBBUB_LOGIN_ATTEMPTS_PER_ADDRESS", DEFAULT_LOGIN_ATTEMPTS_PER_ADDRESS
        ),
        "trusted_proxies": _env_networks(env, "HUBBUB_TRUSTED_PROXIES"),
    }
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = Path(value) if key == "data_dir" else value
    settings = Settings(**values)
    _check_external_host(settings.external_host)
    if settings.database_url:
        _check_database_url(settings.database_url)
    if settings.redis_url:
        _check_redis_url(settings.redis_url)
    if settings.rate_limit < 0:
        raise SettingsError("HUBBUB_RATE_LIMIT must be 0 (off) or a positive integer")
    if not 0 < settings.port < 65536:
        raise SettingsError(f"port must be between 1 and 65535, not {settings.port}")
    if settings.workers < 1:
        raise SettingsError("--workers must be at least 1")
    for name, value in (
        ("HUBBUB_MAX_QUEUES_PER_USER", settings.max_queues_per_user),
        ("HUBBUB_MAX_QUEUE_KIB", settings.max_queue_kib),
        ("HUBBUB_HTTP_MAX_HEADER_KIB", settings.http_max_header_kib),
    ):
        if value < 1:
            raise SettingsError(f"{name} must be a positive integer, not {value}")
    for name, seconds in (
        ("HUBBUB_HTTP_HEADER_TIMEOUT", settings.http_header_timeout_seconds),
        ("HUBBUB_HTTP_BODY_TIMEOUT", settings.http_body_timeout_seconds),
    ):
        if not seconds > 0:
            raise SettingsError(f"{name} must be a positive number of seconds, not {seconds}")
    if settings.login_attempts_per_address < 1:
        raise SettingsError("HUBBUB_LOGIN_ATTEMPTS_PER_ADDRESS must be a positive integer")
    return settings


def site_url(subdomain: str, host: str, port: int, external_host: str = "") -> str:
    """The URL clients use for a realm."""
    if external_host:
        base = external_host
    else:
        # A wildcard bind address is not something a client can connect to.
        reachable = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        base = f"{reachable}:{port}"
        if subdomain:
            base = f"localhost:{port}"
    return f"http://{subdomain + '.' if subdomain else ''}{base}"
