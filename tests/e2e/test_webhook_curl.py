"""An incoming webhook end to end: a real ``hubbub serve`` (SQLite, and PostgreSQL with
HUBBUB_TEST_DATABASE_URL), an incoming-webhook bot made by ``hubbub create-user
--incoming-webhook``, a GitHub push fixture posted with ``curl`` as GitHub posts it, and
the message read back through the official ``zulip`` client."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import zulip

from tests.e2e.client import assert_ok
from tests.e2e.conftest import HubbubServer, run_hubbub
from tests.integrations.fixtures import FIXTURES

BOT_EMAIL = "github-bot@hubbub.local"
CURL_TIMEOUT = 30.0


def _make_webhook_bot(server: HubbubServer, tmp_path: Path) -> tuple[int, str]:
    created = run_hubbub(
        "create-user",
        "--realm",
        "",
        "--email",
        BOT_EMAIL,
        "--full-name",
        "GitHub",
        "--incoming-webhook",
        "--json",
        *server.db_args(),
        cwd=tmp_path,
    )
    assert created.returncode == 0, created.stderr
    made = json.loads(created.stdout)
    return int(made["user_id"]), str(made["api_key"])


def _curl(url: str, fixture: Path, event: str) -> dict[str, object]:
    done = subprocess.run(
        [
            "curl",
            "--silent",
            "--show-error",
            "--request",
            "POST",
            "--header",
            "Content-Type: application/json",
            "--header",
            f"X-GitHub-Event: {event}",
            "--header",
            "User-Agent: GitHub-Hookshot/044aadd",
            "--data-binary",
            f"@{fixture}",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=CURL_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def test_github_push_posted_with_curl(
    hubbub_server: HubbubServer, owner_client: zulip.Client, tmp_path: Path
) -> None:
    bot_id, api_key = _make_webhook_bot(hubbub_server, tmp_path)
    assert_ok(owner_client.add_subscriptions([{"name": "commits"}]))
    bot = assert_ok(owner_client.get_user_by_id(bot_id))["user"]
    assert bot["is_bot"] is True
    assert bot["bot_type"] == 2

    url = f"{hubbub_server.url}/api/v1/external/github?api_key={api_key}&stream=commits"
    answer = _curl(url, FIXTURES / "github" / "push.json", "push")
    assert answer == {"result": "success", "msg": ""}

    found = assert_ok(
        owner_client.get_messages(
            {
                "anchor": "newest",
                "num_before": 5,
                "num_after": 0,
                "narrow": [{"operator": "channel", "operand": "commits"}],
                "apply_markdown": False,
            }
        )
    )
    [message] = found["messages"]
    assert message["sender_id"] == bot_id
    assert message["subject"] == "hello-world / main"
    assert message["client"] == "ZulipGitHubWebhook"
    assert message["content"].startswith(
        "[mona](https://github.com/mona) pushed [2 commits]"
        "(https://github.com/octo-org/hello-world/compare/6113728f27ae...a3f1c0e9b2d4)"
    )
    assert "* Fix the build badge link ([a3f1c0e]" in message["content"]

    # An event GitHub sends that hubbub does not post: Zulip's answer, status 200.
    unsupported = _curl(url, FIXTURES / "github" / "push.json", "star")
    assert unsupported["code"] == "UNSUPPORTED_WEBHOOK_EVENT_TYPE"
    assert unsupported["msg"] == (
        "The 'star' event isn't currently supported by the GitHub webhook; ignoring"
    )
    # The key in the URL stays out of the server's log, the warning about the event aside.
    assert api_key not in hubbub_server.stderr()
