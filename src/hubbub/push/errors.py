"""Errors of the push endpoints, with Zulip's codes and wording."""

from __future__ import annotations

from hubbub.errors import ApiError, ErrorCode, JsonableError


class InvalidPushDeviceTokenError(ApiError):
    """The token is not registered for this user on this server (feature level 217)."""

    code = ErrorCode.INVALID_PUSH_DEVICE_TOKEN

    def __init__(self) -> None:
        super().__init__("Device not recognized")


class InvalidRemotePushDeviceTokenError(ApiError):
    """The bouncer does not know the token (feature level 217)."""

    code = ErrorCode.INVALID_REMOTE_PUSH_DEVICE_TOKEN

    def __init__(self) -> None:
        super().__init__("Device not recognized by the push bouncer")


class BouncerRetryLaterError(ApiError):
    """The bouncer could not be reached or failed (5xx): Zulip answers 502."""

    http_status = 502


class BouncerRefusedError(JsonableError):
    """The bouncer rejected our credentials or the request outright."""


class PushNotConfiguredError(JsonableError):
    # Zulip 8.0 silently sends nothing here; hubbub says why nothing will arrive.
    def __init__(self) -> None:
        super().__init__("Push notifications are not configured on this server.")
