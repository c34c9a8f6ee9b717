"""The errors of incoming webhooks, with Zulip 10.2's codes, texts and data fields."""

from __future__ import annotations

from hubbub.errors import ApiError, ErrorCode

# Named in an error before the integration is known (Zulip's placeholder).
UNKNOWN_WEBHOOK = "(unknown)"


class InvalidJsonError(ApiError):
    """The body (or its ``payload`` field) is not the JSON the integration reads."""

    code = ErrorCode.INVALID_JSON

    def __init__(self) -> None:
        super().__init__("Malformed JSON")


class MissingHttpEventHeaderError(ApiError):
    """The header that names the event type is absent: usually a URL meant for another
    integration."""

    code = ErrorCode.MISSING_HTTP_EVENT_HEADER
    data_fields = ("header",)

    def __init__(self, header: str) -> None:
        super().__init__(f"Missing the HTTP event header '{header}'")
        self.header = header


class UnsupportedWebhookEventTypeError(ApiError):
    """An event the service sends that hubbub does not turn into a message. Zulip answers
    it with status 200 (the service should not retry it) but ``result: error``."""

    code = ErrorCode.UNSUPPORTED_WEBHOOK_EVENT_TYPE
    http_status = 200
    data_fields = ("webhook_name", "event_type")

    def __init__(self, event_type: str, webhook_name: str = UNKNOWN_WEBHOOK) -> None:
        super().__init__(
            f"The '{event_type}' event isn't currently supported by the {webhook_name} "
            "webhook; ignoring"
        )
        self.event_type = event_type
        self.webhook_name = webhook_name


class AnomalousWebhookPayloadError(ApiError):
    """A payload the integration cannot read at all: likely not from its service."""

    code = ErrorCode.ANOMALOUS_WEBHOOK_PAYLOAD
    data_fields = ("webhook_name",)

    def __init__(self, webhook_name: str = UNKNOWN_WEBHOOK) -> None:
        super().__init__(f"Unable to parse request: Did {webhook_name} generate this event?")
        self.webhook_name = webhook_name


class InvalidWebhookApiKeyError(ApiError):
    """The ``api_key`` parameter is no user's key (Zulip's ``InvalidAPIKeyError``)."""

    code = ErrorCode.INVALID_API_KEY
    http_status = 401

    def __init__(self, msg: str = "Invalid API key") -> None:
        super().__init__(msg)
