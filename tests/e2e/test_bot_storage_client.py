"""A stateful bot from zulip-bots, run by its own ``zulip-run-bot`` command against a real
``hubbub serve``, and code playgrounds through the official ``zulip`` client (SQLite, and
PostgreSQL with HUBBUB_TEST_DATABASE_URL).

The incrementor bot keeps a count and the id of its one reply in ``/bot_storage``: every
direct message to it adds one to the count, which it writes back, and edits its reply to
show it. The count is read back through the bot's own client, as the bot reads it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import zulip

from tests.e2e.client import assert_error, assert_ok, close, make_client
from tests.e2e.conftest import HubbubServer, run_hubbub

T = TypeVar("T")

BOT_EMAIL = "incrementor-bot@hubbub.local"
# A message the bot never saw (its queue was not registered yet) is sent again after this.
UNANSWERED_AFTER = 8.0
BOT_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


def _wait_for(probe: Callable[[], T | None], timeout: float = BOT_TIMEOUT) -> T | None:
    """``probe()``'s first result other than None, or None after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def _must(result: T | None, what: str, log: Path) -> T:
    assert result is not None, f"timed out waiting for {what}; the bot's output:\n{log.read_text()}"
    return result


def _make_bot(server: HubbubServer, tmp_path: Path) -> tuple[int, Path]:
    """A generic bot made by ``hubbub create-user --bot``, and its zuliprc."""
    created = run_hubbub(
        "create-user",
        "--realm",
        "",
        "--email",
        BOT_EMAIL,
        "--full-name",
        "Incrementor",
        "--bot",
        "--json",
        *server.db_args(),
        cwd=tmp_path,
    )
    assert created.returncode == 0, created.stderr
    bot_id = int(json.loads(created.stdout)["user_id"])
    zuliprc = tmp_path / "incrementor.zuliprc"
    written = run_hubbub(
        "zuliprc",
        "--realm",
        "",
        "--email",
        BOT_EMAIL,
        "--output",
        str(zuliprc),
        *server.db_args(),
        "--site",
        server.url,
        cwd=tmp_path,
    )
    assert written.returncode == 0, written.stderr
    return bot_id, zuliprc


@contextmanager
def _running_bot(name: str, zuliprc: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``zulip-run-bot NAME --config-file ZULIPRC`` (as ``python -m zulip_bots.run``),
    stopped by its PID afterwards: SIGINT, which the bot handles by exiting, then SIGKILL."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ZULIP_")}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-u", "-m", "zulip_bots.run", name, "--config-file", str(zuliprc)],
            cwd=log.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT)


def _storage(client: zulip.Client) -> dict[str, str]:
    return assert_ok(client.get_storage())["storage"]  # type: ignore[no-any-return]


def _content(client: zulip.Client, message_id: int) -> str:
    found = assert_ok(
        client.get_messages(
            {"anchor": message_id, "num_before": 0, "num_after": 0, "apply_markdown": False}
        )
    )["messages"]
    assert [m["id"] for m in found] == [message_id], found
    return str(found[0]["content"])


def test_incrementor_keeps_its_count_in_bot_storage(
    hubbub_server: HubbubServer, owner_client: zulip.Client, tmp_path: Path
) -> None:
    bot_id, zuliprc = _make_bot(hubbub_server, tmp_path)
    bot_client = make_client(config_file=str(zuliprc))
    log = tmp_path / "incrementor.log"
    try:
        # A bot's store starts empty.
        assert _storage(bot_client) == {}
        with _running_bot("incrementor", zuliprc, log) as process:

            def dm() -> None:
                assert_ok(
                    owner_client.send_message({"type": "private", "to": [bot_id], "content": "+1"})
                )

            # Its ``initialize`` stores a count of 0 and no reply yet (values are JSON).
            initial = _wait_for(lambda: s if len(s := _storage(bot_client)) == 2 else None)
            assert _must(initial, "the bot's start", log) == {"number": "0", "message_id": "null"}

            # The bot registers its event queue just after; a message sent before that is
            # never delivered to it, so send again until one is answered.
            answered: dict[str, str] | None = None
            for _ in range(3):
                dm()
                answered = _wait_for(
                    lambda: (
                        s
                        if (s := _storage(bot_client))["number"] != "0"
                        and s["message_id"] != "null"
                        else None
                    ),
                    timeout=UNANSWERED_AFTER,
                )
                if answered is not None:
                    break
            answered = _must(answered, "the first reply", log)
            count = int(answered["number"])
            reply_id = json.loads(answered["message_id"])
            assert count >= 1 and isinstance(reply_id, int), answered
            assert _content(owner_client, reply_id) == str(count)

            # Each further message adds exactly one, kept across messages in the store,
            # and the bot edits its one reply instead of sending another.
            for _ in range(3):
                dm()
                expected = {"number": str(count + 1), "message_id": str(reply_id)}

                def stored(expected: dict[str, str] = expected) -> bool | None:
                    return True if _storage(bot_client) == expected else None

                seen = _wait_for(stored)
                _must(seen, f"the count {count + 1}", log)
                count += 1
                assert _content(owner_client, reply_id) == str(count)
            assert process.poll() is None, log.read_text()

        # The store outlives the bot's process; its entries read back one by one.
        assert assert_ok(bot_client.get_storage({"keys": ["number"]}))["storage"] == {
            "number": str(count)
        }
        assert_error(
            bot_client.get_storage({"keys": ["number", "nothing"]}),
            "BAD_REQUEST",
            "Key does not exist.",
        )
        conversation = assert_ok(
            owner_client.get_messages(
                {
                    "anchor": "newest",
                    "num_before": 100,
                    "num_after": 0,
                    "narrow": [{"operator": "dm", "operand": [bot_id]}],
                }
            )
        )["messages"]
        assert [m["id"] for m in conversation if m["sender_id"] == bot_id] == [reply_id]
        # The owner's store is another one.
        assert _storage(owner_client) == {}
    finally:
        close(bot_client)


def test_update_and_remove_storage_through_the_client(
    hubbub_server: HubbubServer, owner_client: zulip.Client, tmp_path: Path
) -> None:
    _, zuliprc = _make_bot(hubbub_server, tmp_path)
    client = make_client(config_file=str(zuliprc))
    try:
        entries = {"entry 1": "value 1", "entry 2": "value 2", "entry 3": "value 3"}
        assert_ok(client.update_storage({"storage": entries}))
        assert _storage(client) == entries
        assert assert_ok(client.get_storage({"keys": ["entry 1", "entry 3"]}))["storage"] == {
            "entry 1": "value 1",
            "entry 3": "value 3",
        }
        assert_error(
            client.update_storage({"storage": {"entry 1": 1}}),
            "BAD_REQUEST",
            'storage["entry 1"] is not a string',
        )
        # The official client has no call for removal; its generic one does it.
        assert_ok(
            client.call_endpoint(url="bot_storage", method="DELETE", request={"keys": ["entry 2"]})
        )
        assert_error(
            client.call_endpoint(url="bot_storage", method="DELETE", request={"keys": ["entry 2"]}),
            "BAD_REQUEST",
            "Key does not exist.",
        )
        assert _storage(client) == {"entry 1": "value 1", "entry 3": "value 3"}
        assert_ok(client.call_endpoint(url="bot_storage", method="DELETE"))
        assert _storage(client) == {}
    finally:
        close(client)


def test_code_playgrounds_through_the_client(owner_client: zulip.Client) -> None:
    # The official client has no playground calls; its generic one reaches them.
    state = assert_ok(owner_client.register(event_types=["realm_playgrounds"]))
    assert state["realm_playgrounds"] == []
    python: dict[str, Any] = {
        "name": "Python playground",
        "pygments_language": "Python",
        "url_template": "https://python.example.com?code={code}",
    }
    first = assert_ok(
        owner_client.call_endpoint(url="realm/playgrounds", method="POST", request=python)
    )["id"]
    assert_error(
        owner_client.call_endpoint(url="realm/playgrounds", method="POST", request=python),
        "BAD_REQUEST",
        "Realm playground with this Realm, Pygments language and Name already exists.",
    )
    assert_error(
        owner_client.call_endpoint(
            url="realm/playgrounds",
            method="POST",
            request={**python, "url_template": "https://e.com/{?test,code}"},
        ),
        "BAD_REQUEST",
        '"code" should be the only variable present in the URL template',
    )
    rust = {"name": "Rust", "pygments_language": "Rust", "url_template": "https://r.example/{code}"}
    second = assert_ok(
        owner_client.call_endpoint(url="realm/playgrounds", method="POST", request=rust)
    )["id"]
    assert_ok(owner_client.call_endpoint(url=f"realm/playgrounds/{first}", method="DELETE"))
    assert_error(
        owner_client.call_endpoint(url=f"realm/playgrounds/{first}", method="DELETE"),
        "BAD_REQUEST",
        "Invalid playground",
    )
    events = assert_ok(
        owner_client.get_events(queue_id=state["queue_id"], last_event_id=state["last_event_id"])
    )["events"]
    assert [e["type"] for e in events] == ["realm_playgrounds"] * 3
    assert events[-1]["realm_playgrounds"] == [{**rust, "id": second}]
    fresh = assert_ok(owner_client.register(event_types=["realm_playgrounds"]))
    assert fresh["realm_playgrounds"] == [{**rust, "id": second}]
