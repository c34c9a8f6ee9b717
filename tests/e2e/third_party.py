"""Third-party Zulip clients for the end-to-end tests, installed by the tests themselves.

``zulip_term_venv`` gives a virtualenv holding zulip-term 0.7.0, the terminal client. Its
package declares ``Requires-Python <3.11`` and pins its own dependencies (urwid 2.1), so
it cannot share the project's environment: it gets a virtualenv of its own under
``.cache/e2e/`` (ignored by git), made once with ``python -m venv`` and ``pip install
--ignore-requires-python`` and reused while its stamp matches the pins below and the
interpreter. ``zulip_js_project`` runs ``npm ci`` in ``tests/e2e/zulip_js`` once, and again
only when ``package-lock.json`` changed.

An installation that cannot be done fails the test with the installer's output; it never
skips, so that a CI machine without PyPI or npm shows up as red, not as green.

The two fixtures are exported under their names (``name=``); a test module makes them
visible with ``zulip_term_venv = third_party.zulip_term_venv_fixture``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = REPO_ROOT / ".cache" / "e2e"
ZULIP_TERM_VENV = CACHE_DIR / "zulip-term-venv"
ZULIP_JS_DIR = Path(__file__).resolve().parent / "zulip_js"

# zulip-term 0.7.0 and the versions of its dependency tree it was tested with on Python
# 3.11 (it runs unchanged there; only its Requires-Python forbids the install). Exact pins
# keep the client the tests drive the same from one machine to the next.
ZULIP_TERM_REQUIREMENTS = (
    "zulip-term==0.7.0",
    "beautifulsoup4==4.15.0",
    "certifi==2026.10.19.post1",
    "charset-normalizer==3.5.3",
    "click==8.5.1",
    "distro==1.9.0",
    "idna==3.20",
    "lxml==6.1.3",
    "Pygments==2.21.0",
    "pyperclip==1.11.0",
    "python-dateutil==4.0.0",
    "pytz==2026.6",
    "requests==2.34.2",
    "soupsieve==4.1.3",
    "typing_extensions==4.16.0",
    "tzdata==2026.6",
    "tzlocal==5.4.5",
    "urllib3==2.8.0",
    "urwid==2.1.2",
    "urwid_readline==0.15.1",
    "zulip==0.9.1",
)
STAMP_NAME = "hubbub-e2e-stamp.json"
PIP_TIMEOUT = 900.0
NPM_TIMEOUT = 600.0


@contextmanager
def _cache_lock(name: str) -> Iterator[None]:
    """An exclusive lock on ``.cache/e2e/<name>.lock``: two test runs in one checkout
    must not build the same environment at once."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with (CACHE_DIR / f"{name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(args: list[str], *, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def _tail(result: subprocess.CompletedProcess[str], limit: int = 4000) -> str:
    return f"--- stdout ---\n{result.stdout[-limit:]}\n--- stderr ---\n{result.stderr[-limit:]}"


# --- zulip-term ------------------------------------------------------------------------


def _venv_stamp() -> dict[str, object]:
    return {"python": sys.version, "requirements": list(ZULIP_TERM_REQUIREMENTS)}


def zulip_term_executable(venv: Path = ZULIP_TERM_VENV) -> Path:
    return venv / "bin" / "zulip-term"


def _venv_is_valid(venv: Path) -> bool:
    stamp = venv / STAMP_NAME
    try:
        if json.loads(stamp.read_text()) != _venv_stamp():
            return False
    except (OSError, ValueError):
        return False
    executable = zulip_term_executable(venv)
    if not executable.is_file():
        return False
    result = _run([str(executable), "--version"], cwd=venv, timeout=60)
    return result.returncode == 0 and "Zulip Terminal 0.7.0" in result.stdout


def install_zulip_term(venv: Path = ZULIP_TERM_VENV) -> Path:
    """The virtualenv with zulip-term, made (or remade) if it is missing or stale.

    Calls ``pytest.fail`` with the failing command's output when it cannot be made.
    """
    with _cache_lock("zulip-term-venv"):
        if _venv_is_valid(venv):
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "--ignore-requires-python",
                *ZULIP_TERM_REQUIREMENTS,
            ],
        ]
        for args in steps:
            try:
                result = _run(args, cwd=REPO_ROOT, timeout=PIP_TIMEOUT)
            except subprocess.TimeoutExpired:
                shutil.rmtree(venv, ignore_errors=True)
                pytest.fail(
                    f"installing zulip-term timed out after {PIP_TIMEOUT:.0f} s: {args}",
                    pytrace=False,
                )
            if result.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                pytest.fail(
                    "could not install zulip-term 0.7.0 for the end-to-end tests (they need "
                    f"PyPI); `{' '.join(args)}` exited with {result.returncode}\n"
                    f"{_tail(result)}",
                    pytrace=False,
                )
        (venv / STAMP_NAME).write_text(json.dumps(_venv_stamp()))
        if not _venv_is_valid(venv):
            pytest.fail(
                f"zulip-term was installed into {venv} but `zulip-term --version` does not "
                "report 0.7.0",
                pytrace=False,
            )
        return venv


@pytest.fixture(scope="session", name="zulip_term_venv")
def zulip_term_venv_fixture() -> Path:
    return install_zulip_term()


# zulip-term 0.7.0 starts its presence and user-list threads before its main loop opens
# the pipe through which they ask for a redraw; when the server answers them quickly they
# die on this assertion. That is the client's own race, not a server fault: the tests
# ignore exactly this traceback and report every other one.
_KNOWN_CLIENT_RACE = 'assert hasattr(self, "_update_pipe")'
_TRACEBACK_START = re.compile(r"(?m)^(?=Exception in thread |Traceback \(most recent call last\):)")
# The last line of a finished traceback names the exception ("AssertionError",
# "KeyError: 'x'"); a block without one is still being written.
_EXCEPTION_LINE = re.compile(r"(?m)^[A-Za-z_][\w.]*(: .*)?$")


def unexpected_tracebacks(stderr: str) -> list[str]:
    """The tracebacks in zulip-term's stderr, without the known start-up race."""
    blocks = [block for block in _TRACEBACK_START.split(stderr) if block.strip()]
    merged: list[str] = []
    for block in blocks:
        if (
            merged
            and merged[-1].startswith("Exception in thread ")
            and "\n" not in (merged[-1].strip())
        ):
            merged[-1] += block
        else:
            merged.append(block)
    return [
        block
        for block in merged
        if "Traceback (most recent call last):" in block
        and _finished(block)
        and _KNOWN_CLIENT_RACE not in block
    ]


def _finished(block: str) -> bool:
    """Whether a traceback has been written out to its exception line: one read while
    the client is still writing it must not be judged (nor reported) by its first lines.
    """
    body = block.split("Traceback (most recent call last):", 1)[1]
    return any(
        _EXCEPTION_LINE.match(line) for line in body.splitlines() if not line.startswith(" ")
    )


_API_LINE = re.compile(r'"(GET|POST|PATCH|PUT|DELETE) (\S+) HTTP/1\.1" (\d{3})')


def api_requests(log: str) -> list[tuple[str, str, int]]:
    """(method, path with query, status) of each request in zulip-term's debug log of API
    calls (``zulip-term -d`` writes it as urllib3 logs them)."""
    return [(m[1], m[2], int(m[3])) for m in _API_LINE.finditer(log)]


# --- zulip-js --------------------------------------------------------------------------


def _lock_digest() -> str:
    return hashlib.sha256((ZULIP_JS_DIR / "package-lock.json").read_bytes()).hexdigest()


def install_zulip_js(project: Path = ZULIP_JS_DIR) -> Path:
    """``npm ci`` in the zulip-js project unless its node_modules came from the same lock."""
    stamp = project / "node_modules" / ".hubbub-e2e-lock-sha256"
    npm = shutil.which("npm")
    node = shutil.which("node")
    if npm is None or node is None:
        pytest.fail(
            "the zulip-js end-to-end tests need Node.js and npm on PATH "
            f"(node: {node}, npm: {npm})",
            pytrace=False,
        )
    with _cache_lock("zulip-js-node-modules"):
        digest = _lock_digest()
        if stamp.is_file() and stamp.read_text() == digest:
            return project
        args = [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"]
        try:
            result = _run(args, cwd=project, timeout=NPM_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"`npm ci` in {project} timed out after {NPM_TIMEOUT:.0f} s", pytrace=False)
        if result.returncode != 0:
            pytest.fail(
                f"`npm ci` in {project} exited with {result.returncode} (the zulip-js tests "
                f"need the npm registry)\n{_tail(result)}",
                pytrace=False,
            )
        stamp.write_text(digest)
        return project


@pytest.fixture(scope="session", name="zulip_js_project")
def zulip_js_project_fixture() -> Path:
    return install_zulip_js()


def node_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ZULIP_")}
    env.update(extra)
    return env
