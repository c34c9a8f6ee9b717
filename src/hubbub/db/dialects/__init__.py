"""Per-dialect differences, one module each, chosen by ``for_name``."""

from __future__ import annotations

from types import ModuleType


def for_name(name: str) -> ModuleType:
    if name == "sqlite":
        from hubbub.db.dialects import sqlite

        return sqlite
    if name == "postgresql":
        from hubbub.db.dialects import postgresql

        return postgresql
    raise ValueError(f"unsupported database dialect: {name}")
