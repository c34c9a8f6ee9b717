"""Adding and removing a realm's code playgrounds, and their events.

Behaviour follows Zulip 10.2:
- ``pygments_language`` must consist of letters, digits, spaces and ``_+,-./#`` (checked
  before anything else, without the ``errors`` field); all three fields are then
  stripped and checked as Django's ``full_clean`` checks Zulip's model: blank fields and
  a malformed URL template (per field), then the template's variables, which must be
  exactly one, ``code`` (feature level 196), and the (realm, language, name) unique key.
  The error message is the first problem found; ``errors`` maps each field name
  (``__all__`` for the rest) to its messages;
- every change sends the whole list as a ``realm_playgrounds`` event to every active
  user of the realm.
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from uritemplate import URITemplate

# Zulip's playgrounds share the linkifiers' template validation and its error shape.
from hubbub.actions.linkifiers import (
    BLANK_FIELD,
    INVALID_TEMPLATE,
    LinkifierValidationError,
    url_template_is_valid,
)
from hubbub.db.tables import realm_playground
from hubbub.errors import JsonableError
from hubbub.queries.playgrounds import access_playground, playground_in_use, playgrounds_for_realm
from hubbub.queries.users import active_user_ids
from hubbub.transaction import Tx

# Zulip's character class is written with the range "+-.", which takes in the comma;
# "^...$" also lets one trailing newline through, which stripping then removes.
_PYGMENTS_LANGUAGE = re.compile(r"^[ a-zA-Z0-9_+,\-./#]*$")
INVALID_LANGUAGE = "Invalid characters in pygments language"
MISSING_CODE = 'Missing the required variable "code" in the URL template'
ONLY_CODE = '"code" should be the only variable present in the URL template'
# Django's wording for Zulip's unique key on RealmPlayground (realm, pygments_language, name).
DUPLICATE_PLAYGROUND = (
    "Realm playground with this Realm, Pygments language and Name already exists."
)


def check_pygments_language(pygments_language: str) -> None:
    """Any name of a language, even one Pygments does not know, in the characters a code
    block's language may have."""
    if not _PYGMENTS_LANGUAGE.match(pygments_language):
        raise JsonableError(INVALID_LANGUAGE)


def _template_errors(url_template: str) -> list[str]:
    """The model-level problems of a well-formed template: its variables must be
    exactly ``{"code"}``."""
    variables = set(URITemplate(url_template).variable_names)
    if "code" not in variables:
        return [MISSING_CODE]
    if len(variables) != 1:
        return [ONLY_CODE]
    return []


async def check_playground_fields(
    tx: Tx, realm_id: int, name: str, pygments_language: str, url_template: str
) -> tuple[str, str, str]:
    """Validate a new playground and return its stripped name, language and template, or
    raise ``JsonableError`` (``LinkifierValidationError`` for the model's checks)."""
    check_pygments_language(pygments_language)
    for field, value in (("name", name), ("url_template", url_template)):
        # PostgreSQL cannot store NUL in text; SQLite would. Refuse it on both.
        if "\x00" in value:
            raise JsonableError(f"{field} must not contain null bytes")
    name, pygments_language, url_template = (
        name.strip(),
        pygments_language.strip(),
        url_template.strip(),
    )
    # Django reports the fields in the model's order: url_template, name, language.
    errors: dict[str, list[str]] = {}
    template_valid = url_template_is_valid(url_template)
    if not url_template:
        errors["url_template"] = [BLANK_FIELD]
    elif not template_valid:
        errors["url_template"] = [INVALID_TEMPLATE]
    if not name:
        errors["name"] = [BLANK_FIELD]
    if not pygments_language:
        errors["pygments_language"] = [BLANK_FIELD]
    general = _template_errors(url_template) if template_valid else []
    # Django skips the unique check when one of its fields already failed.
    if (
        "name" not in errors
        and "pygments_language" not in errors
        and await playground_in_use(tx.conn, realm_id, pygments_language, name)
    ):
        general.append(DUPLICATE_PLAYGROUND)
    if general:
        errors["__all__"] = general
    if errors:
        raise LinkifierValidationError(errors)
    return name, pygments_language, url_template


async def notify_playgrounds(tx: Tx, realm_id: int) -> None:
    playgrounds = await playgrounds_for_realm(tx.conn, realm_id)
    event = {"type": "realm_playgrounds", "realm_playgrounds": playgrounds}
    tx.notify(realm_id, event, await active_user_ids(tx.conn, realm_id))


async def check_add_playground(
    tx: Tx, realm_id: int, *, name: str, pygments_language: str, url_template: str
) -> int:
    """``POST /realm/playgrounds``: the new playground's id."""
    name, pygments_language, url_template = await check_playground_fields(
        tx, realm_id, name, pygments_language, url_template
    )
    result = await tx.conn.execute(
        sa.insert(realm_playground).values(
            realm_id=realm_id,
            name=name,
            pygments_language=pygments_language,
            url_template=url_template,
        )
    )
    await notify_playgrounds(tx, realm_id)
    return int(result.inserted_primary_key[0])  # type: ignore[index]


async def check_remove_playground(tx: Tx, realm_id: int, playground_id: int) -> None:
    """``DELETE /realm/playgrounds/{playground_id}``."""
    await access_playground(tx.conn, realm_id, playground_id)
    await tx.conn.execute(sa.delete(realm_playground).where(realm_playground.c.id == playground_id))
    await notify_playgrounds(tx, realm_id)
