"""One notice's event is shaped once per distinct registration (``queues.ShapedOnce``),
and each queue still gets exactly what ``shape_event`` would give it."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from hubbub.events import queues
from hubbub.events.queues import MESSAGE_MARK, QueueSpec, ShapedOnce, shape_event


def message_event(local_id: str | None) -> dict[str, Any]:
    return {
        "type": "message",
        "flags": [],
        "message": {
            "id": 7,
            "type": "stream",
            "stream_id": 3,
            "display_recipient": "Denmark",
            "subject": "t",
            "content": "<p>hi</p>",
            "content_type": "text/html",
            "avatar_url": "https://secure.gravatar.com/avatar/x",
            "sender_id": 1,
        },
        MESSAGE_MARK: {
            "raw_content": "hi",
            "gravatar": True,
            "queue_id": "q-sender",
            "sender_id": 1,
            "local_id": local_id,
        },
    }


def spec(queue_id: str, user_id: int, **options: Any) -> QueueSpec:
    options.setdefault("event_types", None)
    return QueueSpec(queue_id=queue_id, user_id=user_id, realm_id=1, **options)


SPECS = [
    spec("q-sender", 1, apply_markdown=True),  # the sending queue: its local id
    spec("q-other-of-sender", 1, apply_markdown=True),
    spec("q-a", 2, apply_markdown=True),
    spec("q-b", 3, apply_markdown=True),
    spec("q-raw", 4, apply_markdown=False),
    spec("q-urls", 5, apply_markdown=True, client_gravatar=False),
    spec("q-narrow", 6, narrow=[["stream", "Elsewhere"]]),
    spec("q-types", 7, event_types=["realm_user"]),
]


@pytest.mark.parametrize("local_id", ["12.01", None])
def test_each_queue_gets_what_shape_event_gives_it(
    local_id: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = message_event(local_id)
    expected = [shape_event(event, s) for s in SPECS]
    calls = []
    original = queues.shape_event

    def counting(event: dict[str, Any], spec: QueueSpec) -> dict[str, Any] | None:
        calls.append(spec.queue_id)
        return original(event, spec)

    monkeypatch.setattr(queues, "shape_event", counting)
    shapes = ShapedOnce(event)
    assert [shapes.shape(s) for s in SPECS] == expected
    # The Redis bus stores each queue's shape as JSON, made from the same shape.
    assert [shapes.json(s) for s in SPECS] == [
        None if e is None else orjson.dumps(e).decode() for e in expected
    ]
    # q-a and q-b share the shape of the sender's other queue; with no local id to add,
    # so does the sending queue itself.
    assert "q-a" not in calls and "q-b" not in calls
    assert ("q-other-of-sender" in calls) == (local_id is not None)
    assert len(calls) == (6 if local_id else 5)
    assert expected[0] is not None and expected[1] is not None
    assert expected[0].get("local_message_id") == local_id
    assert "local_message_id" not in expected[1]
    assert expected[4] is not None and expected[4]["message"]["content"] == "hi"
    assert expected[5] is not None and expected[5]["message"]["avatar_url"] is not None
    assert expected[6] is None and expected[7] is None


def test_the_shaping_key_is_not_saved_with_the_spec() -> None:
    queue = spec("q", 1, client_capabilities={"bulk_message_deletion": True})
    assert queue.shaping[-1] == (("bulk_message_deletion", True),)
    assert QueueSpec.from_dict(queue.to_dict()) == queue
    assert "shaping" not in queue.to_dict()
