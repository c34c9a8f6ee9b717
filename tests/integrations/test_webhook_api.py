"""``/api/v1/external/{integration}``: authentication, where the message goes, event
filtering and the errors, as Zulip 10.2 answers them."""

from __future__ import annotations

import base64
import logging

import orjson
import pytest

from hubbub.actions.users import check_create_user, do_deactivate_user
from hubbub.clock import FakeClock
from tests.helpers import assert_error, assert_success
from tests.integrations.conftest import Hook
from tests.integrations.fixtures import fixture_body, fixture_headers

PUSH = fixture_body("github", "push")
PUSH_HEADERS = fixture_headers("github", "push")


async def _push(hook: Hook, **params: str) -> dict[str, object]:
    response = await hook.post("github", PUSH, headers=PUSH_HEADERS, params=params)
    return assert_success(response)


# --- authentication ---------------------------------------------------------------------


async def test_missing_api_key(hook: Hook) -> None:
    response = await hook.post("github", PUSH, headers=PUSH_HEADERS, api_key=None)
    body = assert_error(response, "Missing 'api_key' argument", code="REQUEST_VARIABLE_MISSING")
    assert body["var_name"] == "api_key"


async def test_malformed_and_wrong_api_keys(hook: Hook) -> None:
    response = await hook.post("github", PUSH, headers=PUSH_HEADERS, api_key="short")
    assert_error(response, "Malformed API key", status=401, code="INVALID_API_KEY")
    response = await hook.post("github", PUSH, headers=PUSH_HEADERS, api_key="a" * 32)
    assert_error(response, "Invalid API key", status=401, code="INVALID_API_KEY")
    assert await hook.message_count() == 0


async def test_deactivated_bot(hook: Hook) -> None:
    async with hook.env.services.write() as tx:
        await do_deactivate_user(tx, hook.bot)
    response = await hook.post("github", PUSH, headers=PUSH_HEADERS, params={"stream": "dev"})
    assert_error(response, "Account is deactivated", status=401, code="USER_DEACTIVATED")


async def test_basic_auth_instead_of_api_key(hook: Hook) -> None:
    token = base64.b64encode(f"{hook.bot.delivery_email}:{hook.bot.api_key}".encode()).decode()
    response = await hook.post(
        "github",
        PUSH,
        headers={**PUSH_HEADERS, "Authorization": f"Basic {token}"},
        params={"stream": "dev"},
        api_key=None,
    )
    assert_success(response)
    assert (await hook.latest())["sender_id"] == hook.bot.id


async def test_other_accounts_keys_work_too(hook: Hook) -> None:
    """Zulip's webhook_view takes any active account's key; the message is theirs."""
    othello = hook.env.users["othello"]
    response = await hook.post(
        "github", PUSH, headers=PUSH_HEADERS, params={"stream": "dev"}, api_key=othello.api_key
    )
    assert_success(response)
    message = await hook.latest()
    assert message["sender_id"] == othello.id
    assert message["client"] == "ZulipGitHubWebhook"


async def test_unknown_integration_is_404(hook: Hook) -> None:
    response = await hook.post("nosuchservice", {"a": 1}, params={"stream": "dev"})
    assert response.status_code == 404
    assert response.json()["result"] == "error"


# --- where the message goes -------------------------------------------------------------


async def test_stream_by_id_and_topic_override(hook: Hook) -> None:
    await _push(hook, stream=str(hook.stream.id), topic="deploys")
    message = await hook.latest()
    assert message["display_recipient"] == "dev"
    assert message["subject"] == "deploys"


async def test_without_stream_the_owner_gets_a_direct_message(hook: Hook) -> None:
    await _push(hook)
    message = await hook.latest()
    assert message["type"] == "private"
    assert {r["id"] for r in message["display_recipient"]} == {hook.bot.id, hook.owner.id}
    assert message["content"].startswith("[mona](https://github.com/mona) pushed")


async def test_missing_stream_tells_the_owner(hook: Hook) -> None:
    body = await _push(hook, stream="no-such-channel")
    assert body == {"result": "success", "msg": ""}
    message = await hook.latest()
    assert message["type"] == "private"
    assert "**no-such-channel**, which does not exist" in message["content"]


async def test_jira_parameters_are_unquoted_again(hook: Hook) -> None:
    # Jira escapes the URL's parameters a second time: "%2520" arrives as "%20".
    response = await hook.post(
        "jira",
        fixture_body("jira", "issue_deleted"),
        params={"stream": "dev", "topic": "jira%20news"},
    )
    assert_success(response)
    assert (await hook.latest())["subject"] == "jira news"


# --- event filtering --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("only", "exclude", "posted"),
    [
        (["push"], None, True),
        (["pu*"], None, True),
        (["issue*", "release"], None, False),
        (None, ["push"], False),
        (None, ["p?sh"], False),
        (None, ["issues"], True),
        (["push"], ["push"], False),
    ],
)
async def test_only_and_exclude_events(
    hook: Hook, only: list[str] | None, exclude: list[str] | None, posted: bool
) -> None:
    params = {"stream": "dev"}
    if only is not None:
        params["only_events"] = orjson.dumps(only).decode()
    if exclude is not None:
        params["exclude_events"] = orjson.dumps(exclude).decode()
    assert_success(await hook.post("github", PUSH, headers=PUSH_HEADERS, params=params))
    assert await hook.message_count() == (1 if posted else 0)


async def test_event_lists_must_be_json_lists(hook: Hook) -> None:
    response = await hook.post(
        "github", PUSH, headers=PUSH_HEADERS, params={"stream": "dev", "only_events": "push"}
    )
    assert_error(response, "only_events is not valid JSON")


async def test_github_branches_and_private_repositories(hook: Hook) -> None:
    await _push(hook, stream="dev", branches="release, beta")
    assert await hook.message_count() == 0
    await _push(hook, stream="dev", branches="beta,main")
    assert await hook.message_count() == 1
    private = orjson.loads(PUSH)
    private["repository"]["private"] = True
    params = {"stream": "dev", "ignore_private_repositories": "true"}
    response = await hook.post("github", private, headers=PUSH_HEADERS, params=params)
    assert_success(response)
    assert await hook.message_count() == 1


async def test_alertmanager_labels_chosen_by_the_url(hook: Hook) -> None:
    response = await hook.post(
        "alertmanager",
        fixture_body("alertmanager", "firing"),
        params={"stream": "dev", "name": "severity", "desc": "instance"},
    )
    assert_success(response)
    message = await hook.latest()
    # No common "instance" label: the first alert's names the topic.
    assert message["subject"] == "db-1:9100"
    assert message["content"].count("[critical](") == 2


# --- errors -----------------------------------------------------------------------------


async def test_unsupported_event_is_an_error_with_status_200(
    hook: Hook, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="hubbub.webhooks"):
        response = await hook.post(
            "github",
            {"action": "created"},
            headers={"X-GitHub-Event": "star"},
            params={"stream": "dev"},
        )
    body = assert_error(
        response,
        "The 'star' event isn't currently supported by the GitHub webhook; ignoring",
        status=200,
        code="UNSUPPORTED_WEBHOOK_EVENT_TYPE",
    )
    assert body["webhook_name"] == "GitHub"
    assert body["event_type"] == "star"
    assert "star" in caplog.text
    # The bot's key never reaches the log.
    assert hook.bot.api_key not in caplog.text
    assert await hook.message_count() == 0


async def test_unsupported_action_names_the_action(hook: Hook) -> None:
    payload = orjson.loads(fixture_body("github", "issues__opened"))
    payload["action"] = "teleported"
    response = await hook.post(
        "github", payload, headers={"X-GitHub-Event": "issues"}, params={"stream": "dev"}
    )
    assert_error(
        response,
        "The 'issues:teleported' event isn't currently supported by the GitHub webhook; ignoring",
        status=200,
        code="UNSUPPORTED_WEBHOOK_EVENT_TYPE",
    )


async def test_missing_event_header(hook: Hook) -> None:
    response = await hook.post("github", PUSH, params={"stream": "dev"})
    body = assert_error(
        response, "Missing the HTTP event header 'X-GitHub-Event'", code="MISSING_HTTP_EVENT_HEADER"
    )
    assert body["header"] == "X-GitHub-Event"


async def test_owner_hears_of_misconfigured_webhooks_once_an_hour(
    clocked_hook: tuple[Hook, FakeClock],
) -> None:
    hook, clock = clocked_hook
    params = {"stream": "dev"}
    assert_error(
        await hook.post("github", PUSH, params=params),
        "Missing the HTTP event header 'X-GitHub-Event'",
        code="MISSING_HTTP_EVENT_HEADER",
    )
    notice = await hook.latest()
    assert notice["type"] == "private"
    assert notice["sender_id"] == hook.bot.id
    assert "without the `X-GitHub-Event` header" in notice["content"]
    assert "`/api/v1/external/github`" in notice["content"]
    # Again within the hour: the error, but no second notice.
    await hook.post("github", PUSH, params=params)
    assert await hook.message_count() == 1
    # Another kind of problem is told once too.
    await hook.post("github", b"{", headers=PUSH_HEADERS, params=params)
    await hook.post("github", b"{", headers=PUSH_HEADERS, params=params)
    assert await hook.message_count() == 2
    assert "whose body is not JSON" in (await hook.latest())["content"]
    clock.advance(3601)
    await hook.post("github", PUSH, params=params)
    assert await hook.message_count() == 3


async def test_gitea_accepts_forgejo_header(hook: Hook) -> None:
    response = await hook.post(
        "gitea",
        fixture_body("gitea", "push"),
        headers={"X-Forgejo-Event": "push"},
        params={"stream": "dev"},
    )
    assert_success(response)
    assert (await hook.latest())["client"] == "ZulipGiteaWebhook"


@pytest.mark.parametrize("body", [b"", b"{not json", b"payload=1"])
async def test_malformed_json(hook: Hook, body: bytes) -> None:
    response = await hook.post("github", body, headers=PUSH_HEADERS, params={"stream": "dev"})
    assert_error(response, "Malformed JSON", code="INVALID_JSON")


async def test_payload_of_another_service(hook: Hook) -> None:
    response = await hook.post(
        "github", {"something": "else"}, headers=PUSH_HEADERS, params={"stream": "dev"}
    )
    body = assert_error(
        response,
        "Unable to parse request: Did GitHub generate this event?",
        code="ANOMALOUS_WEBHOOK_PAYLOAD",
    )
    assert body["webhook_name"] == "GitHub"
    response = await hook.post("jira", {"other": 1}, params={"stream": "dev"})
    assert_error(
        response,
        "Unable to parse request: Did Jira generate this event?",
        code="ANOMALOUS_WEBHOOK_PAYLOAD",
    )


# --- methods and encodings --------------------------------------------------------------


async def test_get_is_served(hook: Hook) -> None:
    response = await hook.post(
        "github", None, headers=PUSH_HEADERS, params={"stream": "dev"}, method="GET"
    )
    assert_error(response, "Malformed JSON", code="INVALID_JSON")
    response = await hook.post("github", None, method="DELETE", params={"stream": "dev"})
    assert response.status_code == 405


async def test_form_encoded_payload(hook: Hook) -> None:
    response = await hook.post(
        "slack_incoming",
        None,
        params={"stream": "dev", "topic": "ops"},
        form={"payload": orjson.dumps({"text": "*hello* from a form"}).decode()},
    )
    assert_success(response)
    message = await hook.latest()
    assert message["content"] == "**hello** from a form"
    assert message["subject"] == "ops"


async def test_unknown_parameters_are_reported(hook: Hook) -> None:
    body = await _push(hook, stream="dev", surprise="1")
    assert body["ignored_parameters_unsupported"] == ["surprise"]


async def test_an_account_that_is_no_bot_sends_itself_a_direct_message(hook: Hook) -> None:
    env = hook.env
    async with env.services.write() as tx:
        human = await check_create_user(
            tx,
            env.realm,
            email="ci@example.com",
            full_name="CI",
            password=None,
            bot_type=None,
            now=env.services.clock.now(),
        )
    response = await hook.post("github", PUSH, headers=PUSH_HEADERS, api_key=human.api_key)
    assert_success(response)
    message = await hook.latest(human)
    assert message["type"] == "private"
    assert [r["id"] for r in message["display_recipient"]] == [human.id]


# --- /register --------------------------------------------------------------------------


async def test_register_lists_the_integrations(hook: Hook) -> None:
    client = hook.env.client("hamlet")
    body = assert_success(
        await client.post("/register", {"fetch_event_types": ["realm_incoming_webhook_bots"]})
    )
    bots = {entry["name"]: entry for entry in body["realm_incoming_webhook_bots"]}
    assert set(bots) == {
        "alertmanager",
        "gitea",
        "github",
        "gitlab",
        "grafana",
        "jira",
        "json",
        "sentry",
        "slack_incoming",
    }
    github = bots["github"]
    assert github["display_name"] == "GitHub"
    assert github["all_event_types"] == [
        "issue_comment",
        "issues",
        "ping",
        "pull_request",
        "push",
        "release",
        "workflow_run",
    ]
    assert [option["key"] for option in github["config_options"]] == [
        "branches",
        "ignore_private_repositories",
    ]
    assert github["config_options"][1]["validator"] == "check_bool"
    assert bots["json"]["all_event_types"] is None
    assert bots["json"]["config_options"] == []
