"""``<time:...>`` -> ``<time datetime="...Z">``, the sender's text shown until clients localise."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from html import escape

# Common abbreviations people type after a time; dateutil knows only UTC/GMT by itself.
_HOURS: dict[str, float] = {
    "UTC": 0,
    "GMT": 0,
    "Z": 0,
    "WET": 0,
    "BST": 1,
    "CET": 1,
    "WEST": 1,
    "CEST": 2,
    "EET": 2,
    "EEST": 3,
    "MSK": 3,
    "IST": 5.5,
    "PKT": 5,
    "ICT": 7,
    "WIB": 7,
    "CST": -6,
    "CDT": -5,
    "HKT": 8,
    "SGT": 8,
    "AWST": 8,
    "JST": 9,
    "KST": 9,
    "ACST": 9.5,
    "AEST": 10,
    "AEDT": 11,
    "NZST": 12,
    "NZDT": 13,
    "HST": -10,
    "AKST": -9,
    "AKDT": -8,
    "PST": -8,
    "PDT": -7,
    "MST": -7,
    "MDT": -6,
    "EST": -5,
    "EDT": -4,
    "AST": -4,
    "ADT": -3,
    "NST": -3.5,
    "BRT": -3,
}
TZINFOS = {name: timezone(timedelta(hours=hours)) for name, hours in _HOURS.items()}


def parse_timestamp(text: str) -> datetime | None:
    # dateutil is imported by the first <time:...> that is not a number, so that an idle
    # server's memory budget does not carry it.
    from dateutil import parser as date_parser  # type: ignore[import-untyped,unused-ignore]

    try:
        if text.strip().lstrip("-").isdigit():
            return datetime.fromtimestamp(int(text), tz=UTC)
        value: datetime = date_parser.parse(text, tzinfos=TZINFOS)
    except (ValueError, OverflowError, OSError):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def render_timestamp(text: str) -> str:
    value = parse_timestamp(text)
    if value is None:
        return (
            f'<span class="timestamp-error">Invalid time format: {escape(text, quote=False)}</span>'
        )
    stamp = value.strftime("%Y-%m-%dT%H:%M:%SZ")
    return f'<time datetime="{stamp}">{escape(text, quote=False)}</time>'
