"""The ``hubbub`` command, run as subprocesses (``python -m hubbub ...``) on temporary data.

Every failure a user can cause must end in one line on standard error and exit status 1
(2 for Click's usage errors); with ``--json`` standard output carries exactly one JSON object.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import zulip

from tests.e2e.conftest import (
    HUBBUB,
    PG_ENV,
    describe_exit,
    error_lines,
    free_port,
    fresh_postgres_database,
    hubbub_env,
    run_hubbub,
    serving,
    start_serve,
    stop_serve,
)

API_KEY_RE = re.compile(r"^[A-Za-z0-9]{32}$")
ERROR_PREFIX = "hubbub: error: "
# Refusals happen before any network or database work; the timeouts only stop hangs.
QUICK_TIMEOUT = 15


def assert_one_line_error(
    result: subprocess.CompletedProcess[str], status: int = 1, prefix: str = ERROR_PREFIX
) -> str:
    """Exit ``status``, nothing on stdout, exactly one ``hubbub: error: ...`` line on stderr."""
    lines = error_lines(result.stderr)
    assert result.returncode == status, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == "", result.stdout
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(prefix), lines
    return lines[0]


def single_json_object(stdout: str) -> dict[str, Any]:
    """The whole of stdout is one JSON object on one line (no log noise around it)."""
    value = json.loads(stdout)
    assert isinstance(value, dict), stdout
    assert stdout.endswith("\n") and stdout.count("\n") == 1, repr(stdout)
    return value


def closing(client: zulip.Client) -> None:
    if client.session is not None:
        client.session.close()


# --- create-realm / create-user / zuliprc on one data directory -----------------------------


@dataclass(frozen=True)
class EngSetup:
    base: Path
    data_dir: Path
    realm: subprocess.CompletedProcess[str]
    admin: subprocess.CompletedProcess[str]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_hubbub(*args, "--data-dir", str(self.data_dir), cwd=self.base)


@pytest.fixture(scope="module")
def eng(tmp_path_factory: pytest.TempPathFactory) -> EngSetup:
    """Organization "eng" with the admin a@x.com, made once for the tests below."""
    base = tmp_path_factory.mktemp("eng")
    data_dir = base / "data"
    common = ("--data-dir", str(data_dir))
    realm = run_hubbub(
        "create-realm", "--subdomain", "eng", "--name", "Engineering", "--json", *common, cwd=base
    )
    admin = run_hubbub(
        "create-user",
        "--realm",
        "eng",
        "--email",
        "a@x.com",
        "--full-name",
        "A B",
        "--role",
        "admin",
        "--password",
        "pw123456",
        "--json",
        *common,
        cwd=base,
    )
    return EngSetup(base, data_dir, realm, admin)


def test_create_realm_json(eng: EngSetup) -> None:
    assert eng.realm.returncode == 0, eng.realm.stderr
    realm = single_json_object(eng.realm.stdout)
    assert set(realm) == {"realm_id", "subdomain", "name", "url"}
    assert isinstance(realm["realm_id"], int)
    assert (realm["subdomain"], realm["name"]) == ("eng", "Engineering")
    assert realm["url"] == "http://eng.localhost:9991"
    assert (eng.data_dir / "hubbub.db").is_file()


def test_create_realm_twice_is_one_line_error(eng: EngSetup) -> None:
    line = assert_one_line_error(
        eng.run("create-realm", "--subdomain", "eng", "--name", "Again", "--json")
    )
    assert "eng" in line and "already in use" in line


def test_create_user_json(eng: EngSetup) -> None:
    assert eng.admin.returncode == 0, eng.admin.stderr
    user = single_json_object(eng.admin.stdout)
    assert set(user) == {"user_id", "email", "api_key"}
    assert isinstance(user["user_id"], int)
    assert user["email"] == "a@x.com"
    assert API_KEY_RE.match(user["api_key"]), user


def test_create_bot(eng: EngSetup) -> None:
    result = eng.run(
        "create-user",
        "--realm",
        "eng",
        "--email",
        "helper-bot@x.com",
        "--full-name",
        "Helper",
        "--bot",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    bot = single_json_object(result.stdout)
    assert set(bot) == {"user_id", "email", "api_key"}
    assert bot["email"] == "helper-bot@x.com"
    assert bot["user_id"] != single_json_object(eng.admin.stdout)["user_id"]
    assert API_KEY_RE.match(bot["api_key"]), bot


def test_duplicate_email_is_one_line_error(eng: EngSetup) -> None:
    # Addresses are compared case-insensitively, as in Zulip.
    result = eng.run(
        "create-user", "--realm", "eng", "--email", "A@X.com", "--full-name", "Again", "--json"
    )
    line = assert_one_line_error(result)
    assert line == f"{ERROR_PREFIX}Email 'A@X.com' already in use"


def test_invalid_role_is_one_line_error(eng: EngSetup) -> None:
    result = eng.run(
        "create-user", "--realm", "eng", "--email", "r@x.com", "--full-name", "R", "--role", "boss"
    )
    line = assert_one_line_error(result)
    assert "boss" in line
    for role in ("owner", "admin", "moderator", "member", "guest"):
        assert role in line


def test_zuliprc_to_stdout(eng: EngSetup) -> None:
    key = single_json_object(eng.admin.stdout)["api_key"]
    result = eng.run("zuliprc", "--realm", "eng", "--email", "a@x.com")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"[api]\nemail=a@x.com\nkey={key}\nsite=http://eng.localhost:9991\n"


def test_zuliprc_output_file(eng: EngSetup, tmp_path: Path) -> None:
    key = single_json_object(eng.admin.stdout)["api_key"]
    path = tmp_path / "new-dir" / "zuliprc"
    result = eng.run(
        "zuliprc",
        "--realm",
        "eng",
        "--email",
        "a@x.com",
        "--site",
        "https://chat.example.com",
        "--output",
        str(path),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert path.read_text() == f"[api]\nemail=a@x.com\nkey={key}\nsite=https://chat.example.com\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_zuliprc_output_over_an_existing_file_is_private(eng: EngSetup, tmp_path: Path) -> None:
    """An existing world-readable file is made private before the API key goes into it."""
    path = tmp_path / "zuliprc"
    path.write_text("old\n")
    path.chmod(0o644)
    result = eng.run("zuliprc", "--realm", "eng", "--email", "a@x.com", "--output", str(path))
    assert result.returncode == 0, result.stderr
    assert path.read_text().startswith("[api]\nemail=a@x.com\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600, oct(path.stat().st_mode)


# --- the command itself ----------------------------------------------------------------------


def test_help(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "hubbub"
    if not script.exists():
        found = shutil.which("hubbub")
        assert found, "the `hubbub` console script is not installed"
        script = Path(found)
    for command in ([str(script), "--help"], [*HUBBUB, "--help"]):
        result = subprocess.run(
            command,
            cwd=tmp_path,
            env=hubbub_env(),
            capture_output=True,
            text=True,
            timeout=QUICK_TIMEOUT,
            check=False,
        )
        assert result.returncode == 0, (command, result.stderr)
        for name in ("serve", "create-realm", "create-user", "zuliprc"):
            assert name in result.stdout, (command, result.stdout)
    assert not (tmp_path / "hubbub-data").exists()


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    # Click's usage errors (exit status 2), and a bad value hubbub itself rejects (1).
    missing = run_hubbub(
        "create-user",
        "--realm",
        "eng",
        "--full-name",
        "X",
        "--data-dir",
        str(tmp_path / "d"),
        cwd=tmp_path,
        timeout=QUICK_TIMEOUT,
    )
    line = assert_one_line_error(missing, status=2, prefix="python -m hubbub create-user: error:")
    assert "--email" in line, line
    bad_port = run_hubbub(
        "serve",
        "--port",
        "70000",
        "--data-dir",
        str(tmp_path / "d"),
        cwd=tmp_path,
        timeout=QUICK_TIMEOUT,
    )
    assert "70000" in assert_one_line_error(bad_port)
    assert not (tmp_path / "d").exists()


def test_environment_variables(tmp_path: Path) -> None:
    env_dir = tmp_path / "env-data"
    env = hubbub_env(HUBBUB_DATA_DIR=str(env_dir))
    created = run_hubbub(
        "create-realm", "--subdomain", "envdir", "--name", "Env", "--json", cwd=tmp_path, env=env
    )
    assert created.returncode == 0, created.stderr
    assert (env_dir / "hubbub.db").is_file()
    assert not (tmp_path / "hubbub-data").exists()
    # The flag reaches the same database: the subdomain is taken there.
    again = run_hubbub(
        "create-realm",
        "--subdomain",
        "envdir",
        "--name",
        "Env",
        "--data-dir",
        str(env_dir),
        cwd=tmp_path,
    )
    assert "already in use" in assert_one_line_error(again)

    db_file = tmp_path / "elsewhere" / "other.db"
    unused_dir = tmp_path / "unused-data"
    env = hubbub_env(HUBBUB_DATA_DIR=str(unused_dir), HUBBUB_DATABASE_URL=f"sqlite:///{db_file}")
    created = run_hubbub(
        "create-realm", "--subdomain", "envurl", "--name", "Env", "--json", cwd=tmp_path, env=env
    )
    assert created.returncode == 0, created.stderr
    assert db_file.is_file()
    assert not (unused_dir / "hubbub.db").exists()
    again = run_hubbub(
        "create-realm",
        "--subdomain",
        "envurl",
        "--name",
        "Env",
        "--database-url",
        f"sqlite:///{db_file}",
        cwd=tmp_path,
    )
    assert "already in use" in assert_one_line_error(again)


def test_commands_on_postgresql(tmp_path: Path) -> None:
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"set {PG_ENV} to run the commands on PostgreSQL")
    with fresh_postgres_database(base, prefix="hubbub_cli") as url:
        env = hubbub_env(HUBBUB_DATABASE_URL=url)
        realm = run_hubbub(
            "create-realm", "--subdomain", "pg", "--name", "PG", "--json", cwd=tmp_path, env=env
        )
        assert realm.returncode == 0, realm.stderr
        user = run_hubbub(
            "create-user",
            "--realm",
            "pg",
            "--email",
            "p@x.com",
            "--full-name",
            "P Q",
            "--json",
            cwd=tmp_path,
            env=env,
        )
        assert user.returncode == 0, user.stderr
        key = single_json_object(user.stdout)["api_key"]
        rc = run_hubbub(
            "zuliprc",
            "--realm",
            "pg",
            "--email",
            "p@x.com",
            "--database-url",
            url,
            "--site",
            "http://pg.example",
            cwd=tmp_path,
        )
        assert rc.returncode == 0, rc.stderr
        assert rc.stdout == f"[api]\nemail=p@x.com\nkey={key}\nsite=http://pg.example\n"
    # Nothing went to the SQLite default in the working directory.
    assert not (tmp_path / "hubbub-data").exists()


# --- serve: refusals -------------------------------------------------------------------------


def test_serve_on_a_taken_port(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_hubbub(
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path / "data"),
            cwd=tmp_path,
            timeout=QUICK_TIMEOUT,
        )
    line = assert_one_line_error(result)
    assert str(port) in line, line
    assert "in use" in line, line


def _refused_serve(tmp_path: Path, *options: str) -> str:
    """The one-line error of ``hubbub serve`` with ``options`` on a free port."""
    result = run_hubbub(
        "serve",
        *options,
        "--port",
        str(free_port()),
        "--data-dir",
        str(tmp_path / "data"),
        cwd=tmp_path,
        timeout=QUICK_TIMEOUT,
    )
    return assert_one_line_error(result)


def test_serve_with_an_unreachable_database(tmp_path: Path) -> None:
    line = _refused_serve(tmp_path, "--database-url", "postgresql://postgres@127.0.0.1:1/nope")
    assert "cannot connect to the database" in line, line
    assert "127.0.0.1:1" in line, line


def test_serve_refuses_an_in_memory_database(tmp_path: Path) -> None:
    # It would lose every acknowledged message at exit; it used to fail with a traceback
    # from SQLAlchemy's pool.
    for url in ("sqlite:///:memory:", "sqlite://"):
        line = _refused_serve(tmp_path, "--database-url", url)
        assert "unsupported database URL" in line and "database file" in line, line


def test_serve_refuses_workers_on_sqlite(tmp_path: Path) -> None:
    line = _refused_serve(tmp_path, "--workers", "2")
    assert "--workers" in line and "PostgreSQL" in line and "SQLite" in line, line


# --- serve: running --------------------------------------------------------------------------


def test_serve_exits_0_on_sigterm(tmp_path: Path) -> None:
    """After a graceful shutdown uvicorn (>= 0.29) re-raises the SIGTERM it caught; unless
    hubbub stops that, `hubbub serve` dies of SIGTERM (status -15 / 143) instead of exiting 0."""
    server = start_serve(tmp_path / "data")
    try:
        assert httpx.get(f"{server.url}/api/v1/server_settings", timeout=5).status_code == 200
    finally:
        returncode = stop_serve(server)
    assert returncode == 0, describe_exit(server, returncode)


def test_serve_becomes_the_serving_process(tmp_path: Path) -> None:
    """After migrating and creating the owner, the command execs ``python -m hubbub.run``:
    the same process (what started it still holds its PID), without the command's modules."""
    server = start_serve(tmp_path / "data")
    try:
        assert httpx.get(f"{server.url}/api/v1/server_settings", timeout=5).status_code == 200
        cmdline = Path(f"/proc/{server.process.pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[1:3] == [b"-m", b"hubbub.run"], cmdline
        # The credentials printed before the exec were flushed, not lost with its buffers.
        assert "Created the organization" in server.stdout(), server.stdout()
    finally:
        returncode = stop_serve(server)
    assert returncode == 0, describe_exit(server, returncode)


def test_settings_survive_the_serving_process_environment() -> None:
    """Every setting ``serve`` takes from a flag or the environment reaches the process it
    execs into (and ``--workers`` processes) unchanged."""
    from hubbub.server import settings_environment
    from hubbub.settings import Settings, load_settings

    settings = Settings(
        data_dir=Path("relative/data"),
        database_url="postgresql://u@db/x",
        redis_url="redis://r:6379/2",
        redis_namespace="ns",
        host="0.0.0.0",
        port=8123,
        workers=3,
        owner_email="o@example.com",
        rate_limit=0,
        external_host="chat.example.com",
        max_file_upload_mib=7,
        unclaimed_upload_days=3,
        push_bouncer_url="https://push.example.com",
        push_bouncer_org_id="org",
        push_bouncer_org_key="key",
    )
    assert load_settings(env=settings_environment(settings)) == settings
    assert load_settings(env=settings_environment(Settings())) == Settings()


def test_owner_email_and_second_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serving(data_dir, extra_args=["--owner-email", "boss@example.com"]) as first:
        owner = first.owner()
        assert owner.email == "boss@example.com"
        rc_text = (data_dir / "zuliprc").read_text()
        assert rc_text == (
            f"[api]\nemail=boss@example.com\nkey={owner.api_key}\nsite={first.url}\n"
        )
        client = zulip.Client(config_file=str(data_dir / "zuliprc"), retry_on_errors=False)
        try:
            profile = client.get_profile()
            assert (profile["email"], profile["role"]) == ("boss@example.com", 100), profile
        finally:
            closing(client)

    # Started again (even with another --owner-email): no new owner, no password shown.
    with serving(data_dir, extra_args=["--owner-email", "other@example.com"]) as second:
        out = second.stdout()
        assert "Password" not in out and "Created the organization" not in out, out
        assert owner.password not in out + second.stderr()
        response = httpx.get(
            f"{second.url}/api/v1/users", auth=(owner.email, owner.api_key), timeout=10
        )
        assert response.status_code == 200, response.text
        members = response.json()["members"]
        assert [(m["email"], m["role"]) for m in members] == [("boss@example.com", 100)]
        # The first start's zuliprc is left alone.
        assert (data_dir / "zuliprc").read_text() == rc_text


def test_create_user_while_serving(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serving(data_dir) as server:
        owner = server.owner()
        client = zulip.Client(config_file=str(data_dir / "zuliprc"), retry_on_errors=False)
        try:
            owner_id = client.get_profile()["user_id"]
            # The server keeps writing while the command writes: SQLite must make one wait.
            command = subprocess.Popen(
                [
                    *HUBBUB,
                    "create-user",
                    "--realm",
                    "",
                    "--email",
                    "c@x.com",
                    "--full-name",
                    "C D",
                    "--role",
                    "admin",
                    "--password",
                    "pw123456",
                    "--json",
                    "--data-dir",
                    str(data_dir),
                ],
                cwd=tmp_path,
                env=hubbub_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            writes = _write_until_done(client, owner_id, command)
            try:
                stdout, stderr = command.communicate(timeout=30)
            finally:
                if command.poll() is None:
                    command.kill()
                    command.wait()
            assert command.returncode == 0, stderr
            assert writes and all(r["result"] == "success" for r in writes), writes[-3:]
            created = single_json_object(stdout)

            bot_run = run_hubbub(
                "create-user",
                "--realm",
                "",
                "--email",
                "robot-bot@x.com",
                "--full-name",
                "Robot",
                "--bot",
                "--json",
                "--data-dir",
                str(data_dir),
                cwd=tmp_path,
            )
            assert bot_run.returncode == 0, bot_run.stderr
            bot = single_json_object(bot_run.stdout)

            # The running server sees both at once.
            user = client.get_user_by_id(created["user_id"])["user"]
            assert (user["email"], user["full_name"], user["role"]) == ("c@x.com", "C D", 200)
            assert user["is_admin"] is True and user["is_bot"] is False
            robot = client.get_user_by_id(bot["user_id"])["user"]
            assert (robot["email"], robot["is_bot"]) == ("robot-bot@x.com", True)
            assert (robot["bot_type"], robot["bot_owner_id"]) == (1, owner_id)
            emails = {m["email"] for m in client.get_members()["members"]}
            assert emails == {owner.email, "c@x.com", "robot-bot@x.com"}
        finally:
            closing(client)

        # The new user's key and password work against the running server.
        new_client = zulip.Client(
            email="c@x.com", api_key=created["api_key"], site=server.url, retry_on_errors=False
        )
        try:
            assert new_client.get_profile()["user_id"] == created["user_id"]
            fetched = new_client.call_endpoint(
                "fetch_api_key",
                method="POST",
                request={"username": "c@x.com", "password": "pw123456"},
            )
            assert fetched["api_key"] == created["api_key"], fetched
        finally:
            closing(new_client)


def _write_until_done(
    client: zulip.Client, owner_id: int, command: subprocess.Popen[str]
) -> list[dict[str, Any]]:
    """Rename the owner over the API until ``command`` exits (at most 30 s)."""
    results: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while command.poll() is None and time.monotonic() < deadline:
        results.append(
            client.update_user_by_id(owner_id, full_name=f"Owner {len(results) % 2 + 1}")
        )
        time.sleep(0.02)
    return results


def test_serve_refuses_an_invalid_owner_email(tmp_path: Path) -> None:
    result = run_hubbub(
        "serve",
        "--data-dir",
        str(tmp_path),
        "--owner-email",
        "not-an-email",
        "--port",
        str(free_port()),
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert error_lines(result.stderr) == [
        "hubbub: error: --owner-email (HUBBUB_OWNER_EMAIL) is not an email address: 'not-an-email'"
    ]
