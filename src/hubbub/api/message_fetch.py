"""``GET /messages`` (a window of a narrow) and ``GET /messages/matches_narrow``."""

from __future__ import annotations

from typing import Annotated, Any

from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import Param
from hubbub.errors import ApiError, JsonableError
from hubbub.queries.message_fetch import (
    MAX_MESSAGES_PER_FETCH,
    fetch_window,
    first_unread_anchor,
    matching_by_id,
    message_objects,
    narrow_matches,
    parse_anchor,
)
from hubbub.queries.narrow import parse_narrow
from hubbub.queries.narrow_sql import build_narrow_query


class IncompatibleParametersError(ApiError):
    """Parameters that cannot be given together (Zulip's ``IncompatibleParametersError``:
    ``BAD_REQUEST`` naming them all in ``parameters``)."""

    data_fields = ("parameters",)

    def __init__(self, parameters: list[str]) -> None:
        self.parameters = ", ".join(parameters)
        super().__init__(f"Unsupported parameter combination: {self.parameters}")


# What ``message_ids`` (feature level 300) cannot be combined with, as Zulip names them.
_WINDOW_PARAMETERS = [
    "num_before",
    "num_after",
    "anchor",
    "message_ids",
    "include_anchor",
    "use_first_unread_anchor",
]


def _non_negative(name: str, value: int) -> int:
    if value < 0:
        raise JsonableError(f"Bad value for '{name}': {value}")
    return value


@endpoint("GET", "/messages", reads=True)
async def get_messages(
    req: ApiRequest,
    *,
    anchor: Annotated[str | None, Param(json=False)] = None,
    include_anchor: bool = True,
    num_before: int = 0,
    num_after: int = 0,
    narrow: list[Any] | None = None,
    client_gravatar: bool = True,
    apply_markdown: bool = True,
    use_first_unread_anchor: bool = False,
    allow_empty_topic_name: bool = False,
    message_ids: list[int] | None = None,
) -> Payload:
    """Get messages"""
    # ``num_before`` and ``num_after`` default to 0 since feature level 300, when
    # ``message_ids`` became the other way to say which messages to fetch.
    _non_negative("num_before", num_before)
    _non_negative("num_after", num_after)
    if message_ids is not None:
        # Exactly these messages, as far as the caller may read them and they match the
        # narrow, instead of a window around an anchor. A zero count is no window.
        if num_before or num_after or anchor is not None or use_first_unread_anchor:
            raise IncompatibleParametersError(_WINDOW_PARAMETERS)
        if len(message_ids) > MAX_MESSAGES_PER_FETCH:
            raise JsonableError(f"Too many messages requested (maximum {MAX_MESSAGES_PER_FETCH}).")
        return await _get_messages_by_id(
            req,
            message_ids,
            narrow,
            apply_markdown=apply_markdown,
            client_gravatar=client_gravatar,
            allow_empty_topic_name=allow_empty_topic_name,
        )
    anchor_id = parse_anchor(anchor, use_first_unread_anchor)
    if num_before + num_after > MAX_MESSAGES_PER_FETCH:
        raise JsonableError(f"Too many messages requested (maximum {MAX_MESSAGES_PER_FETCH}).")
    if num_before > 0 and num_after > 0 and not include_anchor:
        raise JsonableError("The anchor can only be excluded at an end of the range")
    terms = parse_narrow(narrow)
    conn = req.read_conn
    query = await build_narrow_query(conn, req.me, terms)
    if anchor_id is None:
        anchor_id = await first_unread_anchor(conn, query)
    window = await fetch_window(
        conn,
        query,
        anchor_id,
        include_anchor=include_anchor,
        num_before=num_before,
        num_after=num_after,
    )
    messages = await message_objects(
        conn,
        req.me,
        query,
        window.rows,
        apply_markdown=apply_markdown,
        client_gravatar=client_gravatar,
        allow_empty_topic_name=allow_empty_topic_name,
        realm_str=req.my_realm.string_id,
        people=req.services.people,
    )
    return {
        "anchor": anchor_id,
        "found_anchor": window.found_anchor,
        "found_oldest": window.found_oldest,
        "found_newest": window.found_newest,
        # Zulip limits history only on plans with a message limit; hubbub has none.
        "history_limited": False,
        "messages": messages,
    }


async def _get_messages_by_id(
    req: ApiRequest,
    message_ids: list[int],
    narrow: list[Any] | None,
    *,
    apply_markdown: bool,
    client_gravatar: bool,
    allow_empty_topic_name: bool,
) -> Payload:
    terms = parse_narrow(narrow)
    conn = req.read_conn
    # Readable history counts as it does for GET /messages/{id}.
    query = await build_narrow_query(conn, req.me, terms, include_history=True)
    messages = await message_objects(
        conn,
        req.me,
        query,
        await matching_by_id(conn, query, message_ids),
        apply_markdown=apply_markdown,
        client_gravatar=client_gravatar,
        allow_empty_topic_name=allow_empty_topic_name,
        realm_str=req.my_realm.string_id,
        people=req.services.people,
    )
    # Zulip sends the window's flags too, all false: there is no window.
    return {
        "found_anchor": False,
        "found_oldest": False,
        "found_newest": False,
        "history_limited": False,
        "messages": messages,
    }


@endpoint("GET", "/messages/matches_narrow", reads=True)
async def messages_match_narrow(
    req: ApiRequest, *, msg_ids: list[int], narrow: list[Any]
) -> Payload:
    """Check if messages match a narrow"""
    terms = parse_narrow(narrow)
    conn = req.read_conn
    # As Zulip: only messages the user received (has a row for), never stream history.
    query = await build_narrow_query(conn, req.me, terms, include_history=False)
    found = await narrow_matches(conn, query, msg_ids)
    return {"messages": found}
