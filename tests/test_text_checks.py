"""Control characters in topics and names (``hubbub.text_checks``), and in log lines
(``hubbub.logs``)."""

from __future__ import annotations

import io
import logging
from typing import Any

import pytest

from hubbub.errors import JsonableError
from hubbub.logs import EscapeControls, escape_controls
from hubbub.text_checks import check_printable, unprintable_position
from tests.helpers import TestEnv, assert_error, assert_success

HOSTILE = ["\x1b[31mred", "a\x00b", "line\nbreak", "a\x7f", "\x9b2J", "bad\ud800", "x\ufffe"]


def test_unprintable_position_is_one_based_and_finds_every_kind() -> None:
    assert unprintable_position("fine, with émoji 🎉 and a space") is None
    assert unprintable_position("") is None
    assert unprintable_position("ab\tc") == 3  # a tab is a control character too
    assert [unprintable_position(text) for text in HOSTILE] == [1, 2, 5, 2, 1, 4, 2]
    # Separators and format characters that Python calls unprintable are allowed.
    assert unprintable_position("a\u00a0b\u200bc\u2028") is None
    with pytest.raises(JsonableError) as info:
        check_printable("ok\x1b", "topic")
    assert info.value.msg == "Invalid character in topic, at position 3!"


@pytest.mark.parametrize("topic", HOSTILE[:5] + HOSTILE[6:])
async def test_topics_with_control_characters_are_refused_everywhere(
    env: TestEnv, topic: str
) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    client = env.client("hamlet")
    position = unprintable_position(topic)
    expected = f"Invalid character in topic, at position {position}!"
    if "\x00" in topic:
        expected = "Invalid character in topic, at position 2!"
    requests: list[tuple[str, dict[str, Any]]] = [
        ("/messages", {"type": "stream", "to": "Denmark", "topic": topic, "content": "x"}),
        ("/typing", {"type": "stream", "op": "start", "stream_id": denmark.id, "topic": topic}),
        ("/user_topics", {"stream_id": denmark.id, "topic": topic, "visibility_policy": 1}),
    ]
    for path, params in requests:
        assert_error(await client.post(path, params), expected)
    # Clearing a policy needs no check: nothing is stored or shown.
    assert_success(
        await client.post(
            "/user_topics", {"stream_id": denmark.id, "topic": "x\x1b", "visibility_policy": 0}
        )
    )


async def test_full_names_refuse_every_unprintable_character(env: TestEnv) -> None:
    client = env.client("hamlet")
    for name in ["Ham\x1blet", "Ham\x00let", "Hamlet\ufffe", "Ham\u0085let"]:
        assert_error(
            await client.patch("/settings", {"full_name": name}), "Invalid characters in name!"
        )
    assert_success(await client.patch("/settings", {"full_name": "Hamlet Prince"}))


def test_log_lines_escape_control_characters() -> None:
    assert escape_controls("plain text, é") == "plain text, é"
    assert escape_controls("a\x1b[2Jb\nforged\r\x00\x9b\x7f\tend") == (
        "a\\x1b[2Jb\\nforged\\r\\x00\\x9b\\x7f\tend"
    )
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(EscapeControls())
    logger = logging.getLogger("hubbub.tests.escaping")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("login failed for %s", "evil\x1b[31m\nFAKE LINE")
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("with a traceback: %r", "\x07")
    finally:
        logger.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "login failed for evil\\x1b[31m\\nFAKE LINE"
    assert lines[1] == "with a traceback: '\\x07'"
    assert lines[2] == "Traceback (most recent call last):"  # the traceback keeps its lines
    assert "\x1b" not in stream.getvalue()


def test_configure_logging_escapes_on_the_root_handlers(monkeypatch: pytest.MonkeyPatch) -> None:
    from hubbub.logs import configure_logging

    root = logging.getLogger()
    saved = list(root.handlers)
    stream = io.StringIO()
    for handler in saved:
        root.removeHandler(handler)
    monkeypatch.setattr("sys.stderr", stream)
    try:
        configure_logging()
        logging.getLogger("hubbub.tests.root").warning("user agent %s", "x\x1b]0;title\x07")
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved:
            root.addHandler(handler)
    assert "user agent x\\x1b]0;title\\x07" in stream.getvalue()
    assert "\x1b" not in stream.getvalue()
