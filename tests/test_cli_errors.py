"""Operator mistakes on the command line end in one clear line, never a traceback or a
silent surprise: unreadable URLs, an unreachable Redis, a URL as the external host, an
unusable data directory, a shared data directory, SQLite's relative three-slash URLs and
options bots cannot have."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import typer

from hubbub import cli
from hubbub.settings import Settings, SettingsError, load_settings, sqlite_relative_path
from tests.e2e.conftest import error_lines, free_port, hubbub_env, run_hubbub, serving
from tests.test_cli import QUICK_TIMEOUT, assert_one_line_error, single_json_object


def _refused(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = run_hubbub(*args, cwd=tmp_path, env=env, timeout=QUICK_TIMEOUT)
    return assert_one_line_error(result)


@pytest.mark.parametrize(
    "url",
    ["nonsense", "postgresql://u:hunter2@db:notaport/x", "postgresql://u@[::1/x", "mysql://u@h/d"],
)
def test_an_unreadable_database_url_is_one_line(tmp_path: Path, url: str) -> None:
    line = _refused(
        tmp_path, "create-realm", "--subdomain", "x", "--name", "X", "--database-url", url
    )
    assert "database URL" in line, line
    assert "hunter2" not in line, line


def test_an_unreachable_redis_is_one_line(tmp_path: Path) -> None:
    line = _refused(
        tmp_path,
        "serve",
        "--port",
        str(free_port()),
        "--data-dir",
        str(tmp_path / "data"),
        "--redis-url",
        "redis://:hunter2@127.0.0.1:1/0",
    )
    assert "Redis" in line and "127.0.0.1:1" in line and "--redis-url" in line, line
    assert "hunter2" not in line, line


def test_an_unreadable_redis_url_is_one_line(tmp_path: Path) -> None:
    line = _refused(tmp_path, "serve", "--redis-url", "http://cache:6379")
    assert "--redis-url" in line and "redis://" in line, line


@pytest.mark.parametrize("value", ["http://bad/", "https://chat.example.com", "chat.example.com/"])
def test_a_url_as_the_external_host_is_refused(tmp_path: Path, value: str) -> None:
    env = hubbub_env(HUBBUB_EXTERNAL_HOST=value)
    line = _refused(tmp_path, "create-realm", "--subdomain", "x", "--name", "X", env=env)
    assert "HUBBUB_EXTERNAL_HOST" in line and "chat.example.com" in line, line


@pytest.mark.parametrize("value", ["chat.example.com", "chat.example.com:8443", "[::1]:9991"])
def test_host_names_are_accepted_as_the_external_host(value: str) -> None:
    assert load_settings(env={"HUBBUB_EXTERNAL_HOST": value}).external_host == value


def test_external_host_urls_are_refused_in_settings() -> None:
    with pytest.raises(SettingsError):
        load_settings(env={"HUBBUB_EXTERNAL_HOST": "http://bad/"})


def test_a_data_directory_under_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    line = _refused(
        tmp_path, "create-realm", "--subdomain", "x", "--name", "X", "--data-dir", "afile/data"
    )
    assert "afile" in line and "not a directory" in line, line


def test_a_read_only_data_directory_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Permission bits do not stop root, who runs some test machines: the check itself
    # is what answers, so its view of the directory is what is made read-only here.
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setattr(cli, "_writable", lambda path: path != data)
    with pytest.raises(typer.Exit):
        cli._check_sqlite_location(Settings(data_dir=data))
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert str(data) in err and "not writable" in err, err
    # A directory still to be created, under one this user cannot write.
    monkeypatch.setattr(cli, "_writable", lambda path: path != tmp_path)
    with pytest.raises(typer.Exit):
        cli._check_sqlite_location(Settings(data_dir=tmp_path / "new" / "data"))
    err = capsys.readouterr().err
    assert "cannot create the data directory" in err and str(tmp_path) in err, err
    # The database file itself read-only.
    (data / "hubbub.db").write_text("")
    monkeypatch.setattr(cli, "_writable", lambda path: path.name != "hubbub.db")
    with pytest.raises(typer.Exit):
        cli._check_sqlite_location(Settings(data_dir=data))
    assert "read-only" in capsys.readouterr().err


def test_a_read_only_data_directory_is_named_by_the_command(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # Root writes anywhere: the case is covered by the test above.
        assert cli._writable(tmp_path)
        return
    data = tmp_path / "data"
    data.mkdir(mode=0o500)
    line = _refused(
        tmp_path, "create-realm", "--subdomain", "x", "--name", "X", "--data-dir", str(data)
    )
    assert str(data) in line and "not writable" in line, line


def test_sqlite_three_slashes_are_relative_and_say_so(tmp_path: Path) -> None:
    result = run_hubbub(
        "create-realm",
        "--subdomain",
        "x",
        "--name",
        "X",
        "--database-url",
        "sqlite:///tmp/x.db",
        "--json",
        cwd=tmp_path,
        timeout=QUICK_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    single_json_object(result.stdout)
    (warning,) = error_lines(result.stderr)
    assert warning.startswith("hubbub: warning: "), warning
    assert str(tmp_path / "tmp" / "x.db") in warning and "sqlite:////tmp/x.db" in warning
    assert (tmp_path / "tmp" / "x.db").exists()


def test_sqlite_relative_path() -> None:
    def relative(url: str) -> Path | None:
        return sqlite_relative_path(Settings(database_url=url))

    assert relative("sqlite:///tmp/x") == Path("tmp/x")
    assert relative("sqlite:////tmp/x") is None
    assert relative("sqlite+aiosqlite:///x.db") == Path("x.db")
    assert relative("postgresql://u@h/x") is None
    assert relative("") is None


@pytest.mark.parametrize(
    "options",
    [("--role", "admin"), ("--role", "owner"), ("--password", "a-long-bot-password-1")],
)
@pytest.mark.parametrize("kind", ["--bot", "--incoming-webhook"])
def test_bots_refuse_roles_and_passwords(
    tmp_path: Path, kind: str, options: tuple[str, str]
) -> None:
    line = _refused(
        tmp_path,
        "create-user",
        "--realm",
        "",
        "--email",
        "bot@example.com",
        "--full-name",
        "Some Bot",
        kind,
        *options,
        "--data-dir",
        str(tmp_path / "data"),
    )
    assert options[0] in line and "bot" in line, line


def test_a_shared_data_directory_keeps_the_other_owners_zuliprc(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serving(data_dir):
        pass
    first_rc = (data_dir / "zuliprc").read_text()
    other_db = f"sqlite:///{(tmp_path / 'other.db').resolve()}"
    with serving(data_dir, database_url=other_db) as second:
        stderr = second.stderr()
        assert "kept the existing zuliprc" in stderr, stderr
        assert str(data_dir.resolve() / "zuliprc-2") in stderr + second.stdout()
    assert (data_dir / "zuliprc").read_text() == first_rc
    second_rc = (data_dir / "zuliprc-2").read_text()
    assert second_rc != first_rc and "key=" in second_rc
    assert (data_dir / "zuliprc-2").stat().st_mode & 0o077 == 0
