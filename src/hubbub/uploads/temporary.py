"""Short-lived download links (``GET /user_uploads/{realm_id}/{filename}``, feature level 1).

A token names the file, the user it was made for and when it expires, and is signed with
that user's API key: no server-wide secret is needed, and regenerating the key revokes
every link made with the old one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass

# As long as Zulip's links live.
TEMPORARY_URL_SECONDS = 60
# Ids are database integers: anything larger is no id (and PostgreSQL would refuse it).
_MAX_ID = 2**31 - 1


@dataclass(frozen=True)
class TemporaryToken:
    user_id: int
    expires: int
    path_id: str
    signature: str

    def _payload(self) -> str:
        return f"{self.user_id}:{self.expires}:{self.path_id}"

    def is_valid(self, api_key: str, now: float) -> bool:
        """Signed with the user's key, unexpired, and no longer-lived than a link the
        server makes: the user knows the key, so a link they signed themselves with a
        far expiry must not be honoured."""
        expected = _sign(self._payload(), api_key)
        return (
            hmac.compare_digest(expected, self.signature)
            and now <= self.expires <= now + TEMPORARY_URL_SECONDS
        )


def _sign(payload: str, api_key: str) -> str:
    return hmac.new(api_key.encode(), payload.encode(), hashlib.sha256).hexdigest()


def make_temporary_token(path_id: str, user_id: int, api_key: str, now: float) -> str:
    payload = f"{user_id}:{int(now) + TEMPORARY_URL_SECONDS}:{path_id}"
    encoded = base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")
    return f"{encoded}.{_sign(payload, api_key)}"


def parse_temporary_token(token: str) -> TemporaryToken | None:
    """The token's claims (not yet verified), or None when it is malformed."""
    encoded, _, signature = token.partition(".")
    try:
        payload = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
        user_id, expires, path_id = payload.split(":", 2)
        claims = TemporaryToken(int(user_id), int(expires), path_id, signature)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if not (0 < claims.user_id <= _MAX_ID and 0 <= claims.expires <= 2**63 - 1):
        return None
    return claims
