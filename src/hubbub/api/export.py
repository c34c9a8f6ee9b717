"""Data export: ``GET /export/realm/consents`` (feature level 295).

hubbub makes no organization exports yet (``POST /export/realm`` and its listing are
absent); the consents its members give through ``allow_private_data_export`` are already
kept, so administrators can see them.
"""

from __future__ import annotations

from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.errors import OrganizationAdminRequiredError
from hubbub.queries.export_consents import get_export_consents


@endpoint("GET", "/export/realm/consents")
async def get_realm_export_consents(req: ApiRequest) -> Payload:
    """Get data export consent state"""
    if not req.me.is_realm_admin:
        raise OrganizationAdminRequiredError()
    async with req.services.db.read() as conn:
        return {"export_consents": await get_export_consents(conn, req.me.realm_id)}
