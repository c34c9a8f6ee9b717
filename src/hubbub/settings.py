"""Frozen settings, built from command-line flags over ``HUBBUB_*`` environment variables."""

from __future__ import annotations

import ipaddress
import os
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
