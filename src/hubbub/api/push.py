"""Placeholder: filled in by issue 8."""
