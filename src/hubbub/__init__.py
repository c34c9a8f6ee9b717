"""hubbub: a light, self-hosted team-chat server that speaks the Zulip REST API."""

__version__ = "0.1.0"

# What clients are told: the Zulip release and API level this server implements.
ZULIP_VERSION = "10.2"
ZULIP_MERGE_BASE = "10.2"
ZULIP_FEATURE_LEVEL = 372
