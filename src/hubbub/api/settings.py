"""``PATCH /settings`` (the user's own settings) and ``PATCH /realm/user_settings_defaults``.

Both endpoints take one optional parameter per setting of the catalogue in
``hubbub.user_settings``; ``_setting_parameters`` declares them on the function (as if
written out as keyword-only arguments) so ``@endpoint`` parses, validates and documents
them like any other.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Annotated, Any, TypeVar
from zoneinfo import available_timezones

from hubbub.actions.auth import check_own_password
from hubbub.actions.presence import do_presence_enabled_changed
from hubbub.actions.unique_names import check_unique_full_name
from hubbub.actions.user_settings import (
    do_change_password,
    do_change_user_settings,
    do_set_realm_user_defaults,
)
from hubbub.actions.users import (
    check_full_name,
    check_password_strength,
    do_change_full_name,
    is_valid_email,
)
from hubbub.api.auth import client_address
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import Param
from hubbub.errors import JsonableError, OrganizationAdminRequiredError
from hubbub.models import User
from hubbub.queries.user_settings import get_realm_user_defaults, get_user_settings
from hubbub.queries.users import get_user_by_delivery_email
from hubbub.transaction import Tx
from hubbub.user_settings import (
    LEGACY_PARAMETER_NAMES,
    REALM_DEFAULT_EDITABLE,
    SETTING_TYPES,
    SMALL_POSITIVE_INT_SETTINGS,
    USER_SETTING_NAMES,
    is_valid_batching_period,
    is_valid_language,
    is_valid_notification_sound,
    is_valid_small_positive_int,
)

F = TypeVar("F", bound=Callable[..., Any])


def _setting_parameters(names: Iterable[str]) -> Callable[[F], F]:
    """Add an optional keyword-only parameter per setting to the endpoint's signature."""

    def decorate(func: F) -> F:
        signature = inspect.signature(func)
        params = [p for p in signature.parameters.values() if p.kind != p.VAR_KEYWORD]
        annotations = dict(func.__annotations__)
        for name in names:
            annotation: Any = SETTING_TYPES[name] | None
            if name in LEGACY_PARAMETER_NAMES:
                annotation = Annotated[annotation, Param(aliases=LEGACY_PARAMETER_NAMES[name])]
            annotations[name] = annotation
            params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None))
        func.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        func.__annotations__ = annotations
        return func

    return decorate


def _check_values(values: dict[str, Any]) -> None:
    """The checks a type cannot express, in Zulip's order and wording."""
    language = values.get("default_language")
    if language is not None and not is_valid_language(language):
        raise JsonableError("Invalid default_language")
    sound = values.get("notification_sound")
    if sound is not None and not is_valid_notification_sound(sound):
        raise JsonableError(f"Invalid notification sound '{sound}'")
    period = values.get("email_notifications_batching_period_seconds")
    if period is not None and not is_valid_batching_period(period):
        raise JsonableError(f"Invalid email batching period: {period} seconds")
    timezone = values.get("timezone")
    if timezone is not None and timezone != "" and timezone not in available_timezones():
        raise JsonableError("timezone is not a recognized time zone")
    for name in SMALL_POSITIVE_INT_SETTINGS:
        # Zulip's column would refuse these (a server error there); hubbub says so.
        value = values.get(name)
        if value is not None and not is_valid_small_positive_int(value):
            raise JsonableError(f"Invalid {name}")


def _changed(
    current: dict[str, Any], given: dict[str, Any], names: Iterable[str]
) -> dict[str, Any]:
    return {n: given[n] for n in names if given.get(n) is not None and current[n] != given[n]}


async def _change_password(tx: Tx, req: ApiRequest, old: str | None, new: str) -> None:
    me = req.me
    # Zulip authenticates the old password as a login would: a realm without password
    # logins, or an account without a password, fails the same way.
    if (
        old is None
        or not req.my_realm.password_auth_enabled
        or not await check_own_password(req.services.login_guard, me, old, client_address(req.http))
    ):
        raise JsonableError("Wrong password!")
    try:
        check_password_strength(new)
    except JsonableError:
        raise JsonableError("New password is too weak!") from None
    await do_change_password(tx, me, new)


async def _check_email_change(tx: Tx, req: ApiRequest, email: str) -> None:
    """Zulip starts a confirmation by email; hubbub sends no email, so after Zulip's checks
    the change is refused rather than made unconfirmed."""
    me, realm = req.me, req.my_realm
    new_email = email.strip()
    if new_email == me.delivery_email:
        return
    if realm.setting("email_changes_disabled") and not me.is_realm_admin:
        raise JsonableError("Email address changes are disabled in this organization.")
    if not is_valid_email(new_email):
        raise JsonableError("Invalid address.")
    if await get_user_by_delivery_email(tx.conn, realm.id, new_email) is not None:
        raise JsonableError("Email is already in use.")
    raise JsonableError(
        "Email address changes need a confirmation email, which this server cannot send."
    )


async def _change_full_name(tx: Tx, me: User, realm_name_changes_disabled: bool, raw: str) -> None:
    if raw == me.full_name:
        return
    # Zulip ignores the change silently when names are locked (the UI does not offer it).
    if realm_name_changes_disabled and not me.is_realm_admin:
        return
    name = check_full_name(raw)
    if name != me.full_name:
        await check_unique_full_name(tx.conn, me.realm_id, name, user_id=me.id)
        await do_change_full_name(tx, me, name)


# The official client's ``update_notification_settings`` still uses the
# ``/settings/notifications`` alias (merged into ``/settings`` at feature level 80), as
# old clients use ``/settings/display``.
@endpoint("PATCH", "/settings/display")
@endpoint("PATCH", "/settings/notifications")
@endpoint("PATCH", "/settings")
@_setting_parameters(USER_SETTING_NAMES)
async def update_settings(
    req: ApiRequest,
    *,
    full_name: str | None = None,
    email: str | None = None,
    old_password: str | None = None,
    new_password: str | None = None,
    **settings: Any,
) -> Payload:
    """Update settings"""
    me = req.me
    if me.is_bot:
        raise JsonableError("This endpoint does not accept bot requests.")
    _check_values(settings)
    async with req.services.write() as tx:
        if new_password is not None:
            await _change_password(tx, req, old_password, new_password)
        if email is not None:
            await _check_email_change(tx, req, email)
        if full_name is not None:
            disabled = bool(req.my_realm.setting("name_changes_disabled"))
            await _change_full_name(tx, me, disabled, full_name)
        current = await get_user_settings(tx.conn, me.id)
        changes = _changed(current, settings, USER_SETTING_NAMES)
        await do_change_user_settings(tx, me, changes)
        if "presence_enabled" in changes:
            # As Zulip does after this setting changes: the realm sees the user come online
            # or go offline at once (and, in hubbub, the status's derived ``away``).
            await do_presence_enabled_changed(
                tx,
                req.my_realm,
                me,
                changes["presence_enabled"],
                now=req.services.clock.now(),
                notify_status=True,
            )
    return {}


@endpoint("PATCH", "/realm/user_settings_defaults")
@_setting_parameters(REALM_DEFAULT_EDITABLE)
async def update_realm_user_settings_defaults(req: ApiRequest, **settings: Any) -> Payload:
    """Update realm-level defaults of user settings"""
    if not req.me.is_realm_admin:
        raise OrganizationAdminRequiredError()
    _check_values(settings)
    async with req.services.write() as tx:
        current = await get_realm_user_defaults(tx.conn, req.my_realm.id)
        changes = _changed(current, settings, REALM_DEFAULT_EDITABLE)
        await do_set_realm_user_defaults(tx, req.my_realm.id, changes)
    return {}
