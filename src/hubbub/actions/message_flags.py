"""Changing a user's personal message flags (``POST /messages/flags`` and its narrow form).

Behaviour follows Zulip 8.0:
- only ``read``, ``starred`` and ``collapsed`` may change; another API flag is "not
  editable", anything else "invalid";
- a message whose flag already has the wanted value is left alone and not reported;
- a message the user may read without a row (stream history) behaves as ``read`` +
  ``historical``; changing it away from that creates the row (``historical`` set) after
  checking that the user may read it ("Invalid message(s)" otherwise);
- marking unread skips stream messages of streams the user is not subscribed to, so every
  unread stream message is in a subscribed stream; both endpoints list those streams' ids
  in ``ignored_because_not_subscribed_channels`` (feature level 355);
- one ``update_message_flags`` event, for the acting user only, lists the changed ids (a
  change is a set-based statement per 5,000 ids, whatever the number of messages).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from hubbub.db.dialects import (
    for_name,
    ids_argument,
    user_message_settled,
    user_message_tables,
)
from hubbub.errors import JsonableError
from hubbub.models import User
from hubbub.queries.message_fetch import fetch_window, first_unread_anchor
from hubbub.queries.message_flags import (
    DEFAULT_HISTORICAL_FLAGS,
    EDITABLE_FLAGS,
    NON_EDITABLE_FLAGS,
    chunks,
    existing_row_ids,
    readable_history_ids,
    unread_message_details,
    unsubscribed_stream_message_ids,
)
from hubbub.queries.messages import flag_is
from hubbub.queries.narrow import NarrowTerm
from hubbub.queries.narrow_sql import build_narrow_query
from hubbub.transaction import Tx


def check_flag_change(op: str, flag: str) -> int:
    """The bit of an editable ``flag`` for ``op``; Zulip's errors (checked in its order)."""
    bit = EDITABLE_FLAGS.get(flag)
    if bit is None:
        if flag in NON_EDITABLE_FLAGS:
            raise JsonableError(f"Flag not editable: '{flag}'")
        raise JsonableError(f"Invalid flag: '{flag}'")
    if op not in ("add", "remove"):
        raise JsonableError(f"Invalid message flag operation: '{op}'")
    return bit


@dataclass(frozen=True)
class FlagChange:
    # The ids whose flag changed, in the order given.
    changed: list[int]
    # The streams (sorted ids) whose messages were not marked unread because the user is
    # not subscribed to them.
    ignored_stream_ids: list[int]


async def check_update_message_flags(
    tx: Tx, user: User, op: str, flag: str, message_ids: list[int]
) -> FlagChange:
    """Validate, then change."""
    bit = check_flag_change(op, flag)
    return await do_update_message_flags(tx, user, bit, flag, adding=op == "add", ids=message_ids)


async def do_update_message_flags(
    tx: Tx, user: User, bit: int, flag: str, *, adding: bool, ids: list[int]
) -> FlagChange:
    conn = tx.conn
    # A repeated id is one message (Zulip would list it twice).
    wanted = list(dict.fromkeys(ids))
    ignored: set[int] = set()
    if flag == "read" and not adding and wanted:
        skipped = await unsubscribed_stream_message_ids(conn, user.id, wanted)
        wanted = [mid for mid in wanted if mid not in skipped]
        ignored = set(skipped.values())
    target = bit if adding else 0
    changed: set[int] = set()
    for table in user_message_tables(conn):
        statement = _flag_update(conn.dialect.name, table, bit, adding)
        for part in chunks(wanted):
            # One statement per chunk changes exactly the rows that differ and names them.
            params = {"user_id": user.id, "ids": ids_argument(conn, part)}
            changed.update((await conn.execute(statement, params)).scalars())
    if DEFAULT_HISTORICAL_FLAGS & bit != target and wanted:
        have_rows = await existing_row_ids(conn, user.id, wanted)
        missing = [mid for mid in wanted if mid not in have_rows]
        if missing:
            await _create_historical_rows(tx, user, missing, bit, target)
            changed.update(missing)
    result_ids = [mid for mid in wanted if mid in changed]
    await notify_flags_changed(tx, user, flag, adding=adding, message_ids=result_ids)
    return FlagChange(result_ids, sorted(ignored))


@functools.cache
def _flag_update(dialect: str, table: sa.Table, bit: int, adding: bool) -> sa.Update:
    """The UPDATE that sets (or clears) ``bit`` on one user's rows of the messages in
    parameter ``ids`` that lack (or have) it, naming them: built once per database,
    table, flag and direction. Built for every chunk, it and its cache key were about half
    of a flag change's cost on the event loop."""
    new_flags = table.c.flags.op("|" if adding else "&")(
        sa.literal_column(str(bit if adding else ~bit))
    )
    return (
        sa.update(table)
        .where(
            table.c.user_profile_id == sa.bindparam("user_id"),
            for_name(dialect).in_ids(table.c.message_id, "ids"),
            flag_is(bit, not adding, table),
        )
        .values(flags=new_flags)
        .returning(table.c.message_id)
    )


async def _create_historical_rows(
    tx: Tx, user: User, message_ids: list[int], bit: int, target: int
) -> None:
    if len(await readable_history_ids(tx.conn, user, message_ids)) != len(message_ids):
        raise JsonableError("Invalid message(s)")
    flags = (DEFAULT_HISTORICAL_FLAGS & ~bit) | target
    # A row made meanwhile (a reaction, another flag change) keeps its flags plus this one.
    # (None is staged: the caller read that the user has no row for these messages.)
    table = user_message_settled(tx.conn)
    statement = (
        for_name(tx.conn.dialect.name)
        .insert(table)
        .on_conflict_do_update(
            index_elements=[table.c.user_profile_id, table.c.message_id],
            set_={"flags": table.c.flags.op("&")(~bit).op("|")(target)},
        )
    )
    for part in chunks(message_ids):
        await tx.conn.execute(
            statement,
            [{"user_profile_id": user.id, "message_id": mid, "flags": flags} for mid in part],
        )


async def notify_flags_changed(
    tx: Tx, user: User, flag: str, *, adding: bool, message_ids: list[int], everything: bool = False
) -> None:
    """The ``update_message_flags`` event, to the user alone. ``operation`` is the
    pre-feature-level-32 name of ``op`` that Zulip 8.0 still sends; marking unread adds
    ``message_details`` (feature level 121) so clients can rebuild their unread counts."""
    op = "add" if adding else "remove"
    event: dict[str, Any] = {
        "type": "update_message_flags",
        "op": op,
        "operation": op,
        "flag": flag,
        "messages": message_ids,
        # ``all``: every unread message was marked read (the list is then empty).
        "all": everything,
    }
    if flag == "read" and not adding:
        event["message_details"] = await unread_message_details(tx.conn, user.id, message_ids)
    tx.notify(user.realm_id, event, [user.id])


@dataclass(frozen=True)
class NarrowRange:
    include_anchor: bool
    num_before: int
    num_after: int


async def do_update_flags_for_narrow(
    tx: Tx,
    user: User,
    terms: list[NarrowTerm],
    anchor_id: int | None,
    span: NarrowRange,
    op: str,
    flag: str,
    bit: int,
) -> dict[str, Any]:
    """``POST /messages/flags/narrow`` (feature level 155): the window is chosen exactly as
    ``GET /messages`` chooses it, in the same transaction as the change; the response."""
    query = await build_narrow_query(tx.conn, user, terms)
    if anchor_id is None:
        anchor_id = await first_unread_anchor(tx.conn, query)
    window = await fetch_window(
        tx.conn,
        query,
        anchor_id,
        include_anchor=span.include_anchor,
        num_before=span.num_before,
        num_after=span.num_after,
    )
    processed = [message_id for message_id, _ in window.rows]
    # Only messages whose flag differs need the update (history reads as read and
    # historical, as the action treats it).
    differing = [mid for mid, flags in window.rows if bool(flags & bit) != (op == "add")]
    change = await check_update_message_flags(tx, user, op, flag, differing)
    return {
        "processed_count": len(processed),
        "updated_count": len(change.changed),
        "first_processed_id": processed[0] if processed else None,
        "last_processed_id": processed[-1] if processed else None,
        "found_oldest": window.found_oldest,
        "found_newest": window.found_newest,
        "ignored_because_not_subscribed_channels": change.ignored_stream_ids,
    }
