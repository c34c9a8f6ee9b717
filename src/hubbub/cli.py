"""The ``hubbub`` command: serve, create-realm, create-user, zuliprc.

Every failure a user can cause ends in one line on standard error and exit status 1; with
``--json`` standard output carries only the JSON object, and logs go to standard error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import logging
import os
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import orjson
import typer

from hubbub.actions.users import is_valid_email
from hubbub.bootstrap import (
    OWNER_PASSWORD_FILE,
    create_user_in_realm,
    ensure_first_realm,
    find_user,
    unused_path,
    write_private_file,
    write_zuliprc,
    zuliprc_text,
)
from hubbub.db.engine import DatabaseUnavailableError
from hubbub.db.migrate import upgrade
from hubbub.errors import ApiError
from hubbub.events.outbox import store_outbox
from hubbub.logs import configure_logging
from hubbub.models import ROLE_NAMES, BotType, Role
from hubbub.services import Services, build_services
from hubbub.settings import (
    Settings,
    SettingsError,
    load_settings,
    site_url,
    sqlite_relative_path,
)
from hubbub.transaction import Tx

app = typer.Typer(
    name="hubbub",
    help="A light, self-hosted team-chat server that speaks the Zulip API.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
logger = logging.getLogger("hubbub")
T = TypeVar("T")

DataDirOption = Annotated[
    Path | None, typer.Option("--data-dir", help="Data directory [env HUBBUB_DATA_DIR].")
]
DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database-url", help="sqlite:///PATH or postgresql://… [env HUBBUB_DATABASE_URL]."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def fail(message: str) -> NoReturn:
    typer.echo(f"hubbub: error: {message}", err=True)
    raise typer.Exit(1)


def warn(message: str) -> None:
    typer.echo(f"hubbub: warning: {message}", err=True)


def _settings(**flags: Any) -> Settings:
    try:
        settings = load_settings(flags)
    except SettingsError as exc:
        fail(str(exc))
    relative = sqlite_relative_path(settings)
    if relative is not None:
        # SQLAlchemy's sqlite:///PATH is relative; an absolute path takes four slashes.
        warn(
            f"the database file of {settings.database_url} is {relative}, relative to the "
            f"working directory ({Path.cwd() / relative}); for the absolute path "
            f"/{relative} write sqlite:////{relative}"
        )
    return settings


def _check_sqlite_location(settings: Settings) -> None:
    """Say which directory or file is wrong before SQLite says only that it is "unable to
    open database file": its journal files are written beside the database."""
    from sqlalchemy.engine import make_url

    url = make_url(settings.effective_database_url)
    if url.get_backend_name() != "sqlite" or not url.database:
        return
    path = Path(url.database).absolute()
    directory = path.parent
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        fail(f"cannot create the database {path}: {existing} is a file, not a directory")
    if not _writable(existing):
        if existing == directory:
            fail(
                f"cannot write the database {path}: the directory {directory} is not writable "
                "by this user (SQLite writes its journal files beside the database)"
            )
        fail(f"cannot create the data directory {directory}: {existing} is not writable")
    if path.exists() and not _writable(path):
        fail(f"cannot write the database {path}: the file is read-only for this user")


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK | (os.X_OK if path.is_dir() else 0))


async def _check_redis(services: Services) -> None:
    if services.redis is None:
        return
    from redis.exceptions import RedisError

    try:
        await asyncio.wait_for(services.redis.ping(), REDIS_CHECK_SECONDS)
    except (RedisError, OSError, TimeoutError) as exc:
        where = services.settings.redis_url.rsplit("@", 1)[-1]
        reason = str(exc) or "no answer"
        raise RedisUnavailableError(
            f"cannot use Redis at {where} (--redis-url, HUBBUB_REDIS_URL): {reason}"
        ) from exc


class RedisUnavailableError(RuntimeError):
    """Redis cannot be reached; the message is meant for the user."""


# Seconds a command waits for Redis to answer its first PING.
REDIS_CHECK_SECONDS = 10.0


class CommandServices(Services):
    """The services of a command: its write transactions also store their events in the
    outbox (``events/outbox.py``), for a server running on the same database to publish.
    The command's own bus reaches no client: without Redis the server's event queues are
    in the server's memory."""

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Tx]:
        async with self.db.write() as conn:
            tx = Tx(conn, self.subscribers)
            yield tx
            await store_outbox(conn, tx.notices, tx.stale_credentials, self.clock.now())
        for job in tx.after_commit:
            await job()


def command_services(settings: Settings) -> CommandServices:
    built = build_services(settings)
    return CommandServices(**{f.name: getattr(built, f.name) for f in dataclasses.fields(built)})


def _run(settings: Settings, work: Callable[[Services], Awaitable[T]], *, outbox: bool = True) -> T:
    """Open the database (applying migrations), run ``work``, close; errors become one line.
    ``outbox``: its events are kept for a running server (``CommandServices``)."""

    _check_sqlite_location(settings)

    async def main() -> T:
        services = command_services(settings) if outbox else build_services(settings)
        try:
            await services.db.check_reachable()
            await _check_redis(services)
            await upgrade(services.db)
            return await work(services)
        finally:
            await services.close()

    try:
        return asyncio.run(main())
    except (DatabaseUnavailableError, RedisUnavailableError) as exc:
        fail(" ".join(str(exc).split()))
    except ApiError as exc:
        fail(exc.msg)


def _configure_logging() -> None:
    try:
        configure_logging()
    except SettingsError as exc:
        fail(str(exc))


def _check_port_free(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                fail(f"port {port} on {host} is already in use (choose another with --port)")
            fail(f"cannot listen on {host}:{port}: {exc.strerror}")


@app.command()
def serve(
    host: Annotated[
        str | None, typer.Option(help="Address to listen on [env HUBBUB_HOST].")
    ] = None,
    port: Annotated[int | None, typer.Option(help="Port [env HUBBUB_PORT].")] = None,
    data_dir: DataDirOption = None,
    database_url: DatabaseOption = None,
    redis_url: Annotated[
        str | None, typer.Option("--redis-url", help="redis://… [env HUBBUB_REDIS_URL].")
    ] = None,
    workers: Annotated[
        int | None, typer.Option(help="Worker processes (PostgreSQL + Redis).")
    ] = None,
    owner_email: Annotated[
        str | None,
        typer.Option("--owner-email", help="First owner's email [env HUBBUB_OWNER_EMAIL]."),
    ] = None,
) -> None:
    """Apply pending migrations, create the first organization if needed, and serve."""
    # Everything the server creates (the database and its journal, saved queues,
    # uploads, any log file of its own) is for its own user only.
    os.umask(0o077)
    _configure_logging()
    settings = _settings(
        host=host,
        port=port,
        data_dir=data_dir,
        database_url=database_url,
        redis_url=redis_url,
        workers=workers,
        owner_email=owner_email,
    )
    if settings.workers > 1:
        if settings.effective_database_url.startswith("sqlite"):
            fail("--workers above 1 needs PostgreSQL (--database-url): SQLite runs in one process")
        if not settings.redis_url:
            fail("--workers above 1 needs Redis (--redis-url) so workers share queues and limits")
    if not is_valid_email(settings.owner_email):
        fail(
            f"--owner-email (HUBBUB_OWNER_EMAIL) is not an email address: {settings.owner_email!r}"
        )
    _check_port_free(settings.host, settings.port)
    # Only an empty database gets its first organization: no event queue can await news
    # of it, and stored events would reach the first queues of the server started next,
    # after their state already shows what the events tell.
    first = _run(settings, ensure_first_realm, outbox=False)
    if first is not None:
        site = site_url("", settings.host, settings.port, settings.external_host)
        # A data directory shared with another database keeps that database's owner's
        # files: this owner's go beside them.
        zuliprc = unused_path((settings.data_dir / "zuliprc").resolve())
        if zuliprc.name != "zuliprc":
            warn(f"kept the existing zuliprc of another database's owner; this one is {zuliprc}")
        write_zuliprc(zuliprc, first.user.delivery_email, first.user.api_key, site)
        zuliprc_line = (
            f"  zuliprc:  {zuliprc}  (the official Zulip clients read it: "
            f"zulip.Client(config_file=...), or --config-file for the zulip tools)"
        )
        if sys.stdout.isatty():
            typer.echo(
                "Created the organization and its owner (shown once; keep them safe):\n"
                f"  URL:      {site}\n"
                f"  Email:    {first.user.delivery_email}\n"
                f"  Password: {first.password}\n"
                f"  API key:  {first.user.api_key}\n" + zuliprc_line
            )
        else:
            # Output that is not a terminal ends up in a log (a service manager's journal,
            # a redirected file): the secrets go to files only their owner can read.
            password_file = unused_path((settings.data_dir / OWNER_PASSWORD_FILE).resolve())
            write_private_file(password_file, first.password + "\n")
            typer.echo(
                "Created the organization and its owner:\n"
                f"  URL:      {site}\n"
                f"  Email:    {first.user.delivery_email}\n"
                f"  Password: in {password_file}\n"
                f"  API key:  in {zuliprc}\n" + zuliprc_line
            )
    from hubbub.server import exec_server

    exec_server(settings)


@app.command("create-realm")
def create_realm(
    subdomain: Annotated[str, typer.Option(help='Subdomain ("" for the root domain).')],
    name: Annotated[str, typer.Option(help="Organization name.")],
    data_dir: DataDirOption = None,
    database_url: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create an organization (realm)."""
    from hubbub.actions.realms import check_create_realm

    settings = _settings(data_dir=data_dir, database_url=database_url)

    async def work(services: Services) -> Any:
        async with services.db.write() as conn:
            return await check_create_realm(
                conn, subdomain=subdomain, name=name, now=services.clock.now()
            )

    realm = _run(settings, work)
    url = site_url(realm.string_id, settings.host, settings.port, settings.external_host)
    if as_json:
        typer.echo(
            orjson.dumps(
                {"realm_id": realm.id, "subdomain": realm.string_id, "name": realm.name, "url": url}
            ).decode()
        )
    else:
        typer.echo(f"Created organization {realm.name!r} (id {realm.id}) at {url}")


@app.command("create-user")
def create_user(
    realm: Annotated[
        str, typer.Option("--realm", help='Subdomain of the organization ("" = root).')
    ],
    email: Annotated[str, typer.Option(help="Email address.")],
    full_name: Annotated[str, typer.Option("--full-name", help="Full name.")],
    role: Annotated[str, typer.Option(help="owner|admin|moderator|member|guest")] = "member",
    password: Annotated[str | None, typer.Option(help="Password (omit: API key only).")] = None,
    bot: Annotated[bool, typer.Option("--bot", help="Create a (generic) bot.")] = False,
    incoming_webhook: Annotated[
        bool,
        typer.Option("--incoming-webhook", help="Create an incoming-webhook bot (implies --bot)."),
    ] = False,
    data_dir: DataDirOption = None,
    database_url: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a user; works while `hubbub serve` runs on the same database."""
    if role not in ROLE_NAMES:
        fail(f"invalid role {role!r}: choose one of {', '.join(ROLE_NAMES)}")
    if bot or incoming_webhook:
        if password is not None:
            fail("bots have no password: they authenticate with their API key (omit --password)")
        if role != "member":
            # As POST /bots creates them; an administrator may change the role later.
            fail("bots are created with the member role (omit --role)")
    settings = _settings(data_dir=data_dir, database_url=database_url)

    async def work(services: Services) -> Any:
        return await create_user_in_realm(
            services,
            subdomain=realm,
            email=email,
            full_name=full_name,
            role=Role.from_name(role),
            password=password,
            bot=bot or incoming_webhook,
            bot_type=BotType.INCOMING_WEBHOOK if incoming_webhook else BotType.GENERIC,
        )

    user = _run(settings, work)
    if as_json:
        typer.echo(
            orjson.dumps(
                {"user_id": user.id, "email": user.delivery_email, "api_key": user.api_key}
            ).decode()
        )
    else:
        typer.echo(f"Created user {user.delivery_email} (id {user.id}); API key {user.api_key}")


@app.command()
def zuliprc(
    realm: Annotated[
        str, typer.Option("--realm", help='Subdomain of the organization ("" = root).')
    ],
    email: Annotated[str, typer.Option(help="The user's email.")],
    site: Annotated[str | None, typer.Option(help="Server URL clients should use.")] = None,
    output: Annotated[
        Path | None, typer.Option(help="File to write (default: standard output).")
    ] = None,
    data_dir: DataDirOption = None,
    database_url: DatabaseOption = None,
) -> None:
    """Write a zuliprc (email, API key, site) for the official Zulip clients."""
    settings = _settings(data_dir=data_dir, database_url=database_url)

    async def work(services: Services) -> Any:
        return await find_user(services, subdomain=realm, email=email)

    user = _run(settings, work)
    url = site or site_url(realm, settings.host, settings.port, settings.external_host)
    if output is None:
        typer.echo(zuliprc_text(user.delivery_email, user.api_key, url), nl=False)
    else:
        write_zuliprc(output, user.delivery_email, user.api_key, url)
        typer.echo(f"Wrote {output}", err=True)


RealmOption = Annotated[
    str, typer.Option("--realm", help='Subdomain of the organization ("" = root).')
]


@app.command("rotate-api-key")
def rotate_api_key(
    realm: RealmOption,
    email: Annotated[str, typer.Option(help="The user's email.")],
    data_dir: DataDirOption = None,
    database_url: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Give a user a new API key and print it; the old key stops working at once."""
    from hubbub.actions.users import do_regenerate_api_key

    settings = _settings(data_dir=data_dir, database_url=database_url)

    async def work(services: Services) -> Any:
        user = await find_user(services, subdomain=realm, email=email)
        async with services.write() as tx:
            return user, await do_regenerate_api_key(tx, user)

    user, api_key = _run(settings, work)
    if as_json:
        typer.echo(
            orjson.dumps(
                {"user_id": user.id, "email": user.delivery_email, "api_key": api_key}
            ).decode()
        )
    else:
        typer.echo(
            f"New API key for {user.delivery_email}: {api_key}\n"
            "Clients using the old key must be given this one (`hubbub zuliprc` writes a "
            "new zuliprc)."
        )


@app.command("revoke-api-keys")
def revoke_api_keys(
    realm: RealmOption,
    email: Annotated[
        list[str] | None, typer.Option(help="A user whose key to revoke (repeatable).")
    ] = None,
    all_users: Annotated[
        bool, typer.Option("--all-users", help="Every user of the organization, bots too.")
    ] = False,
    data_dir: DataDirOption = None,
    database_url: DatabaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke API keys: each is replaced by a new key that is not shown. People get theirs
    back by logging in with their password; bots need `hubbub rotate-api-key`."""
    from hubbub.actions.users import do_revoke_api_keys
    from hubbub.queries.realms import access_realm_by_subdomain

    if bool(email) == all_users:
        fail("give either --email (one or more) or --all-users")
    settings = _settings(data_dir=data_dir, database_url=database_url)

    async def work(services: Services) -> Any:
        user_ids = None
        if email:
            user_ids = [
                (await find_user(services, subdomain=realm, email=address)).id for address in email
            ]
        async with services.db.read() as conn:
            realm_id = (await access_realm_by_subdomain(conn, realm)).id
        async with services.write() as tx:
            return await do_revoke_api_keys(tx, realm_id, user_ids)

    count = _run(settings, work)
    if as_json:
        typer.echo(orjson.dumps({"revoked": count}).decode())
    else:
        typer.echo(f"Revoked {count} API key{'s' if count != 1 else ''}.")


def main() -> None:
    """Run the command; a usage mistake is one line on standard error (exit status 2)."""
    try:
        result = app(standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(130)
    except Exception as exc:
        # Click's usage errors (bad flag, missing option). Recent Typer releases vendor
        # their own copy of Click, so they are recognised by shape, not by class.
        if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
            raise
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "hubbub"
        message = exc.format_message()
        if message:  # "hubbub" alone prints the help and has nothing more to say
            typer.echo(f"{command}: error: {message}", err=True)
        sys.exit(exc.exit_code)
    # Without standalone mode an exit code comes back as the return value.
    sys.exit(result if isinstance(result, int) else 0)
