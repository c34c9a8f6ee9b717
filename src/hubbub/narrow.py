"""Narrows: parsing Zulip's narrow parameter into terms.

A narrow is a list of terms, each ``{"operator", "operand", "negated"}`` or the legacy
``[operator, operand]`` pair (Zulip accepts both). Turning terms into SQL lives in
:mod:`hubbub.narrow_sql`; this module only validates the shape and the operators, so
``POST /register`` and ``GET /messages`` share one parser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hubbub.errors import BadNarrowError, JsonableError

# Operators whose operand may be an id (feature level 177 for dm-including/sender ids,
# 194 for ``id`` given as an integer); ``dm``/``pm-with`` take a list of user ids.
ID_OPERATORS = frozenset({"stream", "id", "sender", "group-pm-with", "dm-including"})
IDS_OPERATORS = frozenset({"dm", "pm-with"})

OPERATORS = frozenset(
    {
        "stream",
        "streams",
        "topic",
        "sender",
        "dm",
        "pm-with",
        "dm-including",
        "group-pm-with",
        "is",
        "has",
        "in",
        "id",
        "near",
        "search",
    }
)
# Legacy spellings of the same operators.
OPERATOR_ALIASES = {"subject": "topic", "pm-with": "dm"}
IS_OPERANDS = frozenset(
    {
        "dm",
        "private",
        "starred",
        "unread",
        "mentioned",
        "alerted",
        "resolved",
        "followed",
        "muted",
    }
)
HAS_OPERANDS = frozenset({"link", "image", "attachment", "reaction"})
IN_OPERANDS = frozenset({"home", "all"})
STREAMS_OPERANDS = frozenset({"public", "web-public"})

# Zulip marks a resolved topic with this prefix.
RESOLVED_TOPIC_PREFIX = "✔ "


@dataclass(frozen=True)
class NarrowTerm:
    operator: str
    operand: str | int | tuple[int, ...]
    negated: bool = False


def _check_operand(index: int, operator: str, operand: Any) -> str | int | tuple[int, ...]:
    where = f'narrow[{index}]["operand"]'
    if operator in IDS_OPERATORS:
        if isinstance(operand, list):
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in operand):
                raise JsonableError(f"{where} is not an integer list")
            return tuple(operand)
        if isinstance(operand, int) and not isinstance(operand, bool):
            return operand
        if isinstance(operand, str):
            return operand
        raise JsonableError(f"{where} is not a string or integer list")
    if operator in ID_OPERATORS:
        if isinstance(operand, int) and not isinstance(operand, bool):
            return operand
        if isinstance(operand, str):
            return operand
        raise JsonableError(f"{where} is not a string or an integer")
    if not isinstance(operand, str):
        raise JsonableError(f"{where} is not a string")
    if operator == "search" and not operand.strip():
        raise JsonableError(f"{where} cannot be blank.")
    return operand


# Each term adds a condition (a search term, a join) to one SQL query; Zulip sets no bound,
# and no client builds narrows of more than a handful of terms. hubbub refuses longer ones
# so that one request cannot make a query of thousands of conditions (issue 10).
MAX_NARROW_TERMS = 32


def parse_narrow(raw: list[Any] | None) -> list[NarrowTerm]:
    """Validated terms; raises Zulip's errors for malformed terms and unknown operators
    or operands (operands naming streams or users are checked when building SQL)."""
    if raw is not None and len(raw) > MAX_NARROW_TERMS:
        raise JsonableError(f"Too many narrow terms (maximum {MAX_NARROW_TERMS}).")
    terms: list[NarrowTerm] = []
    for index, item in enumerate(raw or []):
        negated = False
        if isinstance(item, list):
            if len(item) != 2 or not all(isinstance(x, str) for x in item):
                raise JsonableError("Invalid narrow")
            operator, operand = item
            # The legacy form spells negation as a "-" prefix (as the web app's URLs do).
            if operator.startswith("-"):
                operator, negated = operator[1:], True
        elif isinstance(item, dict):
            operator = item.get("operator")
            if not isinstance(operator, str):
                raise JsonableError(f'narrow[{index}]["operator"] is not a string')
            if "operand" not in item:
                raise JsonableError(f'narrow[{index}]["operand"] is missing')
            negated_value = item.get("negated", False)
            if not isinstance(negated_value, bool):
                raise JsonableError(f'narrow[{index}]["negated"] is not a boolean')
            negated = negated_value
            operand = item["operand"]
        else:
            raise JsonableError("Invalid narrow")
        operator = OPERATOR_ALIASES.get(operator, operator)
        if operator not in OPERATORS:
            raise BadNarrowError(f"unknown operator {operator}")
        checked = _check_operand(index, operator, operand)
        _check_keyword_operand(operator, checked)
        terms.append(NarrowTerm(operator, checked, negated))
    return terms


def _check_keyword_operand(operator: str, operand: str | int | tuple[int, ...]) -> None:
    choices = {
        "is": IS_OPERANDS,
        "has": HAS_OPERANDS,
        "in": IN_OPERANDS,
        "streams": STREAMS_OPERANDS,
    }.get(operator)
    if choices is None:
        return
    if operand not in choices:
        label = "streams operand" if operator == "streams" else f"'{operator}' operand"
        raise BadNarrowError(f"unknown {label} {operand}")


def parse_id(operand: str | int | tuple[int, ...]) -> int:
    """A message id operand: an integer or a string of digits (feature level 194)."""
    if isinstance(operand, int):
        return operand
    if isinstance(operand, str) and operand.isdigit():
        return int(operand)
    raise BadNarrowError("Invalid message ID")


# What a narrowed event queue can filter on (Zulip's ``build_narrow_predicate``).
QUEUE_OPERATORS = frozenset({"stream", "topic", "sender", "is"})


def check_narrow(narrow: list[Any]) -> list[list[str]]:
    """The narrow of an event queue (``POST /register``), stored in the legacy form:
    ``[operator, operand]`` with a "-" prefix for negation."""
    stored = []
    for term in parse_narrow(narrow):
        if term.operator not in QUEUE_OPERATORS:
            raise JsonableError(f"Operator {term.operator} not supported.")
        stored.append([("-" if term.negated else "") + term.operator, str(term.operand)])
    return stored


def _queue_term_matches(term: NarrowTerm, message: dict[str, Any], flags: list[str]) -> bool:
    operand = str(term.operand).lower()
    is_stream = message.get("type") == "stream"
    if term.operator == "stream":
        return is_stream and operand in (
            str(message.get("display_recipient", "")).lower(),
            str(message.get("stream_id")),
        )
    if term.operator == "topic":
        return is_stream and str(message.get("subject", "")).lower() == operand
    if term.operator == "sender":
        return operand in (str(message.get("sender_email", "")).lower(), str(message["sender_id"]))
    checks = {
        "dm": not is_stream,
        "private": not is_stream,
        "starred": "starred" in flags,
        "unread": "read" not in flags,
        "mentioned": bool(
            {"mentioned", "stream_wildcard_mentioned", "topic_wildcard_mentioned"} & set(flags)
        ),
        "alerted": "has_alert_word" in flags,
        "resolved": str(message.get("subject", "")).startswith(RESOLVED_TOPIC_PREFIX),
    }
    # Other "is" operands (muted, followed) need the database; like Zulip, they do not
    # filter a queue's events.
    return checks.get(operand, True)


def queue_narrow_matches(
    narrow: list[list[str]], message: dict[str, Any], flags: list[str]
) -> bool:
    """Whether a ``message`` event belongs in a queue registered with ``narrow``."""
    return all(
        _queue_term_matches(term, message, flags) != term.negated for term in parse_narrow(narrow)
    )
