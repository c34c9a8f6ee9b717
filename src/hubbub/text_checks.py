"""Which characters a name or a topic may hold: one check, shared by every kind of name.

Zulip refuses control characters (Unicode category Cc: NUL, escape sequences, line
breaks), lone surrogates (Cs) and Unicode's 66 noncharacters in topics, stream names,
user group names and full names (its ``check_string_is_printable``). Such characters
would otherwise reach every client's screen and the server's log as they are: an escape
sequence repaints a terminal, a NUL cannot be stored by PostgreSQL at all.
"""

from __future__ import annotations

import unicodedata

from hubbub.errors import JsonableError

# U+FDD0..U+FDEF, and the last two code points of each of the 17 planes.
NONCHARACTERS = frozenset(
    [chr(code) for code in range(0xFDD0, 0xFDF0)]
    + [chr(plane + low) for plane in range(0, 0x110000, 0x10000) for low in (0xFFFE, 0xFFFF)]
)
_UNPRINTABLE_CATEGORIES = frozenset({"Cc", "Cs"})


def is_printable(char: str) -> bool:
    return unicodedata.category(char) not in _UNPRINTABLE_CATEGORIES and char not in NONCHARACTERS


def unprintable_position(text: str) -> int | None:
    """The 1-based position of the first character of ``text`` a name may not hold, or
    None when there is none."""
    if text.isprintable():
        # Fast path: Python's printable characters are a subset of the allowed ones
        # (everything it refuses besides Cc and Cs is a separator or a format or
        # unassigned character, which the slow loop then looks at).
        return None
    for index, char in enumerate(text):
        if not is_printable(char):
            return index + 1
    return None


def check_printable(text: str, what: str) -> None:
    """Refuse ``text`` with Zulip's "Invalid character in <what>, at position N!" when it
    holds a character no name may hold (``what``: "topic", "stream name",
    "user group name")."""
    position = unprintable_position(text)
    if position is not None:
        raise JsonableError(f"Invalid character in {what}, at position {position}!")
