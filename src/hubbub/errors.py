"""Zulip-shaped API errors.

Every error an endpoint can produce is an ``ApiError`` subclass: a class-level ``code``
(Zulip's ``ErrorCode`` name), ``http_status`` and message template, plus the names of extra
data fields that are copied into the JSON body. Code raises them; exactly one handler in
``api/responses.py`` renders them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar


class ErrorCode(StrEnum):
    BAD_REQUEST = "BAD_REQUEST"
    # An upload that is not a usable image (custom emoji).
    BAD_IMAGE = "BAD_IMAGE"
    REQUEST_VARIABLE_MISSING = "REQUEST_VARIABLE_MISSING"
    REQUEST_VARIABLE_INVALID = "REQUEST_VARIABLE_INVALID"
    REQUEST_CONFUSING_VAR = "REQUEST_CONFUSING_VAR"
    UNAUTHORIZED = "UNAUTHORIZED"
    INVALID_API_KEY = "INVALID_API_KEY"
    INVALID_API_KEY_FORMAT = "INVALID_API_KEY_FORMAT"
    USER_DEACTIVATED = "USER_DEACTIVATED"
    REALM_DEACTIVATED = "REALM_DEACTIVATED"
    AUTHENTICATION_FAILED = "AUTHENTICATION_FAILED"
    PASSWORD_AUTH_DISABLED = "PASSWORD_AUTH_DISABLED"
    RATE_LIMIT_HIT = "RATE_LIMIT_HIT"
    CANNOT_DEACTIVATE_LAST_USER = "CANNOT_DEACTIVATE_LAST_USER"
    UNAUTHORIZED_PRINCIPAL = "UNAUTHORIZED_PRINCIPAL"
    NONEXISTENT_SUBDOMAIN = "NONEXISTENT_SUBDOMAIN"
    BAD_EVENT_QUEUE_ID = "BAD_EVENT_QUEUE_ID"
    STREAM_DOES_NOT_EXIST = "STREAM_DOES_NOT_EXIST"
    BAD_NARROW = "BAD_NARROW"
    STREAM_WILDCARD_MENTION_NOT_ALLOWED = "STREAM_WILDCARD_MENTION_NOT_ALLOWED"
    TOPIC_WILDCARD_MENTION_NOT_ALLOWED = "TOPIC_WILDCARD_MENTION_NOT_ALLOWED"
    # Feature level 193 (Zulip 8.0); BAD_REQUEST before.
    REACTION_ALREADY_EXISTS = "REACTION_ALREADY_EXISTS"
    REACTION_DOES_NOT_EXIST = "REACTION_DOES_NOT_EXIST"
    MOVE_MESSAGES_TIME_LIMIT_EXCEEDED = "MOVE_MESSAGES_TIME_LIMIT_EXCEEDED"
    # Feature level 217.
    INVALID_PUSH_DEVICE_TOKEN = "INVALID_PUSH_DEVICE_TOKEN"
    INVALID_REMOTE_PUSH_DEVICE_TOKEN = "INVALID_REMOTE_PUSH_DEVICE_TOKEN"
    # Feature level 298; BAD_REQUEST before (actions/user_group_permissions.py).
    CANNOT_DEACTIVATE_GROUP_IN_USE = "CANNOT_DEACTIVATE_GROUP_IN_USE"
    # Incoming webhooks (integrations/errors.py).
    INVALID_JSON = "INVALID_JSON"
    MISSING_HTTP_EVENT_HEADER = "MISSING_HTTP_EVENT_HEADER"
    UNSUPPORTED_WEBHOOK_EVENT_TYPE = "UNSUPPORTED_WEBHOOK_EVENT_TYPE"
    ANOMALOUS_WEBHOOK_PAYLOAD = "ANOMALOUS_WEBHOOK_PAYLOAD"


class ApiError(Exception):
    """Base of every error rendered as ``{"result": "error", "msg", "code", ...}``."""

    # None for the few generic errors Zulip sends without a code (404, 405, 500).
    code: ClassVar[ErrorCode | None] = ErrorCode.BAD_REQUEST
    http_status: ClassVar[int] = 400
    # Names of instance attributes copied into the response body.
    data_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, msg: str) -> None:
        super().__init__(msg)
        self.msg = msg

    def data(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.data_fields}

    def headers(self) -> dict[str, str]:
        return {}


class JsonableError(ApiError):
    """A plain ``BAD_REQUEST`` with a message: the most common error."""


class MissingArgumentError(ApiError):
    code = ErrorCode.REQUEST_VARIABLE_MISSING
    data_fields = ("var_name",)

    def __init__(self, var_name: str) -> None:
        super().__init__(f"Missing '{var_name}' argument")
        self.var_name = var_name


class ConfusingParamsError(ApiError):
    code = ErrorCode.REQUEST_CONFUSING_VAR
    data_fields = ("var_name1", "var_name2")

    def __init__(self, var_name1: str, var_name2: str) -> None:
        super().__init__(f"Can't decide between '{var_name1}' and '{var_name2}' arguments")
        self.var_name1 = var_name1
        self.var_name2 = var_name2


class UnauthorizedError(ApiError):
    code = ErrorCode.UNAUTHORIZED
    http_status = 401

    def __init__(self, msg: str = "Not logged in: API authentication or user session required"):
        super().__init__(msg)

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": 'Basic realm="zulip"'}


class UserDeactivatedError(ApiError):
    # 401 since Zulip 5.0 (feature level 76); 403 before.
    code = ErrorCode.USER_DEACTIVATED
    http_status = 401

    def __init__(self) -> None:
        super().__init__("Account is deactivated")


class RealmDeactivatedError(ApiError):
    # 401 since Zulip 5.0 (feature level 76); 403 before.
    code = ErrorCode.REALM_DEACTIVATED
    http_status = 401

    def __init__(self) -> None:
        super().__init__("This organization has been deactivated")


class InvalidSubdomainError(ApiError):
    code = ErrorCode.NONEXISTENT_SUBDOMAIN
    http_status = 404

    def __init__(self) -> None:
        super().__init__("Invalid subdomain")


class OrganizationOwnerRequiredError(ApiError):
    code = ErrorCode.UNAUTHORIZED_PRINCIPAL

    def __init__(self) -> None:
        super().__init__("Must be an organization owner")


class OrganizationAdminRequiredError(ApiError):
    code = ErrorCode.UNAUTHORIZED_PRINCIPAL

    def __init__(self) -> None:
        super().__init__("Must be an organization administrator")


class AuthenticationFailedError(ApiError):
    code = ErrorCode.AUTHENTICATION_FAILED
    http_status = 401

    def __init__(self) -> None:
        super().__init__("Your username or password is incorrect")


class PasswordAuthDisabledError(ApiError):
    code = ErrorCode.PASSWORD_AUTH_DISABLED
    http_status = 401

    def __init__(self) -> None:
        super().__init__("Password authentication is disabled in this organization")


class RateLimitedError(ApiError):
    code = ErrorCode.RATE_LIMIT_HIT
    http_status = 429

    def __init__(self, retry_after: float, limit_headers: dict[str, str] | None = None) -> None:
        super().__init__("API usage exceeded rate limit")
        self.retry_after = retry_after
        self.limit_headers = limit_headers or {}

    def data(self) -> dict[str, Any]:
        # The body key has a hyphen, which no attribute name can carry.
        return {"retry-after": self.retry_after}

    def headers(self) -> dict[str, str]:
        return {**self.limit_headers, "Retry-After": str(self.retry_after)}


class CannotDeactivateLastUserError(ApiError):
    code = ErrorCode.CANNOT_DEACTIVATE_LAST_USER
    data_fields = ("is_last_owner", "entity")

    def __init__(self, *, is_last_owner: bool) -> None:
        self.is_last_owner = is_last_owner
        self.entity = "organization owner" if is_last_owner else "user"
        super().__init__(f"Cannot deactivate the only {self.entity}.")


class RequestTooLargeError(ApiError):
    """A request body over the limit (nginx answers Zulip's with its own 413 page)."""

    http_status = 413

    def __init__(self, limit_bytes: int) -> None:
        super().__init__(f"Request body too large (limit: {limit_bytes // (1024 * 1024)} MiB)")


class NotFoundError(ApiError):
    code = None
    http_status = 404

    def __init__(self) -> None:
        super().__init__("Not Found")


class MethodNotAllowedError(ApiError):
    code = None
    http_status = 405
    data_fields = ("allowed_methods",)

    def __init__(self, allowed_methods: list[str]) -> None:
        super().__init__("Method Not Allowed")
        self.allowed_methods = allowed_methods

    def headers(self) -> dict[str, str]:
        return {"Allow": ", ".join(self.allowed_methods)}


class InternalServerError(ApiError):
    code = None
    http_status = 500

    def __init__(self) -> None:
        super().__init__("Internal server error")


class BadEventQueueIdError(ApiError):
    code = ErrorCode.BAD_EVENT_QUEUE_ID
    data_fields = ("queue_id",)

    def __init__(self, queue_id: str) -> None:
        super().__init__(f"Bad event queue ID: {queue_id}")
        self.queue_id = queue_id


class StreamDoesNotExistError(ApiError):
    """A stream named in a request does not exist (or is invisible to the caller)."""

    code = ErrorCode.STREAM_DOES_NOT_EXIST
    data_fields = ("stream",)

    def __init__(self, stream: str) -> None:
        super().__init__(f"Stream '{stream}' does not exist")
        self.stream = stream


class StreamIdDoesNotExistError(ApiError):
    code = ErrorCode.STREAM_DOES_NOT_EXIST
    data_fields = ("stream_id",)

    def __init__(self, stream_id: int) -> None:
        super().__init__(f"Stream with ID '{stream_id}' does not exist")
        self.stream_id = stream_id


class BadNarrowError(ApiError):
    """A narrow term Zulip 8.0 does not understand (its ``BadNarrowOperatorError``)."""

    code = ErrorCode.BAD_NARROW
    data_fields = ("desc",)

    def __init__(self, desc: str) -> None:
        super().__init__(f"Invalid narrow operator: {desc}")
        self.desc = desc


# Both codes are new in Zulip 8.0 (feature level 229); before, the stream one was BAD_REQUEST.
class StreamWildcardMentionNotAllowedError(ApiError):
    code = ErrorCode.STREAM_WILDCARD_MENTION_NOT_ALLOWED

    def __init__(self) -> None:
        super().__init__(
            "You do not have permission to use stream wildcard mentions in this stream."
        )


class TopicWildcardMentionNotAllowedError(ApiError):
    code = ErrorCode.TOPIC_WILDCARD_MENTION_NOT_ALLOWED

    def __init__(self) -> None:
        super().__init__("You do not have permission to use topic wildcard mentions in this topic.")


class ReactionExistsError(ApiError):
    code = ErrorCode.REACTION_ALREADY_EXISTS

    def __init__(self) -> None:
        super().__init__("Reaction already exists.")


class ReactionDoesNotExistError(ApiError):
    code = ErrorCode.REACTION_DOES_NOT_EXIST

    def __init__(self) -> None:
        super().__init__("Reaction doesn't exist.")


class MoveMessagesTimeLimitError(ApiError):
    """A ``change_all`` move that reaches past the mover's time limit (feature level 172):
    the response says how much of the topic they may move."""

    code = ErrorCode.MOVE_MESSAGES_TIME_LIMIT_EXCEEDED
    data_fields = (
        "first_message_id_allowed_to_move",
        "total_messages_in_topic",
        "total_messages_allowed_to_move",
    )

    def __init__(self, first_allowed: int | None, total: int, allowed: int) -> None:
        super().__init__(
            f"You only have permission to move the {allowed}/{total}"
            " most recent messages in this topic."
        )
        self.first_message_id_allowed_to_move = first_allowed
        self.total_messages_in_topic = total
        self.total_messages_allowed_to_move = allowed
