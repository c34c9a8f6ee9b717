"""API keys and password hashes."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

API_KEY_LENGTH = 32
_API_KEY_ALPHABET = string.ascii_letters + string.digits
_hasher = PasswordHasher()


def generate_api_key() -> str:
    return "".join(secrets.choice(_API_KEY_ALPHABET) for _ in range(API_KEY_LENGTH))


def is_well_formed_api_key(key: str) -> bool:
    return len(key) == API_KEY_LENGTH and key.isascii() and key.isalnum()


def api_keys_match(given: str, stored: str) -> bool:
    """Constant-time comparison, so response timing reveals nothing about the key."""
    return hmac.compare_digest(given.encode(), stored.encode())


def generate_password() -> str:
    return secrets.token_urlsafe(12)


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def check_password(password: str, password_hash: str | None) -> bool:
    if not password_hash:
        return False
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def credential_digest(subdomain: str, authorization: str) -> str:
    """A fingerprint of the credentials one request presented on one subdomain.

    An event queue remembers the fingerprint of the credentials that last proved who polls
    it, so a re-armed long-poll presenting the same ones need not ask the database again
    (``api/endpoint.py``). API keys are 32 random characters, so the digest reveals nothing
    usable about the key.
    """
    return hashlib.sha256(f"{subdomain}\n{authorization}".encode()).hexdigest()
