"""``python -m hubbub`` is the ``hubbub`` command."""

from hubbub.cli import main

main()
