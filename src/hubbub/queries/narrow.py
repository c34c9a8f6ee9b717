"""Narrows: parsing Zulip's narrow parameter into terms.

A narrow is a list of terms, each ``{"operator", "operand", "negated"}`` or the legacy
``[operator, operand]`` pair (Zulip accepts both). Turning terms into SQL lives in
:mod:`hubbub.queries.narrow_sql`; this module only validates the shape and the operators, so
``POST /register`` and ``GET /messages`` share one parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hubbub.errors import ApiError, BadNarrowError, JsonableError
from hubbub.topic_names import interpret_topic_name

# Operators whose operand may be an id (feature level 177 for dm-including/sender ids,
# 194 for ``id`` given as an integer, 250 for ``channel``, 271 for ``with``); ``dm`` and
# ``pm-with`` take a list of user ids. Checked by the operator as the client spelled it:
# Zulip 10.2 takes only strings for the underscore spellings.
ID_OPERATORS = frozenset(
    {"stream", "channel", "id", "sender", "group-pm-with", "dm-including", "with"}
)
IDS_OPERATORS = frozenset({"dm", "pm-with"})

OPERATORS = frozenset(
    {
        "stream",
        "streams",
        "topic",
        "sender",
        "dm",
        "dm-including",
        "group-pm-with",
        "is",
        "has",
        "in",
        "id",
        "near",
        "search",
        "with",
    }
)
# Other spellings of the same operators: ``channel``/``channels`` (feature level 250),
# the legacy direct-message names, and the underscore forms Zulip 10.2 still dispatches.
OPERATOR_ALIASES = {
    "subject": "topic",
    "channel": "stream",
    "channels": "streams",
    "pm-with": "dm",
    "pm_with": "dm",
    "group_pm_with": "group-pm-with",
}
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

# Message ids are 32-bit (Zulip's ``MAX_POSSIBLE_MESSAGE_ID``).
MAX_MESSAGE_ID = 2**31 - 1


@dataclass(frozen=True)
class NarrowTerm:
    operator: str
    operand: str | int | tuple[int, ...]
    negated: bool = False
    # The operator as the client wrote it (``channel``, ``pm_with``), where Zulip's rules
    # or wording depend on the spelling; ``operator`` is the canonical name.
    spelled: str = field(default="", compare=False)

    @property
    def name(self) -> str:
        return self.spelled or self.operator


class InvalidOperatorCombinationError(BadNarrowError):
    """Terms that cannot go together (Zulip's ``InvalidOperatorCombinationError``, code
    ``BAD_NARROW`` with a ``desc`` like every narrow error)."""

    def __init__(self, desc: str) -> None:
        ApiError.__init__(self, f"Invalid narrow operator combination: {desc}")
        self.desc = desc


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
# so that one request cannot make a query of thousands of conditions.
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
            spelled, operand = item
            # The legacy form spells negation as a "-" prefix (as the web app's URLs do).
            if spelled.startswith("-"):
                spelled, negated = spelled[1:], True
        elif isinstance(item, dict):
            spelled = item.get("operator")
            if not isinstance(spelled, str):
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
        operator = OPERATOR_ALIASES.get(spelled, spelled)
        if operator not in OPERATORS:
            raise BadNarrowError(f"unknown operator {spelled}")
        checked = _check_operand(index, spelled, operand)
        _check_keyword_operand(operator, checked)
        terms.append(NarrowTerm(operator, checked, negated, spelled=spelled))
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
        # "channels operand" for both spellings since the rename (feature level 255).
        label = "channels operand" if operator == "streams" else f"'{operator}' operand"
        raise BadNarrowError(f"unknown {label} {operand}")


def parse_id(operand: str | int | tuple[int, ...]) -> int:
    """A message id operand: an integer or a string of digits (feature level 194), at
    most the largest message id (Zulip 10.2 refuses larger ones rather than finding
    nothing)."""
    if isinstance(operand, int) and 0 <= operand <= MAX_MESSAGE_ID:
        return operand
    # ASCII digits only: ``int`` refuses other characters ``isdigit`` accepts ("²").
    digits = isinstance(operand, str) and operand.isascii() and operand.isdigit()
    if digits and int(str(operand)) <= MAX_MESSAGE_ID:
        return int(str(operand))
    raise BadNarrowError("Invalid message ID")


def with_empty_topic_named(terms: list[NarrowTerm]) -> list[NarrowTerm]:
    """The terms with the first ``topic`` term's display name of the empty topic read as
    the empty topic (feature level 334; Zulip renames only the first such term)."""
    for index, term in enumerate(terms):
        if term.operator == "topic":
            if isinstance(term.operand, str) and interpret_topic_name(term.operand) == "":
                renamed = NarrowTerm("topic", "", term.negated, spelled=term.spelled)
                return [*terms[:index], renamed, *terms[index + 1 :]]
            break
    return terms


# Terms that make a narrow one of stream messages or one of direct messages, unless
# negated; ``-is:dm`` makes it one of stream messages.
_STREAM_KINDS = frozenset({"stream", "streams", "topic"})
_DIRECT_KINDS = frozenset({"dm", "dm-including", "group-pm-with"})


class ConversationKinds:
    """Zulip 10.2 refuses a narrow that asks for stream messages and direct messages at
    once; fed each term in the order the narrow's conditions are built, it raises at the
    term that makes the narrow both (before that term's own look-ups, as Zulip)."""

    def __init__(self) -> None:
        self.stream = False
        self.direct = False

    def note(self, term: NarrowTerm) -> None:
        is_dm = term.operator == "is" and term.operand in ("dm", "private")
        if is_dm and term.negated:
            self.stream = True
        elif term.negated:
            return
        elif term.operator in _STREAM_KINDS:
            self.stream = True
        elif term.operator in _DIRECT_KINDS or is_dm:
            self.direct = True
        if self.stream and self.direct:
            raise BadNarrowError("No message can be both a channel message and direct message")


# What a narrowed event queue can filter on (Zulip's ``build_narrow_predicate``).
QUEUE_OPERATORS = frozenset({"stream", "topic", "sender", "is"})


def check_narrow(narrow: list[Any]) -> list[list[str]]:
    """The narrow of an event queue (``POST /register``), stored in the legacy form:
    ``[operator, operand]`` with a "-" prefix for negation."""
    stored = []
    for term in with_empty_topic_named(parse_narrow(narrow)):
        if term.operator not in QUEUE_OPERATORS:
            raise JsonableError(f"Operator {term.name} not supported.")
        stored.append([("-" if term.negated else "") + term.operator, str(term.operand)])
    return stored
