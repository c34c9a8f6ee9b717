"""Adding, changing, removing and reordering a realm's linkifiers, and their events.

Behaviour follows Zulip 8.0:
- ``pattern`` and ``url_template`` are stripped, then checked as Django's ``full_clean``
  checks Zulip's model: blank fields and a malformed template first (per field), then the
  pattern (RE2 syntax, so no pattern can take exponential time), the match between the
  pattern's named groups and the template's variables (feature level 176), and finally
  the (realm, pattern) unique key. The error message is the first problem found; the
  ``errors`` field maps each field name (``__all__`` for the rest) to its messages;
- a template whose literal start names a scheme Zulip never links (``javascript:``,
  ``data:``, ``vbscript:``...) is refused as an invalid template: Zulip stores such a
  template but renders its links as plain text, so refusing it loses nothing; links whose
  scheme comes from the matched text are still checked when rendered;
- every successful change, even one that changes nothing, sends the whole ordered list
  as a ``realm_linkifiers`` event to every active user of the realm.
"""

from __future__ import annotations

import re
from typing import Any

import re2
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from uritemplate import URITemplate

from hubbub.db.tables import realm_linkifier
from hubbub.errors import JsonableError
from hubbub.markdown.sanitize import url_is_safe
from hubbub.queries.linkifiers import (
    access_linkifier,
    linkifiers_for_realm,
    next_linkifier_order,
    pattern_in_use,
)
from hubbub.queries.users import list_active_users
from hubbub.transaction import Tx

# Django's wording for an empty required field, and for Zulip's unique key: the model is
# named "RealmFilter" and has no verbose name, so Django calls it "Realm filter".
BLANK_FIELD = "This field cannot be blank."
DUPLICATE_PATTERN = "Realm filter with this Realm and Pattern already exists."
INVALID_TEMPLATE = "Invalid URL template."

# RFC 6570 section 2.3: a variable name is made of ALPHA / DIGIT / "_" / pct-encoded,
# with single dots between them; a prefix modifier is 1-9999, an explode modifier "*".
_VARCHAR = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARSPEC = re.compile(rf"{_VARCHAR}(?:\.?{_VARCHAR})*(?:\*|:[1-9][0-9]{{0,3}})?")
# Level 2-4 operators; the reserved ones ("=,!@|") make an expression invalid.
_OPERATORS = "+#./;?&"


class LinkifierValidationError(JsonableError):
    """Zulip's ``ValidationFailureError``: the first message, plus every message by field."""

    data_fields = ("errors",)

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(next(iter(errors.values()))[0])
        self.errors = errors


def url_template_is_valid(template: str) -> bool:
    """Whether ``template`` is an RFC 6570 URL template. Literal text is taken as it is
    (Zulip accepts "%%" or "$not_a_url$"); every ``{...}`` must be a well-formed
    expression, and braces may not nest or stand alone."""
    if not url_is_safe(template.split("{", 1)[0]):
        return False
    position = 0
    while True:
        start = template.find("{", position)
        end = template.find("}", position)
        if start == -1:
            return end == -1
        if end == -1 or end < start:
            return False
        expression = template[start + 1 : end]
        if "{" in expression:
            return False
        if expression[:1] and expression[0] in _OPERATORS:
            expression = expression[1:]
        if not all(_VARSPEC.fullmatch(spec) for spec in expression.split(",")):
            return False
        position = end + 1


def compile_pattern(pattern: str) -> Any:
    """The pattern compiled with RE2 (linear-time matching; no backreferences or
    lookarounds), or ``JsonableError`` with RE2's reason in Zulip's wording."""
    options = re2.Options()
    options.log_errors = False  # RE2 would also print the error to stderr
    try:
        return re2.compile(pattern, options=options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else None
        if isinstance(reason, bytes):
            reason = reason.decode(errors="replace")
        if isinstance(reason, str):
            raise JsonableError(f"Bad regular expression: {reason}") from None
        raise JsonableError("Unknown regular expression error") from None


def _pattern_errors(pattern: str, url_template: str, template_valid: bool) -> list[str]:
    """The model-level problems: a bad pattern, or groups and variables that differ."""
    try:
        groups = set(compile_pattern(pattern).groupindex)
    except JsonableError as error:
        return [error.msg]
    if not template_valid:
        return []  # already reported against the url_template field
    variables = set(URITemplate(url_template).variable_names)
    # One name at a time (the smallest), so users fix them one by one, as in Zulip.
    if variables - groups:
        name = min(variables - groups)
        return [f"Group {name!r} in URL template is not present in linkifier pattern."]
    if groups - variables:
        name = min(groups - variables)
        return [f"Group {name!r} in linkifier pattern is not present in URL template."]
    return []


async def check_linkifier_fields(
    conn: AsyncConnection,
    realm_id: int,
    pattern: str,
    url_template: str,
    *,
    except_id: int | None = None,
) -> tuple[str, str]:
    """Validate a linkifier (``except_id``: the one being changed) and return its
    stripped pattern and template, or raise ``LinkifierValidationError``."""
    pattern, url_template = pattern.strip(), url_template.strip()
    errors: dict[str, list[str]] = {}
    template_valid = url_template_is_valid(url_template)
    if not pattern:
        errors["pattern"] = [BLANK_FIELD]
    if not url_template:
        errors["url_template"] = [BLANK_FIELD]
    elif not template_valid:
        errors["url_template"] = [INVALID_TEMPLATE]
    general = _pattern_errors(pattern, url_template, template_valid)
    # Django skips the unique check for a field that already failed.
    if "pattern" not in errors and await pattern_in_use(
        conn, realm_id, pattern, except_id=except_id
    ):
        general.append(DUPLICATE_PATTERN)
    if general:
        errors["__all__"] = general
    if errors:
        raise LinkifierValidationError(errors)
    return pattern, url_template


async def notify_linkifiers(tx: Tx, realm_id: int) -> None:
    linkifiers = await linkifiers_for_realm(tx.conn, realm_id)
    users = await list_active_users(tx.conn, realm_id)
    event = {"type": "realm_linkifiers", "realm_linkifiers": linkifiers}
    tx.notify(realm_id, event, [u.id for u in users])


async def check_add_linkifier(tx: Tx, realm_id: int, pattern: str, url_template: str) -> int:
    """``POST /realm/filters``: the new linkifier applies after the existing ones."""
    pattern, url_template = await check_linkifier_fields(tx.conn, realm_id, pattern, url_template)
    result = await tx.conn.execute(
        sa.insert(realm_linkifier).values(
            realm_id=realm_id,
            pattern=pattern,
            url_template=url_template,
            order=await next_linkifier_order(tx.conn, realm_id),
        )
    )
    await notify_linkifiers(tx, realm_id)
    return int(result.inserted_primary_key[0])  # type: ignore[index]


async def check_update_linkifier(
    tx: Tx, realm_id: int, linkifier_id: int, pattern: str, url_template: str
) -> None:
    """``PATCH /realm/filters/{filter_id}`` (feature level 57); the order is kept."""
    await access_linkifier(tx.conn, realm_id, linkifier_id)
    pattern, url_template = await check_linkifier_fields(
        tx.conn, realm_id, pattern, url_template, except_id=linkifier_id
    )
    await tx.conn.execute(
        sa.update(realm_linkifier)
        .where(realm_linkifier.c.id == linkifier_id)
        .values(pattern=pattern, url_template=url_template)
    )
    await notify_linkifiers(tx, realm_id)


async def check_remove_linkifier(tx: Tx, realm_id: int, linkifier_id: int) -> None:
    """``DELETE /realm/filters/{filter_id}``; the others keep their order."""
    await access_linkifier(tx.conn, realm_id, linkifier_id)
    await tx.conn.execute(sa.delete(realm_linkifier).where(realm_linkifier.c.id == linkifier_id))
    await notify_linkifiers(tx, realm_id)


async def check_reorder_linkifiers(tx: Tx, realm_id: int, ordered_ids: list[int]) -> None:
    """``PATCH /realm/linkifiers`` (feature level 202): ``ordered_ids`` must name every
    linkifier of the realm exactly once. An empty realm with an empty list is a no-op
    without an event, as in Zulip."""
    if len(set(ordered_ids)) < len(ordered_ids):
        raise JsonableError("The ordered list must not contain duplicated linkifiers")
    existing = await linkifiers_for_realm(tx.conn, realm_id)
    if {linkifier["id"] for linkifier in existing} != set(ordered_ids):
        raise JsonableError("The ordered list must enumerate all existing linkifiers exactly once")
    if not existing:
        return
    for position, linkifier_id in enumerate(ordered_ids):
        await tx.conn.execute(
            sa.update(realm_linkifier)
            .where(realm_linkifier.c.id == linkifier_id)
            .values(order=position)
        )
    await notify_linkifiers(tx, realm_id)
