"""Custom profile fields: administrators define them (``/realm/profile_fields``), users fill
them in (``/users/me/profile_data``, or an administrator through ``PATCH /users/{id}``).

Behaviour and error texts follow Zulip 10.2. Every change of a field sends the whole list
(``custom_profile_fields``) to the realm's active users; every change of a value sends a
``realm_user`` update with ``custom_profile_field``. Deleting a field drops its values
without per-user events, as Zulip does: clients prune ``profile_data`` when the field
leaves the list. A field may be ``required`` (feature level 244; a hint for clients, which
the server does not enforce) and not ``editable_by_user`` (feature level 296: then only
administrators change anyone's value of it).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.user_events import notify_user_updated
from hubbub.db.tables import custom_profile_field, custom_profile_field_value, user_profile
from hubbub.errors import JsonableError
from hubbub.models import User
from hubbub.queries.profile_fields import (
    DEFAULT_EXTERNAL_ACCOUNTS,
    MAX_HINT_LENGTH,
    MAX_NAME_LENGTH,
    MAX_SUMMARY_FIELDS,
    TYPES_WITH_FIELD_DATA,
    FieldType,
    access_field,
    count_summary_fields,
    field_name_taken,
    list_field_rows,
    list_fields,
)
from hubbub.queries.users import active_user_ids, get_user_by_id
from hubbub.rendering import render_realm_text
from hubbub.text_checks import check_printable
from hubbub.transaction import Tx

NOT_EDITABLE = "You are not allowed to change this field. Contact an administrator to update it."
MAX_SHORT_TEXT = 50
MAX_LONG_TEXT = 500
# Field types whose values are rendered to HTML (``rendered_value``).
RENDERED_TYPES = (FieldType.SHORT_TEXT, FieldType.LONG_TEXT)
URL_SCHEMES = ("http", "https", "ftp", "ftps")  # Django's URLValidator, which Zulip uses


# --- Field definitions -------------------------------------------------------------------


def _check_capped(var_name: str, value: Any, limit: int) -> str:
    if not isinstance(value, str):
        raise JsonableError(f"{var_name} is not a string")
    if len(value) > limit:
        raise JsonableError(f"{var_name} is too long (limit: {limit} characters)")
    return value


def _check_required(var_name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise JsonableError(f"{var_name} is not a string")
    if not value.strip():
        raise JsonableError(f"{var_name} cannot be blank.")
    return value


def _is_url(text: str) -> bool:
    parsed = urlparse(text)
    return (
        parsed.scheme in URL_SCHEMES and bool(parsed.netloc) and not any(c.isspace() for c in text)
    )


Check = Callable[[str, Any], object]


def _check_dict_only(
    var_name: str, value: Any, required: dict[str, Check], optional: dict[str, Check] | None = None
) -> dict[str, Any]:
    """Zulip's ``check_dict_only`` wording and order: each required key (missing, then
    its value), then the optional ones present, then unknown keys."""
    optional = optional or {}
    if not isinstance(value, dict):
        raise JsonableError(f"{var_name} is not a dict")
    for key, check in required.items():
        if key not in value:
            raise JsonableError(f"{key} key is missing from {var_name}")
        check(f'{var_name}["{key}"]', value[key])
    for key, check in optional.items():
        if key in value:
            check(f'{var_name}["{key}"]', value[key])
    extra = [k for k in value if k not in required and k not in optional]
    if extra:
        raise JsonableError(f"Unexpected arguments: {', '.join(extra)}")
    return value


def _check_string(var_name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise JsonableError(f"{var_name} is not a string")
    return value


def _check_url_pattern(var_name: str, value: Any) -> str:
    pattern = _check_string(var_name, value)
    if pattern.count("%(username)s") != 1:
        raise JsonableError("URL pattern must contain '%(username)s'.")
    if not _is_url(pattern.replace("%(username)s", "username")):
        raise JsonableError(f"{var_name} is not a URL")
    return pattern


def check_field_data_shape(field_data: dict[str, Any]) -> None:
    """Any field's ``field_data``: a dict whose values are strings or dicts of strings."""
    for value in field_data.values():
        if isinstance(value, str):
            continue
        if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
            continue
        raise JsonableError("field_data contains a value that is not an allowed_type")


def _check_select_data(field_data: dict[str, Any]) -> None:
    if len(field_data) < 1:
        raise JsonableError("Field must have at least one choice.")
    texts = set()
    for key, choice in field_data.items():
        if not key.strip():
            raise JsonableError("'value' cannot be blank.")
        _check_dict_only("field_data", choice, {"text": _check_required, "order": _check_required})
        texts.add(choice["text"])
    if len(texts) != len(field_data):
        raise JsonableError("Field must not have duplicate choices.")


def _check_external_account_data(field_data: dict[str, Any]) -> None:
    _check_dict_only(
        "field_data",
        field_data,
        {"subtype": _check_required},
        {"url_pattern": _check_url_pattern},
    )
    subtype = field_data["subtype"]
    if subtype not in DEFAULT_EXTERNAL_ACCOUNTS:
        if subtype != "custom":
            raise JsonableError("Invalid external account type")
        if "url_pattern" not in field_data:
            raise JsonableError("Custom external account must define URL pattern")


def _is_default_external(field_type: int, field_data: dict[str, Any]) -> bool:
    return field_type == FieldType.EXTERNAL_ACCOUNT and field_data.get("subtype") != "custom"


def _check_definition(
    name: str, hint: str, field_type: int, field_data: dict[str, Any], in_summary: bool
) -> None:
    """Zulip's order of checks: field data, then label and hint (not for a default
    external account, whose label comes from the catalogue), then the type."""
    if field_type == FieldType.SELECT:
        _check_select_data(field_data)
    elif field_type == FieldType.EXTERNAL_ACCOUNT:
        _check_external_account_data(field_data)
    if not _is_default_external(field_type, field_data):
        if not name.strip():
            raise JsonableError("Label cannot be blank.")
        _check_capped("hint", hint, MAX_HINT_LENGTH)
        _check_capped("name", name, MAX_NAME_LENGTH)
        # Shown on every profile: no escape sequences.
        check_printable(name, "field name")
        check_printable(hint, "field hint")
    if field_type not in list(FieldType):
        raise JsonableError("Invalid field type.")
    if in_summary and field_type in (FieldType.LONG_TEXT, FieldType.USER):
        raise JsonableError("Field type not supported for display in profile summary.")


async def _check_summary_limit(tx: Tx, realm_id: int, exclude_id: int | None = None) -> None:
    if await count_summary_fields(tx.conn, realm_id, exclude_id=exclude_id) >= MAX_SUMMARY_FIELDS:
        raise JsonableError(
            f"Only {MAX_SUMMARY_FIELDS} custom profile fields can be displayed in the profile"
            " summary."
        )


async def notify_fields(tx: Tx, realm_id: int) -> None:
    """The whole list, in order, to every active user of the realm."""
    fields = await list_fields(tx.conn, realm_id)
    recipients = await active_user_ids(tx.conn, realm_id)
    tx.notify(realm_id, {"type": "custom_profile_fields", "fields": fields}, recipients)


async def check_create_field(
    tx: Tx,
    realm_id: int,
    *,
    name: str,
    hint: str,
    field_type: int,
    field_data: dict[str, Any],
    display_in_profile_summary: bool,
    required: bool = False,
    editable_by_user: bool = True,
) -> int:
    """``POST /realm/profile_fields``; returns the new field's id."""
    name = name.strip()
    check_field_data_shape(field_data)
    if display_in_profile_summary:
        await _check_summary_limit(tx, realm_id)
    _check_definition(name, hint, field_type, field_data, display_in_profile_summary)
    if _is_default_external(field_type, field_data):
        account = DEFAULT_EXTERNAL_ACCOUNTS[field_data["subtype"]]
        name, hint = account["name"], account["hint"]
        field_data = {"subtype": field_data["subtype"]}
    if await field_name_taken(tx.conn, realm_id, name):
        raise JsonableError("A field with that label already exists.")
    stored_data = orjson.dumps(field_data).decode() if field_type in TYPES_WITH_FIELD_DATA else ""
    table = custom_profile_field
    result = await tx.conn.execute(
        sa.insert(table).values(
            realm_id=realm_id,
            name=name,
            hint=hint,
            field_type=field_type,
            field_data=stored_data,
            order=0,
            display_in_profile_summary=display_in_profile_summary,
            required=required,
            editable_by_user=editable_by_user,
        )
    )
    field_id = int(result.inserted_primary_key[0])  # type: ignore[index]
    # A new field goes last: Zulip sets its order to its id.
    await tx.conn.execute(sa.update(table).where(table.c.id == field_id).values(order=field_id))
    await notify_fields(tx, realm_id)
    return field_id


async def check_update_field(
    tx: Tx,
    realm_id: int,
    field_id: int,
    *,
    name: str | None,
    hint: str | None,
    field_data: dict[str, Any] | None,
    display_in_profile_summary: bool | None,
    required: bool | None = None,
    editable_by_user: bool | None = None,
) -> None:
    """``PATCH /realm/profile_fields/{field_id}``: what is given changes; the type never.
    ``required`` and ``editable_by_user`` may change on any field, a default external
    account's too, as in Zulip."""
    if name is not None:
        name = name.strip()
    if field_data is not None:
        check_field_data_shape(field_data)
    field = await access_field(tx.conn, realm_id, field_id)
    if display_in_profile_summary:
        await _check_summary_limit(tx, realm_id, exclude_id=field_id)
    old_data: dict[str, Any] = orjson.loads(field.field_data) if field.field_data else {}
    if _is_default_external(field.field_type, old_data) and (
        (name is not None and name != field.name)
        or (hint is not None and hint != field.hint)
        or (field_data is not None and field_data != old_data)
    ):
        raise JsonableError("Default custom field cannot be updated.")
    _check_definition(
        field.name if name is None else name,
        field.hint if hint is None else hint,
        field.field_type,
        old_data if field_data is None else field_data,
        field.display_in_profile_summary
        if display_in_profile_summary is None
        else display_in_profile_summary,
    )
    if name is not None and await field_name_taken(tx.conn, realm_id, name, exclude_id=field_id):
        raise JsonableError("A field with that label already exists.")
    changes: dict[str, Any] = {}
    if name is not None:
        changes["name"] = name
    if hint is not None:
        changes["hint"] = hint
    if display_in_profile_summary is not None:
        changes["display_in_profile_summary"] = display_in_profile_summary
    if required is not None:
        changes["required"] = required
    if editable_by_user is not None:
        changes["editable_by_user"] = editable_by_user
    if field_data is not None and field.field_type in TYPES_WITH_FIELD_DATA:
        changes["field_data"] = orjson.dumps(field_data).decode()
        if field.field_type == FieldType.SELECT:
            await _drop_removed_choices(tx, field, set(old_data) - set(field_data))
    if changes:
        table = custom_profile_field
        await tx.conn.execute(sa.update(table).where(table.c.id == field_id).values(**changes))
    await notify_fields(tx, realm_id)


async def _drop_removed_choices(tx: Tx, field: Any, removed: set[str]) -> None:
    """Values that name a removed choice are cleared, each with its ``realm_user`` event."""
    if not removed:
        return
    table = custom_profile_field_value
    user_ids = list(
        (
            await tx.conn.execute(
                sa.select(table.c.user_profile_id)
                .where(table.c.field_id == field.id, table.c.value.in_(sorted(removed)))
                .order_by(table.c.user_profile_id)
            )
        ).scalars()
    )
    for user_id in user_ids:
        user = await get_user_by_id(tx.conn, field.realm_id, user_id)
        if user is not None:
            await do_set_profile_value(tx, user, field.id, None, None)


async def do_delete_field(tx: Tx, realm_id: int, field_id: int) -> None:
    """``DELETE /realm/profile_fields/{field_id}``: the field and every value of it."""
    await access_field(tx.conn, realm_id, field_id)
    value = custom_profile_field_value
    await tx.conn.execute(sa.delete(value).where(value.c.field_id == field_id))
    await tx.conn.execute(
        sa.delete(custom_profile_field).where(custom_profile_field.c.id == field_id)
    )
    await notify_fields(tx, realm_id)


async def check_reorder_fields(tx: Tx, realm_id: int, order: list[int]) -> None:
    """``PATCH /realm/profile_fields``: every field must be listed; as in Zulip, ids of no
    field are ignored and a field's new ``order`` is its (last) index in the list."""
    position = {field_id: index for index, field_id in enumerate(order)}
    rows = await list_field_rows(tx.conn, realm_id)
    if any(row.id not in position for row in rows):
        raise JsonableError("Invalid order mapping.")
    table = custom_profile_field
    for row in rows:
        await tx.conn.execute(
            sa.update(table).where(table.c.id == row.id).values(order=position[row.id])
        )
    await notify_fields(tx, realm_id)


# --- Users' values -----------------------------------------------------------------------


def _check_entry_id(var_name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise JsonableError(f"{var_name} is not an integer")
    return value


def _check_entry_value(var_name: str, value: Any) -> object:
    if isinstance(value, str) or (
        isinstance(value, list)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        return value
    raise JsonableError(f"{var_name} is not an allowed_type")


def _check_entry_value_or_null(var_name: str, value: Any) -> object:
    return None if value is None else _check_entry_value(var_name, value)


def parse_profile_data(
    var_name: str, entries: list[Any], *, allow_null: bool
) -> list[tuple[int, Any]]:
    """``[{"id": int, "value": str | [int]}]`` with Zulip's ``check_dict_only`` wording;
    ``allow_null`` for ``PATCH /users/{id}``, where a null value clears the field."""
    parsed = []
    for index, entry in enumerate(entries):
        name = f"{var_name}[{index}]"
        if not isinstance(entry, dict):
            raise JsonableError(f"{name} is not a dict")
        _check_dict_only(
            name,
            entry,
            {
                "id": _check_entry_id,
                "value": _check_entry_value_or_null if allow_null else _check_entry_value,
            },
        )
        field_id, value = entry["id"], entry["value"]
        parsed.append((field_id, value))
    return parsed


async def _check_user_ids(conn: AsyncConnection, user: User, value: Any) -> str:
    if not isinstance(value, list):
        raise JsonableError("User IDs is not a list")
    for index, item in enumerate(value):
        if not isinstance(item, int) or isinstance(item, bool):
            raise JsonableError(f"User IDs[{index}] is not an integer")
    rows = {
        row.id: row
        for row in await conn.execute(
            sa.select(user_profile.c.id, user_profile.c.is_active, user_profile.c.is_bot).where(
                user_profile.c.id.in_(value), user_profile.c.realm_id == user.realm_id
            )
        )
    }
    for user_id in value:
        row = rows.get(user_id)
        if row is None:
            raise JsonableError(f"Invalid user ID: {user_id}")
        if not row.is_active:
            raise JsonableError(f"User with ID {user_id} is deactivated")
        if row.is_bot:
            raise JsonableError(f"User with ID {user_id} is a bot")
    return orjson.dumps(value).decode()


async def _check_value(
    conn: AsyncConnection, user: User, field: Any, value: Any, *, realm_url: str = ""
) -> tuple[str, str | None]:
    """(stored value, rendered value) for one field, or raise Zulip's error, which names
    the field by its label. Text values render as Markdown in the user's realm, as
    channel descriptions do."""
    name = field.name
    kind = field.field_type
    if kind in (
        FieldType.LONG_TEXT,
        FieldType.SHORT_TEXT,
        FieldType.PRONOUNS,
        FieldType.EXTERNAL_ACCOUNT,
    ):
        limit = MAX_LONG_TEXT if kind == FieldType.LONG_TEXT else MAX_SHORT_TEXT
        text = _check_capped(name, value, limit)
        if kind not in RENDERED_TYPES:
            return text, None
        return text, await render_realm_text(conn, user.realm_id, text, realm_url=realm_url)
    if kind == FieldType.SELECT:
        if not isinstance(value, str):
            raise JsonableError(f"{name} is not a string")
        if value not in orjson.loads(field.field_data or "{}"):
            raise JsonableError(f"'{value}' is not a valid choice for '{name}'.")
        return value, None
    if kind == FieldType.DATE:
        if not isinstance(value, str):
            raise JsonableError(f"{name} is not a string")
        try:
            valid = datetime.strptime(value, "%Y-%m-%d").strftime("%Y-%m-%d") == value
        except ValueError:
            valid = False
        if not valid:
            raise JsonableError(f"{name} is not a date")
        return value, None
    if kind == FieldType.URL:
        if not isinstance(value, str):
            raise JsonableError(f"{name} is not a string")
        if not _is_url(value):
            raise JsonableError(f"{name} is not a URL")
        return value, None
    if kind == FieldType.USER:
        return await _check_user_ids(conn, user, value), None
    raise JsonableError(f"Invalid field type for {name}")


def _check_may_edit(acting: User, field: Any) -> None:
    """Feature level 296: only administrators change values of a field users may not edit
    (their own, or, for a bot's owner, the bot's)."""
    if not acting.is_realm_admin and not field.editable_by_user:
        raise JsonableError(NOT_EDITABLE)


async def check_update_profile_data(
    tx: Tx,
    user: User,
    profile_data: list[Any],
    *,
    acting_user: User,
    var_name: str = "profile_data",
    realm_url: str = "",
) -> None:
    """Set ``user``'s values as ``acting_user`` asks; all entries are checked before
    anything is written.

    ``PATCH /users/{id}`` (``var_name`` "profile_data"): an empty or null value clears
    the field, as in Zulip. ``PATCH /users/me/profile_data`` ("data"): values are stored
    as given, as Zulip does; clearing there is ``DELETE /users/me/profile_data``.
    ``realm_url`` makes links into the realm in rendered values relative."""
    clear_empty = var_name == "profile_data"
    entries = parse_profile_data(var_name, profile_data, allow_null=clear_empty)
    fields = {row.id: row for row in await list_field_rows(tx.conn, user.realm_id)}
    writes: list[tuple[int, str | None, str | None]] = []
    for field_id, value in entries:
        field = fields.get(field_id)
        if field is None:
            raise JsonableError(f"Field id {field_id} not found.")
        _check_may_edit(acting_user, field)
        if clear_empty and not value:
            writes.append((field_id, None, None))
        else:
            checked = await _check_value(tx.conn, user, field, value, realm_url=realm_url)
            writes.append((field_id, *checked))
    for field_id, new_value, new_rendered in writes:
        await do_set_profile_value(tx, user, field_id, new_value, new_rendered)


async def check_remove_profile_data(tx: Tx, user: User, field_ids: list[int]) -> None:
    """``DELETE /users/me/profile_data``: every id must be a field of the realm the user
    may edit; a field without a value is skipped silently."""
    for field_id in field_ids:
        _check_may_edit(user, await access_field(tx.conn, user.realm_id, field_id))
    for field_id in field_ids:
        await do_set_profile_value(tx, user, field_id, None, None)


async def do_set_profile_value(
    tx: Tx, user: User, field_id: int, value: str | None, rendered: str | None
) -> None:
    """Set (or, with ``None``, clear) one value; a ``realm_user`` update tells everyone.
    Nothing happens, and nothing is sent, when the value does not change."""
    table = custom_profile_field_value
    where = (table.c.user_profile_id == user.id, table.c.field_id == field_id)
    current = (await tx.conn.execute(sa.select(table.c.value).where(*where))).first()
    if (current[0] if current else None) == value:
        return
    if current is not None:
        await tx.conn.execute(sa.delete(table).where(*where))
    if value is not None:
        await tx.conn.execute(
            sa.insert(table).values(
                user_profile_id=user.id, field_id=field_id, value=value, rendered_value=rendered
            )
        )
    change: dict[str, Any] = {"id": field_id, "value": value}
    if rendered is not None:
        change["rendered_value"] = rendered
    await notify_user_updated(tx, user, custom_profile_field=change)
