"""Fuzzing every endpoint with schemathesis, from the document hubbub serves.

A real ``hubbub serve`` answers requests generated from ``GET /api/v1/openapi.json``: valid
ones and invalid ones (wrong types, missing and unknown parameters, huge and unicode values,
malformed JSON inside form values). Every response must be a well-formed answer: no 5xx, no
dropped connection, a status code and body the document allows, and, for a success of an
operation Zulip documents, a body that validates against Zulip's own document.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import hypothesis
import pytest
import requests
import schemathesis
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests import openapi
from tests.e2e.conftest import (
    PG_ENV,
    HubbubServer,
    fresh_postgres_database,
    start_serve,
    stop_serve,
)

EXAMPLES = int(os.environ.get("HUBBUB_FUZZ_EXAMPLES", "25"))
# Operations that would end the fuzzing session itself rather than test anything: a new API
# key for the fuzzing user makes every later request a 401.
SKIPPED_OPERATIONS = {("POST", "/users/me/api_key/regenerate")}
# Requests sent, per test run; reported at the end of the module.
SENT: dict[str, int] = {"requests": 0, "operations": 0}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def fuzz_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HubbubServer]:
    base = tmp_path_factory.mktemp("fuzz")
    with contextlib.ExitStack() as stack:
        database_url = None
        if request.param == "postgresql":
            if not os.environ.get(PG_ENV):
                pytest.skip(f"PostgreSQL variant: set {PG_ENV} to run it")
            database_url = stack.enter_context(
                fresh_postgres_database(os.environ[PG_ENV], prefix="hubbub_fuzz")
            )
        SENT.update(requests=0, operations=0)
        server = start_serve(base / "data", database_url=database_url, log_dir=base / "logs")
        try:
            yield server
        finally:
            stop_serve(server)
            # Shown with -s; the closing notes quote it.
            print(
                f"\nfuzzing ({request.param}): {SENT['requests']} requests to "
                f"{SENT['operations']} operations, up to {EXAMPLES} examples per operation "
                "and mode"
            )
            assert "Traceback" not in server.stderr(), server.stderr()[-5000:]


@pytest.fixture(scope="module")
def fuzz_session(fuzz_server: HubbubServer) -> Iterator[requests.Session]:
    owner = fuzz_server.owner()
    session = requests.Session()
    session.auth = (owner.email, owner.api_key)
    yield session
    session.close()


@pytest.fixture(scope="module")
def served_schema(fuzz_server: HubbubServer) -> Any:
    schema = schemathesis.openapi.from_url(f"{fuzz_server.url}/api/v1/openapi.json")
    schema.config.update(base_url=f"{fuzz_server.url}/api/v1")
    return schema


def _operations() -> list[tuple[str, str]]:
    """Every operation of the document, known at collection time (built in-process; the test
    itself fuzzes the copy the server serves)."""
    import hubbub.api.routes  # noqa: F401  (registers the endpoints)
    from hubbub.api.openapi_doc import build_openapi

    return [
        (method.upper(), path)
        for path, methods in build_openapi()["paths"].items()
        for method in methods
        if (method.upper(), path) not in SKIPPED_OPERATIONS
    ]


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.mark.parametrize(("method", "path"), _operations())
def test_fuzz(
    method: str,
    path: str,
    served_schema: Any,
    fuzz_session: requests.Session,
) -> None:
    operation = served_schema[path][method]
    SENT["operations"] += 1
    modes = [GenerationMode.POSITIVE]
    if operation.definition.raw.get("parameters") or operation.definition.raw.get("requestBody"):
        # With no parameters there is nothing to get wrong (but unknown ones, which Zulip
        # ignores and reports in ignored_parameters_unsupported).
        modes.append(GenerationMode.NEGATIVE)
    for mode in modes:

        @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
        @hypothesis.settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(hypothesis.HealthCheck),
        )
        def run(case: Any) -> None:
            response = case.call(session=fuzz_session, timeout=30)
            SENT["requests"] += 1
            case.validate_response(response, checks=CHECKS)
            if response.status_code == 200 and openapi.documented(method, path):
                openapi.validate(method, path, 200, response.json())

        run()


@pytest.mark.parametrize("mode", ["deep", "deep_object", "nul", "oversized"])
def test_fuzz_hostile_values(
    mode: str, fuzz_server: HubbubServer, fuzz_session: requests.Session
) -> None:
    """The shapes the generated cases do not reach, through the real server and its HTTP
    protocol: JSON nested 500 levels deep, NUL characters and oversized values in every
    parameter of every operation at once (``tests/api/test_hostile_params.py`` runs the
    same in-process). Every answer is JSON, none a 5xx; a GET's oversized query string
    meets the protocol's URL bound (414)."""
    from tests.api.test_hostile_params import MODES, _operations, _request_args

    failures = []
    for endpoint in _operations():
        path, args = _request_args(endpoint, MODES[mode])
        url = f"{fuzz_server.url}/api/v1{path}"
        if endpoint.method == "GET":
            response = fuzz_session.get(url, params=args, timeout=30)
        else:
            response = fuzz_session.request(endpoint.method, url, data=args, timeout=30)
        SENT["requests"] += 1
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code >= 500 or not isinstance(body, dict) or "result" not in body:
            failures.append((endpoint.method, endpoint.path, response.status_code, response.text))
    assert not failures, failures[:10]
