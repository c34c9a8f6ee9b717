"""Every endpoint given hostile values in every parameter at once, in-process on each
database: JSON nested hundreds of levels deep, NUL characters (which PostgreSQL cannot
store), and oversized values. Each answer is a JSON error or success, never a 5xx; a NUL
is refused by the parameter layer itself, before any endpoint sees it.

The schemathesis fuzzer (``tests/e2e/test_fuzz.py``) generates values from the document's
types; these are the shapes it does not reach."""

from __future__ import annotations

import re
from collections.abc import Callable

import orjson
import pytest

import hubbub.api.routes  # noqa: F401  (registers the endpoints)
from hubbub.api.endpoint import ENDPOINTS, Endpoint
from hubbub.api.params import ParamSpec, parse_arguments
from hubbub.errors import ApiError
from hubbub.json_values import MAX_JSON_DEPTH
from tests.helpers import TestEnv

# A new API key for the user would make every later request a 401.
SKIPPED = {("POST", "/users/me/api_key/regenerate")}
DEEP = "[" * 500 + "]" * 500
DEEP_OBJECT = '{"a":' * 500 + "1" + "}" * 500
NUL_TEXT = "a\x00b"
NUL_JSON = orjson.dumps("a\x00b").decode()
BIG_TEXT = "x" * 100_000
BIG_JSON = orjson.dumps(list(range(20_000))).decode()

_PATH_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")

Values = Callable[[ParamSpec], str]


def _deep(spec: ParamSpec) -> str:
    return DEEP if spec.json else "x"


def _deep_object(spec: ParamSpec) -> str:
    return DEEP_OBJECT if spec.json else "x"


def _nul(spec: ParamSpec) -> str:
    return NUL_JSON if spec.json else NUL_TEXT


def _big(spec: ParamSpec) -> str:
    return BIG_JSON if spec.json else BIG_TEXT


MODES: dict[str, Values] = {
    "deep": _deep,
    "deep_object": _deep_object,
    "nul": _nul,
    "oversized": _big,
}


def _operations() -> list[Endpoint]:
    return [
        e
        for e in ENDPOINTS
        if (e.method, e.path) not in SKIPPED and any(not s.path for s in e.specs)
    ]


def _request_args(endpoint: Endpoint, values: Values) -> tuple[str, dict[str, str]]:
    path = _PATH_PARAM.sub("1", endpoint.path)
    args = {spec.name: values(spec) for spec in endpoint.specs if not spec.path}
    return path, args


@pytest.mark.parametrize("mode", sorted(MODES))
async def test_hostile_values_never_give_a_server_error(env: TestEnv, mode: str) -> None:
    client = env.client("desdemona")
    failures = []
    for endpoint in _operations():
        path, args = _request_args(endpoint, MODES[mode])
        if endpoint.method == "GET":
            # In a form body, which a GET may carry too: the test client's URLs are
            # bounded (and the server's by its protocol, tests/test_http_limits.py).
            response = await client.request("GET", path, None, data=args)
        else:
            response = await client.request(endpoint.method, path, args)
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code >= 500 or not isinstance(body, dict) or "result" not in body:
            failures.append((endpoint.method, endpoint.path, response.status_code, response.text))
        elif (
            mode == "nul"
            and response.status_code != 404  # a path naming nothing, found before parsing
            and not (response.status_code == 400 and _refuses_nul(body["msg"]))
        ):
            failures.append((endpoint.method, endpoint.path, response.status_code, body["msg"]))
    assert not failures, failures[:10]


def test_the_parameter_layer_refuses_each_hostile_shape() -> None:
    """Each endpoint's declared parameters, parsed alone: deep JSON is "nested too
    deeply" wherever a JSON parameter is reached, and a NUL always refused."""
    for endpoint in _operations():
        for spec in endpoint.specs:
            if spec.path:
                continue
            for raw in (_nul(spec),) + ((DEEP, DEEP_OBJECT) if spec.json else ()):
                with pytest.raises(ApiError) as info:
                    parse_arguments([spec], {spec.name: raw}, {})
                message = info.value.msg
                assert _refuses_nul(message) or message == (
                    f"{spec.name} is nested too deeply (limit: {MAX_JSON_DEPTH} levels)"
                ), (endpoint.path, spec.name, message)


def _refuses_nul(message: str) -> bool:
    """The parameter layer's words for a NUL: Zulip's where it has them."""
    return message.endswith(("must not contain null bytes", "must not contain null bytes.")) or (
        message in ("Invalid character in topic, at position 2!", "Invalid characters in name!")
    )
