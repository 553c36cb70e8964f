"""Rescoring: today's cases and scorers applied to recorded sessions; nothing runs."""
