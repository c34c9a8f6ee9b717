"""Placeholder: filled in by the message lifecycle work (issue 7)."""
