"""``/realm/playgrounds``: adding and removing a realm's code playgrounds.

Only administrators may change them; clients read them from ``/register``
(``realm_playgrounds``), as Zulip has no endpoint that lists them. The legacy
``url_prefix`` parameter (before feature level 196) is not accepted: Zulip 8.0 and later
only take ``url_template``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

from hubbub.actions.playgrounds import check_add_playground, check_remove_playground
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import PathInt
from hubbub.errors import OrganizationAdminRequiredError
from hubbub.models import User

# Zulip's RealmPlayground.MAX_PYGMENTS_LANGUAGE_LENGTH, checked before stripping.
MAX_PYGMENTS_LANGUAGE_LENGTH = 40
# The column's width; Zulip's name is unbounded text, which no client needs.
MAX_PLAYGROUND_NAME_LENGTH = 60

PlaygroundName = Annotated[str, StringConstraints(max_length=MAX_PLAYGROUND_NAME_LENGTH)]
PygmentsLanguage = Annotated[str, StringConstraints(max_length=MAX_PYGMENTS_LANGUAGE_LENGTH)]


def _require_admin(user: User) -> None:
    if not user.is_realm_admin:
        raise OrganizationAdminRequiredError()


@endpoint("POST", "/realm/playgrounds")
async def add_playground(
    req: ApiRequest,
    *,
    name: PlaygroundName,
    url_template: str,
    pygments_language: PygmentsLanguage,
) -> Payload:
    """Add a code playground"""
    _require_admin(req.me)
    async with req.services.write() as tx:
        playground_id = await check_add_playground(
            tx,
            req.me.realm_id,
            name=name,
            pygments_language=pygments_language,
            url_template=url_template,
        )
    return {"id": playground_id}


@endpoint("DELETE", "/realm/playgrounds/{playground_id:int}")
async def remove_playground(req: ApiRequest, *, playground_id: PathInt) -> Payload:
    """Remove a code playground"""
    _require_admin(req.me)
    async with req.services.write() as tx:
        await check_remove_playground(tx, req.me.realm_id, playground_id)
    return {}
