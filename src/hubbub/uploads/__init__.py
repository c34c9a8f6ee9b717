"""Uploaded files: where their bytes live (``storage``) and how they are named (``paths``)."""

from __future__ import annotations

from hubbub.uploads.storage import (
    LocalStorage,
    UploadStorage,
    active_storage,
    configure_uploads,
    storage_for,
)

__all__ = [
    "LocalStorage",
    "UploadStorage",
    "active_storage",
    "configure_uploads",
    "storage_for",
]
