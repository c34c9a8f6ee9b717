"""The serving process: ``hubbub serve`` replaces itself with ``python -m hubbub.run``.

The command has parsed its flags, applied migrations and created the first organization
by then; what it loaded for that (the command-line toolkit, alembic on a first start) is
not needed to serve, and a fresh interpreter leaves it out of the idle server's memory,
more of it on a first start that ran the migrations. The settings
travel in ``HUBBUB_*`` variables (``server.settings_environment``).
"""

from __future__ import annotations

import sys

from hubbub.logs import configure_logging
from hubbub.server import run_server
from hubbub.settings import SettingsError, load_settings


def main() -> None:
    try:
        configure_logging()
        settings = load_settings()
    except SettingsError as exc:
        sys.exit(f"hubbub: error: {exc}")
    run_server(settings)


if __name__ == "__main__":
    main()
