"""Adding a submessage (``POST /submessage``): widget data such as poll votes and to-do
tasks, attached to a message, and the ``submessage`` event.

Behaviour follows Zulip 8.0:
- the user must be able to read the message ("Invalid message(s)");
- the message's sender attaches the first submessage (the widget itself); after that any
  reader may add more ("You cannot attach a submessage to this message.");
- ``content`` must be JSON ("Invalid json for submessage"); when the message is a poll or
  to-do widget, the data is checked against that widget's operations, with Zulip's
  validator wording (only types are checked; clients ignore votes for unknown options);
- adding a submessage is "participation" for the automatic topic policies;
- the event goes to every user with a ``user_message`` row for the message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import orjson
import sqlalchemy as sa

from hubbub.actions.message_follow import apply_participation_policy
from hubbub.actions.reactions import TargetMessage, access_message_for_update
from hubbub.db.tables import submessage
from hubbub.errors import JsonableError
from hubbub.json_values import load_json
from hubbub.models import User
from hubbub.queries.reactions import (
    get_user_message_holder_ids,
    get_widget_type,
    has_submessage_from,
)
from hubbub.transaction import Tx

# The highest option/task index the clients' widgets use.
MAX_IDX = 1000

Checker = Callable[[str, object], None]


def _string(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise JsonableError(f"{name} is not a string")


def _boolean(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise JsonableError(f"{name} is not a boolean")


def _integer(name: str, value: object) -> int:
    # Like Zulip's Python check, a JSON true/false counts as an integer.
    if not isinstance(value, int):
        raise JsonableError(f"{name} is not an integer")
    return value


def _vote(name: str, value: object) -> None:
    if _integer(name, value) not in (1, -1):
        raise JsonableError(f"Invalid {name}")


def _index(name: str, value: object) -> None:
    number = _integer(name, value)
    if number < 0:
        raise JsonableError(f"{name} is too small")
    if number > MAX_IDX:
        raise JsonableError(f"{name} is too large")


def _check_fields(
    label: str, data: dict[str, object], fields: Sequence[tuple[str, Checker]]
) -> None:
    """Every field present and well typed, and no other key."""
    for key, check in fields:
        if key not in data:
            raise JsonableError(f"{key} key is missing from {label}")
        check(f'{label}["{key}"]', data[key])
    unexpected = sorted(set(data) - {key for key, _ in fields})
    if unexpected:
        raise JsonableError(f"Unexpected arguments: {', '.join(unexpected)}")


def _typed_dict(label: str, data: object) -> dict[str, object]:
    if not isinstance(data, dict):
        raise JsonableError(f"{label} is not a dict")
    if "type" not in data:
        raise JsonableError(f"type key is missing from {label}")
    _string(f'{label}["type"]', data["type"])
    return data


def validate_poll_data(data: object, *, is_widget_author: bool) -> None:
    label = "poll data"
    poll = _typed_dict(label, data)
    kind = poll["type"]
    if kind == "vote":
        _check_fields(label, poll, [("type", _string), ("key", _string), ("vote", _vote)])
    elif kind == "question":
        if not is_widget_author:
            raise JsonableError("You can't edit a question unless you are the author.")
        _check_fields(label, poll, [("type", _string), ("question", _string)])
    elif kind == "new_option":
        _check_fields(label, poll, [("type", _string), ("option", _string), ("idx", _index)])
    else:
        raise JsonableError(f"Unknown type for poll data: {kind}")


def validate_todo_data(data: object, *, is_widget_author: bool) -> None:
    label = "todo data"
    todo = _typed_dict(label, data)
    kind = todo["type"]
    if kind == "new_task":
        fields: list[tuple[str, Checker]] = [
            ("type", _string),
            ("key", _index),
            ("task", _string),
            ("desc", _string),
            ("completed", _boolean),
        ]
        _check_fields(label, todo, fields)
    elif kind == "strike":
        _check_fields(label, todo, [("type", _string), ("key", _string)])
    elif kind == "new_task_list_title":
        if not is_widget_author:
            raise JsonableError("You can't edit the task list title unless you are the author.")
        _check_fields(label, todo, [("type", _string), ("title", _string)])
    else:
        raise JsonableError(f"Unknown type for todo data: {kind}")


async def verify_submessage_sender(tx: Tx, user: User, target: TargetMessage) -> None:
    """The first submessage of a message comes from the message's sender."""
    if user.id == target.sender_id:
        return
    if await has_submessage_from(tx.conn, target.id, target.sender_id):
        return
    raise JsonableError("You cannot attach a submessage to this message.")


async def do_add_submessage(
    tx: Tx, user: User, target: TargetMessage, msg_type: str, content: str, *, now: float
) -> int:
    """Store a checked submessage (the message row is locked) and queue its events."""
    submessage_id = int(
        (
            await tx.conn.execute(
                sa.insert(submessage)
                .values(message_id=target.id, sender_id=user.id, msg_type=msg_type, content=content)
                .returning(submessage.c.id)
            )
        ).scalar_one()
    )
    if target.stream_id is not None:
        await apply_participation_policy(tx, user, target.stream_id, target.topic, now=now)
    event = {
        "type": "submessage",
        "msg_type": msg_type,
        "message_id": target.id,
        "submessage_id": submessage_id,
        "sender_id": user.id,
        "content": content,
    }
    user_ids = await get_user_message_holder_ids(tx.conn, target.id)
    tx.notify(user.realm_id, event, sorted(user_ids))
    return submessage_id


async def check_add_submessage(
    tx: Tx, user: User, message_id: int, msg_type: str, content: str, *, now: float
) -> int:
    """``POST /submessage``; the new submessage's id."""
    target = await access_message_for_update(tx, user, message_id)
    await verify_submessage_sender(tx, user, target)
    try:
        data = load_json("content", content)
    except orjson.JSONDecodeError:
        raise JsonableError("Invalid json for submessage") from None
    widget_type = await get_widget_type(tx.conn, target.id)
    is_author = target.sender_id == user.id
    if widget_type == "poll":
        validate_poll_data(data, is_widget_author=is_author)
    elif widget_type == "todo":
        validate_todo_data(data, is_widget_author=is_author)
    return await do_add_submessage(tx, user, target, msg_type, content, now=now)
