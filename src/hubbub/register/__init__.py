"""The ``/register`` state: what a client fetches when it registers an event queue, and how
each event updates it (``state.fetch_initial_state`` and ``state.apply_event``).

The event bus that delivers those events lives in ``hubbub.events``.
"""
