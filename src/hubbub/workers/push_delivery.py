"""Placeholder (issue 8): a background job of the scheduler."""

from __future__ import annotations

from hubbub.services import Services


async def run_once(services: Services) -> int:
    """Do the job's due work once; how many items it handled."""
    return 0
