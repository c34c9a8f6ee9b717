"""When an owner hears of a misconfigured webhook.

A service rarely shows anyone hubbub's answer, so, as Zulip does, the owner of a bot
whose webhook requests lack the event header or carry no JSON gets a direct message
about it, at most once an hour per bot and kind of problem (a misconfigured service
retries often). The times are kept per process: with several workers an owner may hear
once from each.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from hubbub.models import User

NOTICE_INTERVAL_SECONDS = 3600.0

_last_sent: WeakKeyDictionary[object, dict[tuple[int, str], float]] = WeakKeyDictionary()


def should_notify(scope: object, bot: User, kind: str, now: float) -> bool:
    """Whether the owner of ``bot`` is due a notice of ``kind``; records it if so.
    ``scope``: the server's application, so separate servers (and tests) keep apart."""
    if bot.bot_owner_id is None:
        return False
    sent = _last_sent.setdefault(scope, {})
    last = sent.get((bot.id, kind))
    if last is not None and now - last < NOTICE_INTERVAL_SECONDS:
        return False
    sent[(bot.id, kind)] = now
    return True


def missing_header_notice(bot: User, path: str, header: str, service: str) -> str:
    return (
        f"Your bot @_**{bot.full_name}|{bot.id}** received a request at `{path}` without "
        f"the `{header}` header, which {service} uses to say what happened, so nothing was "
        "posted. The URL may belong to another integration, or the service may be a "
        "version that does not send this header."
    )


def invalid_json_notice(bot: User, service: str) -> str:
    return (
        f"Your bot @_**{bot.full_name}|{bot.id}** received a request for the {service} "
        "integration whose body is not JSON, so nothing was posted. Check that the "
        "service's webhook is set to send JSON (content type `application/json`)."
    )
