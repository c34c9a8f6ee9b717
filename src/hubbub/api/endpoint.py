"""``@endpoint``: one declaration per operation; parsing, auth, rate limits, errors, envelope.

    @endpoint("GET", "/users/{user_id:int}")
    async def get_user(req: ApiRequest, *, user_id: PathInt, client_gravatar: bool = True):
        ...
        return {"user": ...}

The function returns the success payload (a dict) and raises ``ApiError`` for failures.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from hubbub.api import user_agent
from hubbub.api.auth import (
    authenticate_on_subdomain,
    client_address,
    parse_basic_auth,
    subdomain_from_host,
)
from hubbub.api.headers import header
from hubbub.api.params import ParamSpec, build_specs, find_int32_overflow, parse_arguments
from hubbub.api.responses import json_error, json_success
from hubbub.credentials import credential_digest
from hubbub.db.engine import is_unique_violation, is_value_out_of_range
from hubbub.errors import (
    ApiError,
    InternalServerError,
    JsonableError,
    RateLimitedError,
    UnauthorizedError,
)
from hubbub.models import Realm, User
from hubbub.outages import outage_error
from hubbub.queries.realms import get_realm_by_subdomain
from hubbub.services import Services

logger = logging.getLogger("hubbub.api")

Payload = dict[str, Any]
Handler = Callable[..., Awaitable[Payload]]
# Authenticates an endpoint's caller its own way (incoming webhooks: api/webhook_auth.py),
# from the connection, the request, its subdomain and its arguments.
Authenticator = Callable[
    [AsyncConnection, Request, str, dict[str, str]], Awaitable[tuple[User, Realm]]
]

# Accepted on every endpoint without being reported as ignored: ``client`` names the
# client (over the User-Agent), ``api_key`` authenticates file downloads.
UNIVERSAL_PARAMETERS = frozenset({"client", "api_key"})
_URLENCODED = "application/x-www-form-urlencoded"
_MULTIPART = "multipart/form-data"
# As Starlette's form parser bounds them.
MAX_FORM_FIELDS = 1000


@dataclass(frozen=True)
class QueueVouch:
    """An event queue's word for who calls: its owner, when the credentials with this
    digest proved themselves on it recently. The poll confirms it (``credential=`` of
    ``EventBus.get_events``); a request that fails before its poll, ``confirm_caller``."""

    queue_id: str
    user_id: int
    digest: str


@dataclass
class ApiRequest:
    """What an endpoint knows about its request, beyond its declared parameters."""

    services: Services
    http: Request
    realm: Realm | None
    client_name: str
    user: User | None = None
    # Set instead of ``user`` when the event queue named in the request vouches for the
    # caller (``queue_auth`` endpoints): who it is, without a database read.
    vouch: QueueVouch | None = None
    # The read transaction that found the caller, still open while a ``reads`` endpoint
    # runs (``read_conn``).
    conn: AsyncConnection | None = None

    @property
    def caller_id(self) -> int | None:
        if self.user is not None:
            return self.user.id
        return self.vouch.user_id if self.vouch is not None else None

    @property
    def credential(self) -> str:
        """Digest of the credentials this (database-authenticated) request presented."""
        return credential_digest(
            self.my_realm.string_id, header(self.http.scope, b"authorization") or ""
        )

    @property
    def read_conn(self) -> AsyncConnection:
        """The request's read transaction (only on endpoints declared with ``reads``)."""
        assert self.conn is not None
        return self.conn

    @property
    def me(self) -> User:
        """The authenticated user (only on endpoints that require authentication)."""
        assert self.user is not None
        return self.user

    @property
    def my_realm(self) -> Realm:
        assert self.realm is not None
        return self.realm


@dataclass
class Endpoint:
    method: str
    path: str
    func: Handler
    auth: bool
    specs: list[ParamSpec]
    known_names: frozenset[str] = field(default_factory=frozenset)
    queue_auth: bool = False
    authenticator: Authenticator | None = None
    reads: bool = False

    @property
    def summary(self) -> str:
        return (self.func.__doc__ or self.func.__name__).strip().splitlines()[0]


ENDPOINTS: list[Endpoint] = []


def endpoint(
    method: str,
    path: str,
    *,
    auth: bool = True,
    queue_auth: bool = False,
    authenticator: Authenticator | None = None,
    reads: bool = False,
) -> Callable[[Handler], Handler]:
    """Register ``func`` as the handler of ``method path`` (path relative to /api/v1).

    ``queue_auth``: the event queue named by ``queue_id`` may vouch for the caller (see
    ``_authenticate_by_queue``); the handler then sees ``vouch``, not ``user``.
    ``reads``: the handler only reads, and does so in the read transaction that found the
    caller (``ApiRequest.read_conn``): one snapshot, one BEGIN and COMMIT per request.
    """
    if reads and queue_auth:
        raise ValueError("a queue-authenticated endpoint holds no read transaction")

    def register(func: Handler) -> Handler:
        specs = build_specs(func)
        known = frozenset(name for spec in specs for name in spec.names)
        ENDPOINTS.append(
            Endpoint(
                method.upper(), path, func, auth, specs, known, queue_auth, authenticator, reads
            )
        )
        return func

    return register


def client_name(request: Request, args: dict[str, str]) -> str:
    """The ``client`` parameter, else the User-Agent's client name (``api/user_agent.py``)."""
    return user_agent.client_name(args.get("client"), header(request.scope, b"user-agent"))


def parse_fields(text: str, into: dict[str, str], *, max_fields: int | None = None) -> None:
    """Add the fields of a query string or url-encoded body to ``into``, the first value
    of a name winning (a name already there stays).

    What ``urllib.parse.parse_qsl(text, keep_blank_values=True)`` gives, "+" as a space and
    escapes read as UTF-8 with undecodable bytes replaced, in less CPU: a long-poll's
    re-arm is mostly this (three short fields), most requests of a server.
    """
    if max_fields is not None and text.count("&") >= max_fields:
        raise JsonableError("Malformed request body")
    for pair in text.split("&"):
        if not pair:
            continue
        name, _, value = pair.partition("=")
        if "+" in pair:
            name, value = name.replace("+", " "), value.replace("+", " ")
        if "%" in pair:
            name, value = unquote(name, errors="replace"), unquote(value, errors="replace")
        if name not in into:
            into[name] = value


async def read_arguments(request: Request) -> dict[str, str]:
    """Form body first, then the query string, for every method; the first value wins."""
    args: dict[str, str] = {}
    content_type = header(request.scope, b"content-type") or ""
    if content_type.startswith(_URLENCODED):
        # Not Starlette's form parser (python-multipart's streaming parser, several times
        # the CPU for a send's fields). The body is UTF-8, as Django reads it: Starlette took
        # unescaped bytes as Latin-1.
        body = (await request.body()).decode("utf-8", "replace")
        parse_fields(body, args, max_fields=MAX_FORM_FIELDS)
    elif content_type.startswith(_MULTIPART):
        try:
            form = await request.form(max_fields=MAX_FORM_FIELDS)
        except ApiError:  # the body passed the size limit (api/body_limit.py)
            raise
        except Exception as exc:  # the multipart parser raises several types
            raise JsonableError("Malformed request body") from exc
        for key, item in form.multi_items():
            if isinstance(item, str):
                args.setdefault(key, item)
    read_query(request.scope, args)
    return args


def read_query(scope: Scope, into: dict[str, str]) -> None:
    """The query string's fields (its bytes as Latin-1, as Starlette reads them)."""
    query: bytes = scope["query_string"]
    if query:
        parse_fields(query.decode("latin-1"), into)


def rate_limit_headers(
    limit: int, remaining: int, reset_after: float, now: float
) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset": str(int(now + reset_after)),
    }


def request_subdomain(services: Services, request: Request) -> str:
    """The realm subdomain the request's Host header names."""
    return subdomain_from_host(
        header(request.scope, b"host") or "", services.settings.external_host
    )


async def _authenticate(
    conn: AsyncConnection, request: Request, subdomain: str
) -> tuple[User, Realm]:
    authorization = header(request.scope, b"authorization")
    if not authorization:
        raise UnauthorizedError()
    email, api_key = parse_basic_auth(authorization)
    # A host naming no organization still authenticates, to say which error applies.
    return await authenticate_on_subdomain(conn, subdomain, email, api_key)


async def _authenticate_by_queue(
    services: Services, request: Request, args: dict[str, str], subdomain: str
) -> QueueVouch | None:
    """The queue's word for the caller when the queue they poll may have recently seen
    these very credentials proved against the database, else None.

    Every client re-arms its long-poll after each batch of events, so ``GET /events`` is
    most of a server's requests; vouching from the queue spares each re-arm the database.
    """
    queue_id = args.get("queue_id")
    authorization = header(request.scope, b"authorization")
    if not queue_id or not authorization:
        return None
    digest = credential_digest(subdomain, authorization)
    user_id = await services.bus.vouching_owner(queue_id, digest, services.clock.now())
    return None if user_id is None else QueueVouch(queue_id, user_id, digest)


async def authenticate_by_database(req: ApiRequest) -> None:
    """Authenticate a request its queue no longer vouches for: ``req.user`` and
    ``req.realm`` from the database, or the authentication error (which, like every failed
    attempt, counts against the caller's address)."""
    req.vouch = None
    subdomain = request_subdomain(req.services, req.http)
    try:
        async with req.services.db.read() as conn:
            req.user, req.realm = await _authenticate(conn, req.http, subdomain)
    except ApiError:
        await _check_rate_limit(req)
        raise


async def confirm_caller(req: ApiRequest) -> None:
    """Make sure of a queue's word for the caller before a failure is answered: an
    error must not tell a caller more than a failed authentication would."""
    vouch = req.vouch
    if vouch is None:
        return
    if not await req.services.bus.vouches_for(
        vouch.queue_id, vouch.digest, req.services.clock.now()
    ):
        await authenticate_by_database(req)


async def _check_rate_limit(req: ApiRequest) -> dict[str, str]:
    caller = req.caller_id
    key = f"user:{caller}" if caller is not None else f"ip:{client_address(req.http)}"
    result = await req.services.rate_limiter.hit(key)
    if result.limit == 0:
        return {}
    headers = rate_limit_headers(
        result.limit, result.remaining, result.reset_after, req.services.clock.now()
    )
    if not result.allowed:
        raise RateLimitedError(round(result.reset_after, 3), headers)
    return headers


async def _identify(
    conn: AsyncConnection, request: Request, ep: Endpoint, args: dict[str, str], subdomain: str
) -> tuple[ApiRequest, ApiError | None]:
    """The request with its realm and caller as ``conn`` finds them, and the error that
    failed its authentication, if one did (answered after ``_admit`` counts it)."""
    services: Services = request.app.state.services
    user: User | None = None
    realm: Realm | None = None
    auth_error: ApiError | None = None
    if ep.auth:
        # The caller's realm comes with them: it is the subdomain's, or they fail.
        try:
            if ep.authenticator is not None:
                user, realm = await ep.authenticator(conn, request, subdomain, args)
            else:
                user, realm = await _authenticate(conn, request, subdomain)
        except ApiError as error:
            auth_error = error
    else:
        realm = await get_realm_by_subdomain(conn, subdomain)
    return ApiRequest(services, request, realm, client_name(request, args), user), auth_error


async def _admit(
    req: ApiRequest,
    ep: Endpoint,
    args: dict[str, str],
    auth_error: ApiError | None,
    headers: dict[str, str],
) -> dict[str, Any]:
    """The handler's arguments, once the caller is authenticated and within its rate
    limit, whose headers go into ``headers`` (for the answer, whatever it is)."""
    if auth_error is not None:
        # Failed attempts count against the caller's address, so keys cannot be
        # guessed at full speed.
        await _check_rate_limit(req)
        raise auth_error
    try:
        headers.update(await _check_rate_limit(req))
        return parse_arguments(ep.specs, args, req.http.path_params)
    except ApiError:
        await confirm_caller(req)
        raise


def _argument_error(exc: sa_exc.DBAPIError, kwargs: dict[str, Any]) -> ApiError | None:
    """The error to answer for a number too large for a 32-bit id column on PostgreSQL
    (SQLite's are 64-bit and checked by the parameter parser): the transaction was rolled
    back, so the request changed nothing; it says which argument was wrong. None for any
    other database error."""
    if not is_value_out_of_range(exc):
        return None
    name = find_int32_overflow(kwargs)
    return JsonableError(f"Invalid {name}" if name else "Invalid request")


def _success(
    services: Services,
    ep: Endpoint,
    args: dict[str, str],
    payload: Payload,
    headers: dict[str, str],
) -> Response:
    ignored = [
        name for name in args if name not in ep.known_names and name not in UNIVERSAL_PARAMETERS
    ]
    if services.outages.down:
        services.outages.succeeded()
    return json_success(payload, ignored=ignored, headers=headers)


async def dispatch(request: Request, ep: Endpoint, args: dict[str, str] | None = None) -> Response:
    """Answer ``request`` with ``ep``; ``args``: its arguments, when already read."""
    services: Services = request.app.state.services
    headers: dict[str, str] = {}
    try:
        if args is None:
            args = await read_arguments(request)
        subdomain = request_subdomain(services, request)
        if ep.reads:
            # The endpoint reads in the transaction that found the caller.
            async with services.db.read() as conn:
                req, failed = await _identify(conn, request, ep, args, subdomain)
                kwargs = await _admit(req, ep, args, failed, headers)
                req.conn = conn
                try:
                    payload = await ep.func(req, **kwargs)
                except sa_exc.DBAPIError as exc:
                    wrong = _argument_error(exc, kwargs)
                    if wrong is None:
                        raise
                    raise wrong from None
            return _success(services, ep, args, payload, headers)
        vouched = (
            await _authenticate_by_queue(services, request, args, subdomain)
            if ep.queue_auth
            else None
        )
        auth_error: ApiError | None = None
        if vouched is not None:
            req = ApiRequest(services, request, None, client_name(request, args), vouch=vouched)
        else:
            # One read finds the realm and the caller: every request pays for it, and the
            # connection goes back to the pool before the endpoint (or a long-poll) runs.
            async with services.db.read() as conn:
                req, auth_error = await _identify(conn, request, ep, args, subdomain)
        kwargs = await _admit(req, ep, args, auth_error, headers)
        try:
            try:
                payload = await ep.func(req, **kwargs)
            except sa_exc.IntegrityError as exc:
                # Two requests may both check that a row is absent (a reaction, a
                # subscription, a muted user) and both insert it; the one that commits
                # second fails on the unique index. Its transaction rolled back and sent
                # nothing, so running it again lets its checks see the winner's row, and
                # the caller gets the answer it would have had a moment later. (Inline,
                # not a helper coroutine: a waiting long-poll holds every frame.)
                if not is_unique_violation(exc):
                    raise
                payload = await ep.func(req, **kwargs)
        except sa_exc.DBAPIError as exc:
            wrong = _argument_error(exc, kwargs)
            if wrong is None:
                raise
            raise wrong from None
        return _success(services, ep, args, payload, headers)
    except ApiError as error:
        return json_error(error, headers)
    except Exception as exc:
        outage = outage_error(exc, services.outages)
        if outage is not None:
            return json_error(outage, headers)
        logger.exception("Internal server error on %s %s", request.method, request.url.path)
        return json_error(InternalServerError())
