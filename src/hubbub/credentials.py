"""API keys and password hashes."""

from __future__ import annotations

import functools
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


# Zulip's PASSWORD_MIN_LENGTH and PASSWORD_MIN_GUESSES defaults (also sent by /register).
PASSWORD_MIN_LENGTH = 6
PASSWORD_MIN_GUESSES = 10000
ZXCVBN_MAX_LENGTH = 72


def generate_password() -> str:
    """A random password of 128 bits, far above any strength threshold."""
    return secrets.token_urlsafe(16)


def is_strong_password(password: str) -> bool:
    """Zulip's rule: long enough, and not guessable in fewer than PASSWORD_MIN_GUESSES
    tries by the zxcvbn estimator (which knows common passwords, words, repeats and
    keyboard patterns)."""
    if len(password) < PASSWORD_MIN_LENGTH:
        return False
    # Imported on first use: its word lists cost an idle server several megabytes.
    from zxcvbn import zxcvbn  # type: ignore[import-untyped]

    # zxcvbn refuses longer input, and its cost grows with the length; what follows the
    # first characters can only make a password harder to guess.
    return int(zxcvbn(password[:ZXCVBN_MAX_LENGTH])["guesses"]) >= PASSWORD_MIN_GUESSES


def hash_password(password: str) -> str:
    return _hasher.hash(password)


@functools.cache
def dummy_password_hash() -> str:
    """The hash of a password nobody knows, checked in place of a missing account's, so
    that a login for an unknown address costs what a wrong password costs."""
    return _hasher.hash(secrets.token_urlsafe(16))


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
